// OnnxImpl.h - internals shared by the ONNX importer's files (not a public interface).
#pragma once

#include "graph/Graph.h"
#include "support/Npy.h"

#include <onnx/onnx_pb.h>

#include <map>
#include <optional>
#include <string>

namespace npuc::frontend::detail {

using graph::OpKind;

/// A sequence value, resolved at import (OnnxSequence.cpp): its length and elements are known at
/// compile time, each element a tensor value of the graph, all of one element type.
struct Sequence {
  std::vector<graph::ValueId> elems;
  graph::DType dtype = graph::DType::F32;
};

/// An optional value, resolved at import: absent, or holding a tensor or a sequence.
struct OptionalValue {
  bool present = false;
  graph::ValueId tensor = graph::kNoValue; // when it holds a tensor
  std::optional<Sequence> seq;             // when it holds a sequence
};

/// Import state: the graph under construction and the ONNX name -> value map.
struct Importer {
  graph::Graph g;
  int64_t opset = 0;
  int64_t sourceOpset = 0; // the model's own, before ONNX's version converter (OnnxUpgrade.cpp)
  std::map<std::string, graph::ValueId> names;
  // The ONNX names of sequence and optional values (never tensors of the graph).
  std::map<std::string, Sequence> sequences;
  std::map<std::string, OptionalValue> optionals;

  graph::ValueId lookup(const std::string &name, const std::string &where) const;
};

/// The DType of ONNX element type `elemType`; an unsupported one fails naming `what`.
graph::DType tensorDType(int32_t elemType, const std::string &what);

/// Converts an ONNX tensor to a graph constant of its own dtype (float types held in fp32,
/// integer and bool types exactly). Fails naming the tensor for the types npuc lacks.
graph::ValueId importTensor(Importer &im, const onnx::TensorProto &t, const std::string &name);

/// Resolves ONNX node `n` when it is a sequence or optional operator (or an Identity of a
/// sequence or optional): its result is recorded in `sequences`/`optionals`, or is a tensor
/// value (SequenceAt, ConcatFromSequence, SequenceLength, ...). Returns false for other nodes.
bool importSequenceNode(Importer &im, const onnx::NodeProto &n, int index);
/// Fails naming the first graph input or output whose declared type is not a tensor (a sequence
/// or optional): npuc's command line feeds and writes tensors only.
void checkTensorInterface(const onnx::GraphProto &g);

/// Adds ONNX node `n` (index `index` in the model) to the graph with normalised attributes,
/// infers its output shapes and folds it when its inputs are constant.
void importNode(Importer &im, const onnx::NodeProto &n, int index);

/// Copies the attributes of ONNX node `p` into `n.attrs` (ints, floats, strings and their lists).
void readAttributes(graph::Node &n, const onnx::NodeProto &p);
/// Adds node `kind` reading `ins` into value `out` (a fresh one when kNoValue), infers its shape
/// and folds it when its inputs are constant; returns the output value.
graph::ValueId emitNode(Importer &im, OpKind kind, const std::string &name,
                        std::vector<graph::ValueId> ins,
                        std::map<std::string, graph::AttrValue> attrs,
                        graph::ValueId out = graph::kNoValue);

/// Whether `domain` is ai.onnx.preview.training, whose optimizers importTrainingNode imports.
bool isTrainingDomain(const std::string &domain);
/// Adds an Adagrad, Adam or Momentum node of ai.onnx.preview.training as elementwise nodes
/// (OnnxTraining.cpp); any other operator of that domain is an error naming the node.
void importTrainingNode(Importer &im, const onnx::NodeProto &p, int index);

// Helpers shared by the per-operator files (OnnxNode.cpp, OnnxExtAttrs.cpp). Errors name the node.
std::string where(const graph::Node &n);
/// Fails unless `p` has the input and output counts ONNX's schema allows at the model's opset.
void checkArity(const Importer &im, const graph::Node &n, const onnx::NodeProto &p);
/// Why an operand must be a constant: it sets an output shape (npuc compiles static shapes), or
/// it is another parameter read at compile time (CumSum's axis, Trilu's k).
enum class ConstRole { SetsShape, Parameter };
/// Input i of `n`, which must be a constant; a run-time one is an error that says why, where it
/// comes from and which graph inputs to pin with --bind (OnnxOperands.cpp).
const graph::Value &constInput(Importer &im, const graph::Node &n, size_t i, const char *what,
                               ConstRole role = ConstRole::SetsShape);
std::vector<int64_t> constInts(Importer &im, const graph::Node &n, size_t i, const char *what,
                               ConstRole role = ConstRole::SetsShape);
double constScalar(Importer &im, const graph::Node &n, size_t i, const char *what,
                   ConstRole role = ConstRole::SetsShape);
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
/// Resolves auto_pad and fills the defaults of a window op's attributes (Conv, ConvInteger and
/// the pools; OnnxNode.cpp): one kernel_shape/strides/dilations entry per spatial axis, pads as
/// all begins then all ends.
void normaliseWindow(Importer &im, graph::Node &n);
/// Imports the quantisation operators (OnnxQuant.cpp): ConvInteger and MatMulInteger as nodes,
/// QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, QLinearConv and QLinearMatMul as
/// existing operators computing ONNX's formulas. Returns false for every other operator.
bool importQuant(Importer &im, const graph::Node &n, const onnx::NodeProto &p,
                 const std::vector<graph::ValueId> &declared);
/// Normalises an RNN, GRU or LSTM node's attributes (OnnxRnn.cpp; the form graph/Rnn.h reads).
void rnnAttrs(Importer &im, graph::Node &n, const onnx::NodeProto &p);

/// The graph inputs run-time value `v` is computed from (what --bind would pin), in model order.
std::vector<std::string> runtimeSources(const graph::Graph &g, graph::ValueId v);
/// If, Loop and Scan, resolved into the flat graph at import (OnnxControl.cpp): returns false for
/// every other operator, true when `p` was imported (its outputs are in the name map).
bool importControlFlow(Importer &im, const onnx::NodeProto &p, int index);
/// Refuses, before the version converter drops it, an opset-8 Scan's sequence_lens input.
void checkLegacyScans(const onnx::GraphProto &gp);

/// Checks the operands of `n` that only the shape rules read (Range's start/limit/delta,
/// ConstantOfShape's shape): constants, or constInput's error.
void shapeOperands(Importer &im, const graph::Node &n);
/// Clip's bounds (opset >= 11: inputs; before: attributes). Constant bounds become the min/max
/// attributes; a run-time bound makes the node (or a node added before it) a Max (min) or Min
/// (max) with the bound as a broadcast scalar operand.
void clipOperands(Importer &im, graph::Node &n);
/// Pad's constant_value (input 2): a constant one becomes the `value` attribute (kNoValue is
/// returned), a run-time one is returned to stay an input of the node.
graph::ValueId padValue(Importer &im, graph::Node &n);

/// Makes each input `bound` names a constant initializer holding its data (OnnxBind.cpp): the
/// dtype must be the input's element type and the shape its declared one (dynamic dimensions take
/// any extent). Errors name the --bind argument: an unknown input, an initializer, an input also
/// pinned with --input-shape, a dtype or shape mismatch.
void bindInputs(onnx::ModelProto &m, const std::map<std::string, NpyArray> &bound,
                const std::map<std::string, Shape> &pinned);

/// The lowest opset the per-operator rules read; older models are converted (OnnxUpgrade.cpp).
constexpr int64_t kFirstImportedOpset = 9;
/// The opset ONNX's version converter brings older models to: 13, where its Softmax adapter
/// rewrites the flattening Softmax of older opsets (which the rules support only when the
/// flattened axes are trailing units); 9-12 gave the same conformance results otherwise.
constexpr int64_t kUpgradeTarget = 13;
/// Converts `m` (of default-domain opset `opset`) with ONNX's version converter when `opset` is
/// below kFirstImportedOpset; returns the model's opset afterwards. A node the converter cannot
/// adapt is an error naming the conversion step and the operators that change there.
int64_t upgradeOpset(onnx::ModelProto &m, int64_t opset);

} // namespace npuc::frontend::detail
