// OnnxImpl.h - internals shared by the ONNX importer's files (not a public interface).
#pragma once

#include "graph/Graph.h"

#include <onnx/onnx_pb.h>

#include <map>
#include <string>

namespace npuc::frontend::detail {

/// Import state: the graph under construction and the ONNX name -> value map.
struct Importer {
  graph::Graph g;
  int64_t opset = 0;
  std::map<std::string, graph::ValueId> names;

  graph::ValueId lookup(const std::string &name, const std::string &where) const;
};

/// Converts an ONNX tensor to a graph constant (float32, or int64 for integer tensors; int32,
/// int8/16, uint8, bool and float64 are converted). Fails naming the tensor otherwise.
graph::ValueId importTensor(Importer &im, const onnx::TensorProto &t, const std::string &name);

/// Adds ONNX node `n` (index `index` in the model) to the graph with normalised attributes,
/// infers its output shapes and folds it when its inputs are constant.
void importNode(Importer &im, const onnx::NodeProto &n, int index);

} // namespace npuc::frontend::detail
