// RefInternal.h - the reference kernels of the operators (the Ref column of graph/Ops.def) and
// the index helpers they share; for the reference executor's files (Reference.cpp, Ref*.cpp) and
// the graph passes that compute constants the same way (LowerActivations.cpp).
#pragma once

#include "graph/Graph.h"
#include "support/Error.h"
#include "support/Tensor.h"

#include <vector>

namespace npuc::graph {

namespace ref {

using Index = std::vector<int64_t>;

inline Index stridesOf(const Shape &s) {
  Index st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;)
    st[i - 1] = st[i] * s[i];
  return st;
}

/// Strides to read `in` as if broadcast to `out` (0 along broadcast axes).
inline Index broadcastStrides(const Shape &in, const Shape &out) {
  Index st = stridesOf(in), res(out.size(), 0);
  size_t off = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i)
    res[i + off] = in[i] == 1 ? 0 : st[i];
  return res;
}

/// Calls f(flatOut, offsets) for every element of `out`; offsets[k] = sum idx[d]*inStrides[k][d].
template <typename F>
void forEachBroadcast(const Shape &out, const std::vector<Index> &inStrides, F f) {
  int64_t total = numElements(out);
  Index idx(out.size(), 0);
  std::vector<int64_t> off(inStrides.size(), 0);
  for (int64_t flat = 0; flat < total; ++flat) {
    for (size_t k = 0; k < inStrides.size(); ++k) {
      off[k] = 0;
      for (size_t d = 0; d < out.size(); ++d)
        off[k] += idx[d] * inStrides[k][d];
    }
    f(flat, off);
    for (size_t d = out.size(); d-- > 0;) {
      if (++idx[d] < out[d])
        break;
      idx[d] = 0;
    }
  }
}

/// The multi-index of flat position i in `shape`.
inline Index unflatten(int64_t i, const Shape &shape) {
  Index idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] ? i % shape[d] : 0;
    i = shape[d] ? i / shape[d] : 0;
  }
  return idx;
}

inline int64_t flatten(const Index &idx, const Shape &shape) {
  int64_t o = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    o = o * shape[d] + idx[d];
  return o;
}

} // namespace ref

namespace ref {

/// What a reference kernel reads: the node, its input tensors (one per node input, nullptr for
/// an omitted optional one) and the graph, which holds the shapes and dtypes of its outputs.
struct RefArgs {
  const Graph &g;
  const Node &n;
  const std::vector<const HostTensor *> &ins;

  /// Input i, which must be present (the importer guarantees the required ones).
  const HostTensor &in(size_t i) const {
    NPUC_ASSERT(i < ins.size() && ins[i], "required inputs are present after import");
    return *ins[i];
  }
  /// Optional input i: nullptr when omitted.
  const HostTensor *opt(size_t i) const { return i < ins.size() ? ins[i] : nullptr; }
  const Shape &outShape(size_t i = 0) const { return g.value(n.outputs.at(i)).shape; }
  DType outType(size_t i = 0) const { return g.value(n.outputs.at(i)).dtype; }
};
/// One tensor per node output (trailing outputs nobody reads may be left out).
using RefResult = std::vector<HostTensor>;
using RefKernel = RefResult (*)(const RefArgs &);

// How evalNode treats integer and bool tensors (Reference.h explains why): RefTyped.cpp.
/// The kernel with ONNX's integer semantics for node n given its inputs (ins as evalNode gets
/// them), or nullptr when the Ops.def kernel runs instead (on typed tensors when
/// readsTypedTensors, else on an fp32 view).
RefKernel integerKernel(const Node &n, const std::vector<const HostTensor *> &ins);
/// Whether the Ops.def kernel of `k` reads and writes typed tensors itself (the data-movement
/// kernels, which copy elements with HostTensor::copyElement and keep their input's dtype).
bool readsTypedTensors(OpKind k);

// The reference kernels, one per distinct computation; the Ref column of Ops.def names them
// without the `ref` prefix.
// RefNN.cpp: convolutions, pooling, matrix products, batch normalisation.
RefResult refConv(const RefArgs &a);
RefResult refConvTranspose(const RefArgs &a);
RefResult refPool(const RefArgs &a);
RefResult refLpPool(const RefArgs &a);
RefResult refGlobalAveragePool(const RefArgs &a);
RefResult refGlobalPool(const RefArgs &a);
RefResult refGemm(const RefArgs &a);
RefResult refMatMul(const RefArgs &a);
// RefQuant.cpp: exact integer products (typed tensors in and out).
RefResult refConvInteger(const RefArgs &a);
RefResult refMatMulInteger(const RefArgs &a);
RefResult refBatchNorm(const RefArgs &a);
// RefMath.cpp: elementwise and broadcasting maps, reductions, normalisations, ops along an axis.
RefResult refArith(const RefArgs &a);
RefResult refActivation(const RefArgs &a);
RefResult refUnaryMap(const RefArgs &a);
RefResult refBroadcastMap(const RefArgs &a);
RefResult refReduce(const RefArgs &a);
RefResult refSoftmax(const RefArgs &a);
RefResult refNormalize(const RefArgs &a);
RefResult refAlongAxis(const RefArgs &a);
RefResult refLRN(const RefArgs &a);
RefResult refTopK(const RefArgs &a);
// RefData.cpp: data movement, casts, and the ops that compute a tensor from shapes or constants.
RefResult refCopy(const RefArgs &a);
RefResult refTranspose(const RefArgs &a);
RefResult refConcat(const RefArgs &a);
RefResult refSplit(const RefArgs &a);
RefResult refPad(const RefArgs &a);
RefResult refSlice(const RefArgs &a);
RefResult refRepeat(const RefArgs &a);
RefResult refResize(const RefArgs &a);
RefResult refDepthToSpace(const RefArgs &a);
RefResult refSpaceToDepth(const RefArgs &a);
RefResult refGather(const RefArgs &a);
RefResult refGatherElements(const RefArgs &a);
RefResult refTrilu(const RefArgs &a);
RefResult refEyeLike(const RefArgs &a);
// RefTyped.cpp: Cast and CastLike (every dtype pair), BitShift (integers only).
RefResult refCast(const RefArgs &a);
RefResult refBitShift(const RefArgs &a);
RefResult refShapeOf(const RefArgs &a);
RefResult refSize(const RefArgs &a);
RefResult refConstantOfShape(const RefArgs &a);
RefResult refRange(const RefArgs &a);
// RefIndexed.cpp: gathers and scatters by index tensors, OneHot, ReverseSequence, NonZero,
// Unique, NonMaxSuppression.
RefResult refGatherND(const RefArgs &a);
RefResult refScatterElements(const RefArgs &a);
RefResult refScatterND(const RefArgs &a);
RefResult refOneHot(const RefArgs &a);
RefResult refReverseSequence(const RefArgs &a);
RefResult refNonZero(const RefArgs &a);
RefResult refUnique(const RefArgs &a);
RefResult refNonMaxSuppression(const RefArgs &a);
// RefSignal.cpp: Einsum, Det, the window functions, MelWeightMatrix, DFT, STFT.
RefResult refEinsum(const RefArgs &a);
RefResult refDet(const RefArgs &a);
RefResult refWindow(const RefArgs &a);
RefResult refMelWeightMatrix(const RefArgs &a);
RefResult refDFT(const RefArgs &a);
RefResult refSTFT(const RefArgs &a);
// RefRnn.cpp: the recurrent operators RNN, GRU and LSTM.
RefResult refRnn(const RefArgs &a);
// RefSample.cpp: sampling at data-given positions.
RefResult refMaxUnpool(const RefArgs &a);
RefResult refRoiAlign(const RefArgs &a);
RefResult refMaxRoiPool(const RefArgs &a);
RefResult refGridSample(const RefArgs &a);
// RefStats.cpp: statistics over axes (MeanVarianceNormalization, the losses).
RefResult refMvn(const RefArgs &a);
RefResult refLoss(const RefArgs &a);
// Reference.cpp: operators that are never nodes at run time.
RefResult refUnsupported(const RefArgs &a);

} // namespace ref

} // namespace npuc::graph
