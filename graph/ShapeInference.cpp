// ShapeInference.cpp - output shapes of the supported operators (normalised attribute form).
// Kept independent of ONNX's own inference so that every value gets a static shape we computed.
#include "graph/ShapeInference.h"
#include "graph/ShapeInternal.h"
#include "graph/ExtOps.h"

#include "support/Error.h"

#include <algorithm>
#include <set>

namespace npuc::graph {

namespace {

using shape::inShape;
using shape::where;

void requireRank(const Graph &g, const Node &n, size_t i, size_t rank) {
  const Shape &s = inShape(g, n, i);
  if (s.size() != rank)
    fail("{}: input {} has shape {} but a rank-{} tensor is required", where(n), i,
         shapeToString(s), rank);
}

// Output spatial size of a 2-D window op (Conv/pool) along one axis, using normalised pads.
int64_t windowOut(const Node &n, int64_t in, int64_t k, int64_t stride, int64_t dil,
                  int64_t padBegin, int64_t padEnd, bool ceilMode) {
  int64_t eff = dil * (k - 1) + 1;
  int64_t span = in + padBegin + padEnd - eff;
  if (span < 0 || stride <= 0)
    fail("{}: window {} (dilation {}) does not fit input extent {} with pads {}+{}", where(n), k,
         dil, in, padBegin, padEnd);
  int64_t out = (ceilMode ? (span + stride - 1) / stride : span / stride) + 1;
  // ONNX/PyTorch rule: with ceil_mode the last window must start inside the (left-padded) input.
  if (ceilMode && (out - 1) * stride >= in + padBegin)
    --out;
  return out;
}

Shape windowShape(const Graph &g, const Node &n, int64_t outChannels,
                  const std::vector<int64_t> &kernel) {
  requireRank(g, n, 0, 4);
  const Shape &x = inShape(g, n, 0);
  auto k = n.attrInts("kernel_shape", kernel);
  auto s = n.attrInts("strides", {1, 1});
  auto d = n.attrInts("dilations", {1, 1});
  auto p = n.attrInts("pads", {0, 0, 0, 0});
  if (k.size() != 2 || s.size() != 2 || d.size() != 2 || p.size() != 4)
    fail("{}: only 2-D windows are supported (kernel_shape/strides/dilations/pads)", where(n));
  bool ceilMode = n.attrInt("ceil_mode", 0) != 0;
  return {x[0], outChannels, windowOut(n, x[2], k[0], s[0], d[0], p[0], p[2], ceilMode),
          windowOut(n, x[3], k[1], s[1], d[1], p[1], p[3], ceilMode)};
}

const std::vector<int64_t> &constI64(const Graph &g, const Node &n, size_t i) {
  if (i >= n.inputs.size() || n.inputs[i] == kNoValue || !g.value(n.inputs[i]).i64)
    fail("{}: input {} must be a constant int64 tensor", where(n), i);
  return *g.value(n.inputs[i]).i64;
}

int64_t normAxis(const Node &n, int64_t axis, size_t rank) {
  int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r)
    fail("{}: axis {} out of range for rank {}", where(n), axis, rank);
  return axis < 0 ? axis + r : axis;
}

Shape conv(const Graph &g, const Node &n) {
  requireRank(g, n, 1, 4);
  const Shape &x = inShape(g, n, 0);
  const Shape &w = inShape(g, n, 1);
  int64_t group = n.attrInt("group", 1);
  if (group <= 0 || x.size() != 4 || x[1] != w[1] * group || w[0] % group != 0)
    fail("{}: input channels {} do not match weight shape {} with group {}", where(n),
         x.size() == 4 ? x[1] : -1, shapeToString(w), group);
  auto k = n.attrInts("kernel_shape", {w[2], w[3]});
  if (k != std::vector<int64_t>{w[2], w[3]})
    fail("{}: kernel_shape does not match the weight shape {}", where(n), shapeToString(w));
  if (n.inputs.size() > 2 && n.inputs[2] != kNoValue && inShape(g, n, 2) != Shape{w[0]})
    fail("{}: bias shape {} must be [{}]", where(n), shapeToString(inShape(g, n, 2)), w[0]);
  return windowShape(g, n, w[0], k);
}

Shape gemm(const Graph &g, const Node &n) {
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
  return out;
}

Shape matmul(const Graph &g, const Node &n) {
  const Shape &a = inShape(g, n, 0), &b = inShape(g, n, 1);
  if (a.size() < 2 || b.size() < 2)
    fail("{}: MatMul with a rank-1 operand is not supported", where(n));
  if (a.back() != b[b.size() - 2])
    fail("{}: inner dimensions differ ({} vs {})", where(n), shapeToString(a), shapeToString(b));
  Shape batch =
      broadcastShapes(Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2), where(n));
  batch.push_back(a[a.size() - 2]);
  batch.push_back(b.back());
  return batch;
}

Shape reshape(const Graph &g, const Node &n) {
  const Shape &x = inShape(g, n, 0);
  const auto &spec = constI64(g, n, 1);
  Shape out;
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < spec.size(); ++i) {
    int64_t d = spec[i];
    if (d == 0) {
      if (i >= x.size())
        fail("{}: shape entry {} is 0 but the input has rank {}", where(n), i, x.size());
      d = x[i];
    } else if (d == -1) {
      if (infer >= 0)
        fail("{}: more than one -1 in the target shape", where(n));
      infer = static_cast<int>(i);
      out.push_back(1);
      continue;
    } else if (d < -1) {
      fail("{}: invalid target dimension {}", where(n), d);
    }
    known *= d;
    out.push_back(d);
  }
  int64_t total = numElements(x);
  if (infer >= 0) {
    if (known == 0 || total % known != 0)
      fail("{}: cannot reshape {} into {}", where(n), shapeToString(x), fmt::join(spec, ","));
    out[static_cast<size_t>(infer)] = total / known;
  }
  if (numElements(out) != total)
    fail("{}: cannot reshape {} ({} elements) into {}", where(n), shapeToString(x), total,
         shapeToString(out));
  return out;
}

Shape squeeze(const Graph &g, const Node &n) {
  const Shape &x = inShape(g, n, 0);
  std::set<int64_t> axes;
  for (int64_t a : n.attrInts("axes"))
    axes.insert(normAxis(n, a, x.size()));
  Shape out;
  for (size_t i = 0; i < x.size(); ++i) {
    bool drop = axes.empty() ? x[i] == 1 : axes.count(static_cast<int64_t>(i)) != 0;
    if (drop && x[i] != 1)
      fail("{}: cannot squeeze axis {} of extent {}", where(n), i, x[i]);
    if (!drop)
      out.push_back(x[i]);
  }
  return out;
}

Shape unsqueeze(const Graph &g, const Node &n) {
  const Shape &x = inShape(g, n, 0);
  size_t rank = x.size() + n.attrInts("axes").size();
  std::set<int64_t> axes;
  for (int64_t a : n.attrInts("axes"))
    if (!axes.insert(normAxis(n, a, rank)).second)
      fail("{}: repeated axis {}", where(n), a);
  Shape out;
  size_t j = 0;
  for (size_t i = 0; i < rank; ++i)
    out.push_back(axes.count(static_cast<int64_t>(i)) ? 1 : x[j++]);
  return out;
}

} // namespace

Shape broadcastShapes(const Shape &a, const Shape &b, const std::string &what) {
  size_t r = std::max(a.size(), b.size());
  Shape out(r, 1);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1)
      fail("{}: shapes {} and {} are not broadcastable", what, shapeToString(a), shapeToString(b));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

void inferNodeShape(Graph &g, NodeId id) {
  Node &n = g.node(id);
  if (inferExtShape(g, n))
    return;
  Shape out;
  // Shape-manipulating ops keep their data's dtype (int64 shape tensors flow through
  // Unsqueeze/Concat/Gather before import-time folding); compute ops are float.
  DType dt = !n.inputs.empty() && n.inputs[0] != kNoValue ? g.value(n.inputs[0]).dtype : DType::F32;
  const OpKind op = n.kind;
  if (op == OpKind::Conv) {
    out = conv(g, n);
  } else if (op == OpKind::MaxPool || op == OpKind::AveragePool || op == OpKind::LpPool) {
    out = windowShape(g, n, inShape(g, n, 0).size() == 4 ? inShape(g, n, 0)[1] : 0, {});
  } else if (op == OpKind::GlobalAveragePool) {
    requireRank(g, n, 0, 4);
    out = inShape(g, n, 0);
    out[2] = out[3] = 1;
  } else if (op == OpKind::Gemm) {
    out = gemm(g, n);
  } else if (op == OpKind::MatMul) {
    out = matmul(g, n);
  } else if (op == OpKind::Add || op == OpKind::Sub || op == OpKind::Mul || op == OpKind::Div ||
             op == OpKind::Max || op == OpKind::Min) {
    out = inShape(g, n, 0);
    for (size_t i = 1; i < n.inputs.size(); ++i)
      out = broadcastShapes(out, inShape(g, n, i), where(n));
  } else if (isElementwiseOp(op) || op == OpKind::Softmax || op == OpKind::Identity ||
             op == OpKind::Dropout) {
    out = inShape(g, n, 0);
    if (op == OpKind::Softmax)
      normAxis(n, n.attrInt("axis", -1), out.size());
  } else if (op == OpKind::BatchNormalization) {
    out = inShape(g, n, 0);
    if (out.size() < 2)
      fail("{}: input must have a channel dimension", where(n));
    for (size_t i = 1; i < 5; ++i)
      if (inShape(g, n, i) != Shape{out[1]})
        fail("{}: parameter {} has shape {}, expected [{}]", where(n), i,
             shapeToString(inShape(g, n, i)), out[1]);
  } else if (op == OpKind::Flatten) {
    const Shape &x = inShape(g, n, 0);
    int64_t axis = n.attrInt("axis", 1);
    axis = axis < 0 ? axis + static_cast<int64_t>(x.size()) : axis;
    if (axis < 0 || axis > static_cast<int64_t>(x.size()))
      fail("{}: axis out of range", where(n));
    out = {numElements(Shape(x.begin(), x.begin() + axis)),
           numElements(Shape(x.begin() + axis, x.end()))};
  } else if (op == OpKind::Reshape) {
    out = reshape(g, n);
  } else if (op == OpKind::Squeeze) {
    out = squeeze(g, n);
  } else if (op == OpKind::Unsqueeze) {
    out = unsqueeze(g, n);
  } else if (op == OpKind::Transpose) {
    const Shape &x = inShape(g, n, 0);
    std::vector<int64_t> perm = n.attrInts("perm");
    if (perm.empty())
      for (size_t i = 0; i < x.size(); ++i)
        perm.insert(perm.begin(), static_cast<int64_t>(i));
    std::vector<int64_t> sorted = perm;
    std::sort(sorted.begin(), sorted.end());
    for (size_t i = 0; i < sorted.size(); ++i)
      if (sorted[i] != static_cast<int64_t>(i) || sorted.size() != x.size())
        fail("{}: perm is not a permutation of {} axes", where(n), x.size());
    n.attrs["perm"] = perm;
    for (int64_t p : perm)
      out.push_back(x[static_cast<size_t>(p)]);
  } else if (op == OpKind::Concat) {
    out = inShape(g, n, 0);
    int64_t axis = normAxis(n, n.attrInt("axis", 0), out.size());
    for (size_t i = 1; i < n.inputs.size(); ++i) {
      const Shape &s = inShape(g, n, i);
      for (size_t d = 0; d < out.size(); ++d)
        if (s.size() != out.size() || (static_cast<int64_t>(d) != axis && s[d] != out[d]))
          fail("{}: input {} shape {} does not match {} outside axis {}", where(n), i,
               shapeToString(s), shapeToString(out), axis);
      out[static_cast<size_t>(axis)] += s[static_cast<size_t>(axis)];
    }
  } else if (op == OpKind::Pad) {
    const Shape &x = inShape(g, n, 0);
    auto pads = n.attrInts("pads");
    if (pads.size() != 2 * x.size())
      fail("{}: pads has {} entries, expected {}", where(n), pads.size(), 2 * x.size());
    out = x;
    for (size_t i = 0; i < x.size(); ++i) {
      out[i] += pads[i] + pads[i + x.size()];
      if (pads[i] < 0 || pads[i + x.size()] < 0)
        fail("{}: negative pads are not supported", where(n));
    }
  } else if (op == OpKind::Gather) {
    const Shape &x = inShape(g, n, 0);
    const Shape &idx = inShape(g, n, 1);
    int64_t axis = normAxis(n, n.attrInt("axis", 0), x.size());
    out.assign(x.begin(), x.begin() + axis);
    out.insert(out.end(), idx.begin(), idx.end());
    out.insert(out.end(), x.begin() + axis + 1, x.end());
  } else if (op == OpKind::Shape) {
    out = {static_cast<int64_t>(inShape(g, n, 0).size())};
    dt = DType::I64;
  } else {
    fail("{}: unsupported operator", where(n));
  }
  for (int64_t d : out)
    NPUC_ASSERT(d >= 0, "inferred dimensions are non-negative");
  Value &v = g.value(n.outputs.at(0));
  v.shape = out;
  v.dtype = dt;
  if (op == OpKind::Dropout && n.outputs.size() > 1) {
    g.value(n.outputs[1]).shape = out;
    g.value(n.outputs[1]).dtype = DType::Bool;
  }
}

} // namespace npuc::graph
