// ShapeInternal.h - the shape rules of the operators (the Shape column of graph/Ops.def) and the
// diagnostics helpers they share; for the shape-inference files (ShapeInference.cpp, ShapeNN.cpp,
// ShapeMath.cpp, ShapeData.cpp) only.
//
// A rule reads the node's inputs and normalised attributes (frontend/Onnx.h) and returns the type
// of each output, in output order; inferNodeShape stores them. A rule may canonicalise an
// attribute it reads (Transpose's default perm), which is why it gets the node mutable.
#pragma once

#include "graph/Graph.h"
#include "support/Error.h"

#include <fmt/format.h>
#include <string>
#include <vector>

namespace npuc::graph::shape {

/// The static type of one node output.
struct OutType {
  Shape shape;
  DType dtype;
};
using OutTypes = std::vector<OutType>;

/// "node 'conv1' (Conv)", the prefix of every shape error.
inline std::string where(const Node &n) {
  return fmt::format("node '{}' ({})", n.name, n.kind);
}

/// The shape of input i; an omitted required input is a user error naming the node.
inline const Shape &inShape(const Graph &g, const Node &n, size_t i) {
  if (i >= n.inputs.size() || n.inputs[i] == kNoValue)
    fail("{}: missing input {}", where(n), i);
  return g.value(n.inputs[i]).shape;
}

/// The dtype of input i (which must be present).
inline DType inType(const Graph &g, const Node &n, size_t i) {
  return g.value(n.inputs.at(i)).dtype;
}

/// The dtype of the core operators' result: input 0's (shape-manipulating ops keep their data's
/// dtype, as int64 shape tensors flow through Unsqueeze/Concat/Gather before import-time
/// folding), float when input 0 is omitted.
inline DType firstInputType(const Graph &g, const Node &n) {
  return !n.inputs.empty() && n.inputs[0] != kNoValue ? g.value(n.inputs[0]).dtype : DType::F32;
}

/// The dtype of an operator ONNX defines on floats only: input 0's float type (f32, f64, f16), f32
/// for an integer input (the frontend's legacy integer values computed in fp32).
inline DType floatResultType(const Graph &g, const Node &n) {
  DType t = firstInputType(g, n);
  return isFloatType(t) ? t : DType::F32;
}

/// Fails naming the node unless inputs i and j have one dtype (Concat's parts, Where's branches).
inline void requireSameType(const Graph &g, const Node &n, size_t i, size_t j) {
  if (inType(g, n, i) != inType(g, n, j))
    fail("{}: input {} is {} but input {} is {}; they must have one type", where(n), j,
         dtypeName(inType(g, n, j)), i, dtypeName(inType(g, n, i)));
}

/// Fails naming the node unless input i has the given rank.
void requireRank(const Graph &g, const Node &n, size_t i, size_t rank);
/// A possibly negative axis in [0, rank); out of range is a user error naming the node.
int64_t normAxis(const Node &n, int64_t axis, size_t rank);
/// The already normalised (non-negative) axis attribute `key` (default 0), checked against rank.
int64_t axisAttr(const Node &n, const char *key, size_t rank);
/// The dtype an ONNX TensorProto data type code `to` names; unsupported codes fail naming the node.
DType castTarget(const Node &n, int64_t to);

// The rules, one per distinct shape contract; the Shape column of Ops.def names them without the
// `infer` prefix.
// ShapeNN.cpp: convolutions, pooling, matrix products, normalisations.
OutTypes inferConv(const Graph &g, Node &n);
OutTypes inferConvTranspose(const Graph &g, Node &n);
OutTypes inferPool(const Graph &g, Node &n);
OutTypes inferGlobalAveragePool(const Graph &g, Node &n);
OutTypes inferGlobalPool(const Graph &g, Node &n);
OutTypes inferGemm(const Graph &g, Node &n);
OutTypes inferMatMul(const Graph &g, Node &n);
OutTypes inferBatchNorm(const Graph &g, Node &n);
OutTypes inferLayerNorm(const Graph &g, Node &n);
OutTypes inferInstanceNorm(const Graph &g, Node &n);
OutTypes inferLRN(const Graph &g, Node &n);
// ShapeMath.cpp: elementwise and broadcasting maps, reductions, ops along an axis.
OutTypes inferSameAsInput(const Graph &g, Node &n);
OutTypes inferDropout(const Graph &g, Node &n);
OutTypes inferSoftmax(const Graph &g, Node &n);
OutTypes inferArith(const Graph &g, Node &n);
OutTypes inferUnaryMap(const Graph &g, Node &n);
OutTypes inferBroadcastMap(const Graph &g, Node &n);
OutTypes inferCast(const Graph &g, Node &n);
OutTypes inferReduce(const Graph &g, Node &n);
OutTypes inferTopK(const Graph &g, Node &n);
OutTypes inferTrilu(const Graph &g, Node &n);
// ShapeData.cpp: data movement, and the ops that compute a constant from shapes.
OutTypes inferFlatten(const Graph &g, Node &n);
OutTypes inferReshape(const Graph &g, Node &n);
OutTypes inferSqueeze(const Graph &g, Node &n);
OutTypes inferUnsqueeze(const Graph &g, Node &n);
OutTypes inferTranspose(const Graph &g, Node &n);
OutTypes inferConcat(const Graph &g, Node &n);
OutTypes inferSplit(const Graph &g, Node &n);
OutTypes inferPad(const Graph &g, Node &n);
OutTypes inferSlice(const Graph &g, Node &n);
OutTypes inferExpand(const Graph &g, Node &n);
OutTypes inferTile(const Graph &g, Node &n);
OutTypes inferResize(const Graph &g, Node &n);
OutTypes inferDepthToSpace(const Graph &g, Node &n);
OutTypes inferSpaceToDepth(const Graph &g, Node &n);
OutTypes inferGather(const Graph &g, Node &n);
OutTypes inferGatherElements(const Graph &g, Node &n);
OutTypes inferShapeOf(const Graph &g, Node &n);
OutTypes inferSize(const Graph &g, Node &n);
OutTypes inferConstantOfShape(const Graph &g, Node &n);
OutTypes inferRange(const Graph &g, Node &n);
OutTypes inferEyeLike(const Graph &g, Node &n);
// ShapeIndexed.cpp: gathers and scatters by index tensors, OneHot, ReverseSequence, and the ops
// whose output shape depends on constant input values (NonZero, Unique, NonMaxSuppression).
OutTypes inferGatherND(const Graph &g, Node &n);
OutTypes inferScatterElements(const Graph &g, Node &n);
OutTypes inferScatterND(const Graph &g, Node &n);
OutTypes inferOneHot(const Graph &g, Node &n);
OutTypes inferReverseSequence(const Graph &g, Node &n);
OutTypes inferValueShaped(const Graph &g, Node &n);
// ShapeSignal.cpp: Einsum, Det, the window functions, MelWeightMatrix, DFT, STFT.
OutTypes inferEinsum(const Graph &g, Node &n);
OutTypes inferDet(const Graph &g, Node &n);
OutTypes inferWindow(const Graph &g, Node &n);
OutTypes inferMelWeightMatrix(const Graph &g, Node &n);
OutTypes inferDFT(const Graph &g, Node &n);
OutTypes inferSTFT(const Graph &g, Node &n);
// ShapeRnn.cpp: the recurrent operators RNN, GRU and LSTM.
OutTypes inferRnn(const Graph &g, Node &n);
// ShapeNNExt.cpp: the opset-17 NN operators beyond the convolutions.
OutTypes inferMvn(const Graph &g, Node &n);
OutTypes inferMaxUnpool(const Graph &g, Node &n);
OutTypes inferRoiPool(const Graph &g, Node &n);
OutTypes inferGridSample(const Graph &g, Node &n);
OutTypes inferLoss(const Graph &g, Node &n);
// ShapeInference.cpp: operators that never reach shape inference as nodes.
// ShapeQuant.cpp: the integer products of the quantisation operators.
OutTypes inferConvInteger(const Graph &g, Node &n);
OutTypes inferMatMulInteger(const Graph &g, Node &n);
OutTypes inferUnsupported(const Graph &g, Node &n);

} // namespace npuc::graph::shape
