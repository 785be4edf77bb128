// OnnxImpl.h - internals shared by the ONNX importer's files (not a public interface).
#pragma once

#include "graph/Graph.h"

#include <onnx/onnx_pb.h>

#include <map>
#include <optional>
#include <string>

namespace npuc::frontend::detail {

using graph::OpKind;

/// Import state: the graph under construction and the ONNX name -> value map.
struct Importer {
  graph::Graph g;
  int64_t opset = 0;
  std::map<std::string, graph::ValueId> names;

  graph::ValueId lookup(const std::string &name, const std::string &where) const;
};

/// The DType of ONNX element type `elemType`; an unsupported one fails naming `what`.
graph::DType tensorDType(int32_t elemType, const std::string &what);

/// Converts an ONNX tensor to a graph constant of its own dtype (float types held in fp32,
/// integer and bool types exactly). Fails naming the tensor for the types npuc lacks.
graph::ValueId importTensor(Importer &im, const onnx::TensorProto &t, const std::string &name);

/// Adds ONNX node `n` (index `index` in the model) to the graph with normalised attributes,
/// infers its output shapes and folds it when its inputs are constant.
void importNode(Importer &im, const onnx::NodeProto &n, int index);

// Helpers shared by the per-operator files (OnnxNode.cpp, OnnxExtAttrs.cpp). Errors name the node.
std::string where(const graph::Node &n);
const graph::Value &constInput(Importer &im, const graph::Node &n, size_t i, const char *what);
std::vector<int64_t> constInts(Importer &im, const graph::Node &n, size_t i, const char *what);
double constScalar(Importer &im, const graph::Node &n, size_t i, const char *what);
int64_t normaliseAxis(const graph::Node &n, int64_t axis, size_t rank);
/// Whether optional input i is given; the shape of input i.
bool present(const graph::Node &n, size_t i);
const Shape &shapeOf(Importer &im, const graph::Node &n, size_t i);

/// Normalises an extended op's attributes (OnnxExtAttrs.cpp). Returns nullopt for the ops of the
/// basic family (graph/Ops.def), which OnnxNode.cpp handles, false when the node is removed (its
/// output aliases its input or was set to a constant), true when it stays.
std::optional<bool> normaliseExt(Importer &im, graph::Node &n, const onnx::NodeProto &p);

/// Normalises the attributes of the data, math and signal ops of opset 17 added at the end of
/// graph/Ops.def (OnnxDataOps.cpp); nullopt for every other operator, else as normaliseExt.
std::optional<bool> normaliseDataOps(Importer &im, graph::Node &n, const onnx::NodeProto &p);
/// Normalises an RNN, GRU or LSTM node's attributes (OnnxRnn.cpp; the form graph/Rnn.h reads).
void rnnAttrs(Importer &im, graph::Node &n, const onnx::NodeProto &p);

} // namespace npuc::frontend::detail
