// ShapeNN.cpp - shape rules of the neural-network operators: convolutions, window and global
// pooling, matrix products and the normalisations with per-channel parameters (ShapeInternal.h).
#include "graph/ShapeInference.h"
#include "graph/ShapeInternal.h"

#include "support/Error.h"

#include <algorithm>
#include <fmt/ranges.h>

namespace npuc::graph::shape {

namespace {

// Fails naming the node and attribute unless every entry of `v` is at least `min`.
void requireAtLeast(const Node &n, const char *attr, const std::vector<int64_t> &v, int64_t min) {
  for (int64_t x : v)
    if (x < min)
      fail("{}: attribute {} = [{}] must be at least {} in every entry", where(n), attr,
           fmt::join(v, ", "), min);
}

// Output extent of a window op (Conv/pool) along one spatial axis, using normalised pads
// (checkWindowAttrs has checked them).
int64_t windowOut(const Node &n, int64_t in, int64_t k, int64_t stride, int64_t dil,
                  int64_t padBegin, int64_t padEnd, bool ceilMode) {
  int64_t eff = dil * (k - 1) + 1;
  int64_t span = in + padBegin + padEnd - eff;
  if (span < 0)
    fail("{}: window {} (dilation {}) does not fit input extent {} with pads {}+{}", where(n), k,
         dil, in, padBegin, padEnd);
  int64_t out = (ceilMode ? (span + stride - 1) / stride : span / stride) + 1;
  // ONNX/PyTorch rule: with ceil_mode the last window must start inside the (left-padded) input.
  if (ceilMode && (out - 1) * stride >= in + padBegin)
    --out;
  return out;
}

// The spatial rank of input 0 of a window op: 1 to 3 ([N, C, W] to [N, C, D, H, W]).
size_t spatialRank(const Graph &g, const Node &n) {
  const Shape &x = inShape(g, n, 0);
  if (x.size() < 3 || x.size() > 5)
    fail("{}: input must have 1 to 3 spatial axes ([N, C, W] to [N, C, D, H, W]), got shape {}",
         where(n), shapeToString(x));
  return x.size() - 2;
}

Shape windowShape(const Graph &g, const Node &n, int64_t outChannels,
                  const std::vector<int64_t> &kernel) {
  const size_t r = spatialRank(g, n);
  const Shape &x = inShape(g, n, 0);
  auto k = n.attrInts("kernel_shape", kernel);
  auto s = n.attrInts("strides", std::vector<int64_t>(r, 1));
  auto d = n.attrInts("dilations", std::vector<int64_t>(r, 1));
  auto p = n.attrInts("pads", std::vector<int64_t>(2 * r, 0));
  if (k.size() != r || s.size() != r || d.size() != r || p.size() != 2 * r)
    fail("{}: kernel_shape/strides/dilations need {} entries and pads {} for input {}", where(n), r,
         2 * r, shapeToString(x));
  checkWindowAttrs(n, k, s, d, p);
  // A pooling window lying wholly in the padding has no element to take the maximum or average
  // of (ONNX Runtime rejects it alike); a convolution's is an ordinary zero.
  if (n.kind != OpKind::Conv)
    for (size_t i = 0; i < 2 * r; ++i)
      if (p[i] >= d[i % r] * (k[i % r] - 1) + 1)
        fail("{}: attribute pads = [{}] must be smaller than the (dilated) kernel_shape [{}]",
             where(n), fmt::join(p, ", "), fmt::join(k, ", "));
  bool ceilMode = n.attrInt("ceil_mode", 0) != 0;
  Shape out{x[0], outChannels};
  for (size_t i = 0; i < r; ++i)
    out.push_back(windowOut(n, x[2 + i], k[i], s[i], d[i], p[i], p[i + r], ceilMode));
  return out;
}

} // namespace

OutTypes inferConv(const Graph &g, Node &n) {
  const size_t r = spatialRank(g, n);
  const Shape &x = inShape(g, n, 0);
  const Shape &w = inShape(g, n, 1);
  int64_t group = n.attrInt("group", 1);
  if (w.size() != r + 2)
    fail("{}: weight shape {} must have the input's rank {}", where(n), shapeToString(w), r + 2);
  if (group <= 0 || x[1] != w[1] * group || w[0] % group != 0)
    fail("{}: input channels {} do not match weight shape {} with group {}", where(n), x[1],
         shapeToString(w), group);
  const std::vector<int64_t> ws(w.begin() + 2, w.end());
  if (n.attrInts("kernel_shape", ws) != ws)
    fail("{}: kernel_shape does not match the weight shape {}", where(n), shapeToString(w));
  if (n.inputs.size() > 2 && n.inputs[2] != kNoValue && inShape(g, n, 2) != Shape{w[0]})
    fail("{}: bias shape {} must be [{}]", where(n), shapeToString(inShape(g, n, 2)), w[0]);
  return {{windowShape(g, n, w[0], ws), firstInputType(g, n)}};
}

OutTypes inferConvTranspose(const Graph &g, Node &n) {
  const size_t r = spatialRank(g, n);
  const Shape &x = inShape(g, n, 0), &w = inShape(g, n, 1);
  if (w.size() != r + 2)
    fail("{}: weight shape {} must have the input's rank {}", where(n), shapeToString(w), r + 2);
  int64_t group = n.attrInt("group", 1);
  if (group <= 0 || x[1] != w[0] || x[1] % group != 0)
    fail("{}: input channels {} do not match weight shape {} with group {}", where(n), x[1],
         shapeToString(w), group);
  auto s = n.attrInts("strides"), d = n.attrInts("dilations"), p = n.attrInts("pads");
  auto op2 = n.attrInts("output_padding");
  if (s.size() != r || d.size() != r || p.size() != 2 * r || op2.size() != r)
    fail("{}: strides/dilations/output_padding need {} entries and pads {}", where(n), r, 2 * r);
  checkWindowAttrs(n, std::vector<int64_t>(w.begin() + 2, w.end()), s, d, p);
  // ONNX: output_padding selects among the strides' (or dilations') possible output extents.
  for (size_t i = 0; i < r; ++i)
    if (op2[i] < 0 || op2[i] >= std::max(s[i], d[i]))
      fail("{}: attribute output_padding = [{}] must lie in [0, max(stride, dilation)) per axis",
           where(n), fmt::join(op2, ", "));
  Shape out{x[0], w[1] * group};
  for (size_t i = 0; i < r; ++i) {
    out.push_back((x[2 + i] - 1) * s[i] - p[i] - p[i + r] + d[i] * (w[2 + i] - 1) + 1 + op2[i]);
    if (out.back() <= 0)
      fail("{}: output extent {} along spatial axis {} is not positive", where(n), out.back(), i);
  }
  if (n.inputs.size() > 2 && n.inputs[2] != kNoValue && inShape(g, n, 2) != Shape{out[1]})
    fail("{}: bias shape {} must be [{}]", where(n), shapeToString(inShape(g, n, 2)), out[1]);
  return {{out, DType::F32}};
}

namespace {

// LpPool and GlobalLpPool: the norm's order p; 0 would raise to the power 1/0.
void requirePositiveNormOrder(const Node &n) {
  if (n.kind == OpKind::LpPool || n.kind == OpKind::GlobalLpPool)
    if (int64_t p = n.attrInt("p", 2); p < 1)
      fail("{}: attribute p = {} must be at least 1", where(n), p);
}

} // namespace

// MaxPool, AveragePool, LpPool: a window over each channel along 1 to 3 spatial axes; MaxPool's
// optional second output (Indices) has the pooled shape and int64 flat indices.
OutTypes inferPool(const Graph &g, Node &n) {
  spatialRank(g, n);
  const Shape &x = inShape(g, n, 0);
  requirePositiveNormOrder(n);
  Shape out = windowShape(g, n, x[1], {});
  OutTypes res{{out, firstInputType(g, n)}};
  if (n.outputs.size() > 1)
    res.push_back({out, DType::I64});
  return res;
}

OutTypes inferGlobalAveragePool(const Graph &g, Node &n) {
  Shape out = inShape(g, n, 0);
  if (out.size() < 3)
    fail("{}: input must be at least 3-D, got {}", where(n), shapeToString(out));
  std::fill(out.begin() + 2, out.end(), 1);
  return {{out, firstInputType(g, n)}};
}

// GlobalMaxPool, GlobalLpPool: any number of spatial axes.
OutTypes inferGlobalPool(const Graph &g, Node &n) {
  Shape x = inShape(g, n, 0);
  if (x.size() < 3)
    fail("{}: input must be at least 3-D, got {}", where(n), shapeToString(x));
  requirePositiveNormOrder(n);
  std::fill(x.begin() + 2, x.end(), 1);
  return {{x, DType::F32}};
}

OutTypes inferGemm(const Graph &g, Node &n) {
  requireRank(g, n, 0, 2);
  requireRank(g, n, 1, 2);
  Shape a = inShape(g, n, 0), b = inShape(g, n, 1);
  if (n.attrInt("transA", 0))
    std::swap(a[0], a[1]);
  if (n.attrInt("transB", 0))
    std::swap(b[0], b[1]);
  if (a[1] != b[0])
    fail("{}: inner dimensions differ ({} vs {})", where(n), a[1], b[0]);
  Shape out{a[0], b[1]};
  if (n.inputs.size() > 2 && n.inputs[2] != kNoValue &&
      broadcastShapes(inShape(g, n, 2), out, where(n)) != out)
    fail("{}: C shape {} does not broadcast to {}", where(n), shapeToString(inShape(g, n, 2)),
         shapeToString(out));
  return {{out, firstInputType(g, n)}};
}

OutTypes inferMatMul(const Graph &g, Node &n) {
  const Shape &a = inShape(g, n, 0), &b = inShape(g, n, 1);
  if (a.size() < 2 || b.size() < 2)
    fail("{}: MatMul with a rank-1 operand is not supported", where(n));
  if (a.back() != b[b.size() - 2])
    fail("{}: inner dimensions differ ({} vs {})", where(n), shapeToString(a), shapeToString(b));
  Shape batch =
      broadcastShapes(Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2), where(n));
  batch.push_back(a[a.size() - 2]);
  batch.push_back(b.back());
  return {{batch, firstInputType(g, n)}};
}

OutTypes inferBatchNorm(const Graph &g, Node &n) {
  Shape out = inShape(g, n, 0);
  if (out.size() < 2)
    fail("{}: input must have a channel dimension", where(n));
  for (size_t i = 1; i < 5; ++i)
    if (inShape(g, n, i) != Shape{out[1]})
      fail("{}: parameter {} has shape {}, expected [{}]", where(n), i,
           shapeToString(inShape(g, n, i)), out[1]);
  return {{out, firstInputType(g, n)}};
}

OutTypes inferLayerNorm(const Graph &g, Node &n) {
  const Shape &x = inShape(g, n, 0);
  int64_t axis = axisAttr(n, "axis", x.size());
  Shape norm(x.begin() + axis, x.end());
  for (size_t i = 1; i < n.inputs.size(); ++i)
    if (n.inputs[i] != kNoValue && broadcastShapes(inShape(g, n, i), norm, where(n)) != norm)
      fail("{}: input {} shape {} does not broadcast to the normalised shape {}", where(n), i,
           shapeToString(inShape(g, n, i)), shapeToString(norm));
  return {{x, inType(g, n, 0)}};
}

namespace {

// InstanceNormalization and LRN normalise over channels and spatial axes.
const Shape &channelsAndSpatial(const Graph &g, const Node &n) {
  const Shape &x = inShape(g, n, 0);
  if (x.size() < 3)
    fail("{}: input must be at least 3-D (N, C, spatial...), got {}", where(n), shapeToString(x));
  return x;
}

} // namespace

OutTypes inferInstanceNorm(const Graph &g, Node &n) {
  const Shape &x = channelsAndSpatial(g, n);
  for (size_t i = 1; i < 3; ++i)
    if (inShape(g, n, i) != Shape{x[1]})
      fail("{}: input {} has shape {}, expected [{}]", where(n), i, shapeToString(inShape(g, n, i)),
           x[1]);
  return {{x, inType(g, n, 0)}};
}

OutTypes inferLRN(const Graph &g, Node &n) {
  // The window's channel count, which also divides alpha.
  if (int64_t size = n.attrInt("size", 1); size < 1)
    fail("{}: attribute size = {} must be at least 1", where(n), size);
  return {{channelsAndSpatial(g, n), inType(g, n, 0)}};
}

} // namespace npuc::graph::shape

namespace npuc::graph {

void checkWindowAttrs(const Node &n, const std::vector<int64_t> &kernel,
                      const std::vector<int64_t> &strides, const std::vector<int64_t> &dilations,
                      const std::vector<int64_t> &pads) {
  shape::requireAtLeast(n, "kernel_shape", kernel, 1);
  shape::requireAtLeast(n, "strides", strides, 1);
  shape::requireAtLeast(n, "dilations", dilations, 1);
  shape::requireAtLeast(n, "pads", pads, 0);
}

} // namespace npuc::graph
