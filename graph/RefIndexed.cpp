// RefIndexed.cpp - reference kernels of the operators that move data by an index tensor
// (GatherND, ScatterElements, ScatterND, OneHot, ReverseSequence) and of those whose output
// shape depends on input values (NonZero, Unique, NonMaxSuppression, evaluated at import on
// constants), and the run-time check of index inputs (RefInternal.h, Reference.h).
#include "graph/DataOps.h"
#include "graph/RefInternal.h"
#include "graph/Reference.h"

#include "support/Error.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

namespace npuc::graph {

namespace {

// An index along an axis of extent `len`; a negative one counts from the end.
int64_t normIndex(float f, int64_t len) {
  auto k = static_cast<int64_t>(f);
  return k < 0 ? k + len : k;
}

void requireIndex(const Node &n, float f, int64_t len, size_t axis) {
  int64_t k = normIndex(f, len);
  if (k < 0 || k >= len)
    fail("node '{}' ({}): index {} out of range [0, {}) on data axis {}", n.name, n.kind, k, len,
         axis);
}

// GatherND and ScatterND: each index tuple (the last indices dimension) addresses data axes
// batch_dims, batch_dims + 1, ...
void checkTuples(const Node &n, const Shape &data, const HostTensor &idx, size_t batchDims) {
  auto m = static_cast<size_t>(idx.shape.back());
  for (size_t i = 0; i < idx.data.size(); ++i)
    requireIndex(n, idx.data[i], data[batchDims + i % m], batchDims + i % m);
}

float combine(ScatterReduction r, float a, float u) {
  switch (r) {
  case ScatterReduction::None:
    return u;
  case ScatterReduction::Add:
    return a + u;
  case ScatterReduction::Mul:
    return a * u;
  case ScatterReduction::Max:
    return std::max(a, u);
  case ScatterReduction::Min:
    return std::min(a, u);
  }
  NPUC_ASSERT(false, "every scatter reduction is handled");
}

} // namespace

bool readsIndexInput(OpKind k) {
  return k == OpKind::Gather || k == OpKind::GatherElements || k == OpKind::GatherND ||
         k == OpKind::ScatterElements || k == OpKind::ScatterND || k == OpKind::ReverseSequence;
}

void checkIndexInput(const Node &n, const Shape &data, const HostTensor &indices) {
  NPUC_ASSERT(readsIndexInput(n.kind), "only operators with an index input are checked");
  switch (n.kind) {
  case OpKind::Gather:
  case OpKind::GatherElements:
    checkGatherIndices(n, data, indices);
    return;
  case OpKind::ScatterElements: {
    auto axis = static_cast<size_t>(n.attrInt("axis", 0));
    for (float f : indices.data)
      requireIndex(n, f, data.at(axis), axis);
    return;
  }
  case OpKind::GatherND:
    checkTuples(n, data, indices, static_cast<size_t>(n.attrInt("batch_dims", 0)));
    return;
  case OpKind::ScatterND:
    checkTuples(n, data, indices, 0);
    return;
  default: { // ReverseSequence: lengths in [0, the time axis extent]
    int64_t len = data.at(static_cast<size_t>(n.attrInt("time_axis", 0)));
    for (float f : indices.data)
      if (f < 0 || f > static_cast<float>(len))
        fail("node '{}' ({}): sequence length {} out of range [0, {}]", n.name, n.kind, f, len);
  }
  }
}

int indexInput(OpKind k) {
  if (readsIndexInput(k) || k == OpKind::MaxUnpool || k == OpKind::NegativeLogLikelihoodLoss ||
      k == OpKind::SoftmaxCrossEntropyLoss || k == OpKind::MaxRoiPool)
    return 1;
  return k == OpKind::RoiAlign ? 2 : -1;
}

namespace {

// Every value at positions start, start + step, ... of `v` is an integer in [0, extent) (or, when
// `ignore` is given, equal to it): the reference kernels' rule and message.
void requireIntegers(const Node &n, const HostTensor &v, int64_t extent, const char *what,
                     size_t start = 0, size_t step = 1, std::optional<int64_t> ignore = {}) {
  for (size_t i = start; i < v.data.size(); i += step) {
    float f = v.data[i];
    if (ignore && f == static_cast<float>(*ignore))
      continue;
    if (std::nearbyint(f) != f || f < 0 || f >= static_cast<float>(extent))
      fail("node '{}' ({}): {} {} is not an integer in [0, {}){}", n.name, n.kind, what, f, extent,
           ignore ? " nor ignore_index" : "");
  }
}

} // namespace

void checkIndexOperand(const Graph &g, const Node &n, const HostTensor &indices) {
  NPUC_ASSERT(indexInput(n.kind) >= 0, "only operators with an index input are checked");
  const Shape &data = g.value(n.inputs.at(0)).shape;
  switch (n.kind) {
  case OpKind::MaxUnpool:
    requireIntegers(n, indices, numElements(g.value(n.outputs.at(0)).shape), "index");
    return;
  case OpKind::NegativeLogLikelihoodLoss:
  case OpKind::SoftmaxCrossEntropyLoss: {
    std::optional<int64_t> ignore;
    if (n.hasAttr("ignore_index"))
      ignore = n.attrInt("ignore_index", 0);
    requireIntegers(n, indices, data.at(1), "label", 0, 1, ignore);
    return;
  }
  case OpKind::MaxRoiPool: // rois [num_rois, 5]: the batch index first
    requireIntegers(n, indices, data.at(0), "batch index", 0, 5);
    return;
  case OpKind::RoiAlign:
    requireIntegers(n, indices, data.at(0), "batch index");
    return;
  default:
    checkIndexInput(n, data, indices);
  }
}

namespace ref {

RefResult refGatherND(const RefArgs &a) {
  const HostTensor &x = a.in(0), &idx = a.in(1);
  checkIndexInput(a.n, x.shape, idx);
  auto b = static_cast<size_t>(a.n.attrInt("batch_dims", 0));
  auto m = static_cast<size_t>(idx.shape.back());
  Index xst = stridesOf(x.shape);
  int64_t batches = numElements(Shape(x.shape.begin(), x.shape.begin() + static_cast<long>(b)));
  int64_t tuples = numElements(idx.shape) / static_cast<int64_t>(m) / std::max<int64_t>(batches, 1);
  int64_t inner = numElements(Shape(x.shape.begin() + static_cast<long>(b + m), x.shape.end()));
  int64_t batchStride = b ? xst[b - 1] : 0;
  HostTensor out(a.outShape());
  for (int64_t bi = 0; bi < batches; ++bi)
    for (int64_t t = 0; t < tuples; ++t) {
      int64_t tup = bi * tuples + t, off = bi * batchStride;
      for (size_t j = 0; j < m; ++j)
        off += normIndex(idx.data[static_cast<size_t>(tup) * m + j], x.shape[b + j]) * xst[b + j];
      std::copy_n(x.data.begin() + off, inner, out.data.begin() + tup * inner);
    }
  return {out};
}

RefResult refScatterElements(const RefArgs &a) {
  const HostTensor &x = a.in(0), &idx = a.in(1), &upd = a.in(2);
  checkIndexInput(a.n, x.shape, idx);
  auto axis = static_cast<size_t>(a.n.attrInt("axis", 0));
  ScatterReduction r = scatterReduction(a.n);
  HostTensor out = x;
  for (int64_t i = 0; i < idx.size(); ++i) { // in order: with duplicates the last update wins
    Index si = unflatten(i, idx.shape);
    si[axis] = normIndex(idx.data[i], x.shape[axis]);
    float &o = out.data[flatten(si, x.shape)];
    o = combine(r, o, upd.data[i]);
  }
  return {out};
}

RefResult refScatterND(const RefArgs &a) {
  const HostTensor &x = a.in(0), &idx = a.in(1), &upd = a.in(2);
  checkIndexInput(a.n, x.shape, idx);
  ScatterReduction r = scatterReduction(a.n);
  auto m = static_cast<size_t>(idx.shape.back());
  Index xst = stridesOf(x.shape);
  int64_t inner = numElements(Shape(x.shape.begin() + static_cast<long>(m), x.shape.end()));
  HostTensor out = x;
  for (int64_t t = 0; t < idx.size() / static_cast<int64_t>(m); ++t) {
    int64_t off = 0;
    for (size_t j = 0; j < m; ++j)
      off += normIndex(idx.data[static_cast<size_t>(t) * m + j], x.shape[j]) * xst[j];
    for (int64_t e = 0; e < inner; ++e)
      out.data[off + e] = combine(r, out.data[off + e], upd.data[t * inner + e]);
  }
  return {out};
}

// Inputs after import: indices, values (off, on); depth and axis are attributes.
RefResult refOneHot(const RefArgs &a) {
  const HostTensor &idx = a.in(0), &vals = a.in(1);
  auto axis = static_cast<size_t>(a.n.attrInt("axis", 0));
  int64_t depth = a.n.attrInt("depth", 1);
  const Shape &os = a.outShape();
  HostTensor out(os);
  for (int64_t i = 0; i < out.size(); ++i) {
    Index oi = unflatten(i, os);
    int64_t pos = oi[axis];
    oi.erase(oi.begin() + static_cast<long>(axis));
    int64_t k = normIndex(idx.data[flatten(oi, idx.shape)], depth);
    out.data[i] = vals.data[k == pos ? 1 : 0];
  }
  return {out};
}

RefResult refReverseSequence(const RefArgs &a) {
  const HostTensor &x = a.in(0), &lens = a.in(1);
  checkIndexInput(a.n, x.shape, lens);
  auto ba = static_cast<size_t>(a.n.attrInt("batch_axis", 1));
  auto ta = static_cast<size_t>(a.n.attrInt("time_axis", 0));
  HostTensor out(x.shape);
  for (int64_t i = 0; i < out.size(); ++i) {
    Index si = unflatten(i, x.shape);
    auto len = static_cast<int64_t>(lens.data[si[ba]]);
    si[ta] = si[ta] < len ? len - 1 - si[ta] : si[ta];
    out.data[i] = x.data[flatten(si, x.shape)];
  }
  return {out};
}

RefResult refNonZero(const RefArgs &a) {
  const HostTensor &x = a.in(0);
  std::vector<int64_t> at;
  for (int64_t i = 0; i < x.size(); ++i)
    if (x.data[i] != 0)
      at.push_back(i);
  auto count = static_cast<int64_t>(at.size());
  HostTensor out({static_cast<int64_t>(x.shape.size()), count});
  for (int64_t c = 0; c < count; ++c) {
    Index si = unflatten(at[c], x.shape);
    for (size_t d = 0; d < si.size(); ++d)
      out.data[static_cast<int64_t>(d) * count + c] = static_cast<float>(si[d]);
  }
  return {out};
}

} // namespace ref

} // namespace npuc::graph
