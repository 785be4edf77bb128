// ShapeData.cpp - shape rules of the data-movement operators (reshapes, transposes, slicing,
// joining, gathering, resampling) and of the ops that compute a tensor from shapes or
// constants alone (ShapeInternal.h).
#include "graph/PadMode.h"
#include "graph/ShapeInference.h"
#include "graph/ShapeInternal.h"

#include "support/Error.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace npuc::graph::shape {

namespace {

const std::vector<int64_t> &constI64(const Graph &g, const Node &n, size_t i) {
  if (i >= n.inputs.size() || n.inputs[i] == kNoValue || !g.value(n.inputs[i]).i64)
    fail("{}: input {} must be a constant int64 tensor", where(n), i);
  return *g.value(n.inputs[i]).i64;
}

} // namespace

OutTypes inferFlatten(const Graph &g, Node &n) {
  const Shape &x = inShape(g, n, 0);
  int64_t axis = n.attrInt("axis", 1);
  axis = axis < 0 ? axis + static_cast<int64_t>(x.size()) : axis;
  if (axis < 0 || axis > static_cast<int64_t>(x.size()))
    fail("{}: axis out of range", where(n));
  return {{{numElements(Shape(x.begin(), x.begin() + axis)),
            numElements(Shape(x.begin() + axis, x.end()))},
           firstInputType(g, n)}};
}

OutTypes inferReshape(const Graph &g, Node &n) {
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
    // A hostile model's target shape may multiply past int64 (a fuzzer's Reshape to
    // [140723261575518, 3560376980413087749, 5]): the product is checked, not wrapped.
    if (__builtin_mul_overflow(known, d, &known))
      fail("{}: target shape [{}] has more elements than int64 holds", where(n),
           fmt::join(spec, ", "));
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
  return {{out, firstInputType(g, n)}};
}

OutTypes inferSqueeze(const Graph &g, Node &n) {
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
  return {{out, firstInputType(g, n)}};
}

OutTypes inferUnsqueeze(const Graph &g, Node &n) {
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
  return {{out, firstInputType(g, n)}};
}

// Stores the default perm (the reversed axes) so that every later reader sees it explicitly.
OutTypes inferTranspose(const Graph &g, Node &n) {
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
  Shape out;
  for (int64_t p : perm)
    out.push_back(x[static_cast<size_t>(p)]);
  return {{out, firstInputType(g, n)}};
}

OutTypes inferConcat(const Graph &g, Node &n) {
  Shape out = inShape(g, n, 0);
  int64_t axis = normAxis(n, n.attrInt("axis", 0), out.size());
  for (size_t i = 1; i < n.inputs.size(); ++i) {
    const Shape &s = inShape(g, n, i);
    for (size_t d = 0; d < out.size(); ++d)
      if (s.size() != out.size() || (static_cast<int64_t>(d) != axis && s[d] != out[d]))
        fail("{}: input {} shape {} does not match {} outside axis {}", where(n), i,
             shapeToString(s), shapeToString(out), axis);
    out[static_cast<size_t>(axis)] += s[static_cast<size_t>(axis)];
    requireSameType(g, n, 0, i);
  }
  return {{out, firstInputType(g, n)}};
}

OutTypes inferSplit(const Graph &g, Node &n) {
  const Shape &x = inShape(g, n, 0);
  int64_t axis = axisAttr(n, "axis", x.size());
  auto split = n.attrInts("split");
  if (split.size() != n.outputs.size())
    fail("{}: {} split sizes for {} outputs", where(n), split.size(), n.outputs.size());
  OutTypes outs;
  int64_t total = 0;
  for (int64_t s : split) {
    if (s < 0)
      fail("{}: negative split size {}", where(n), s);
    Shape o = x;
    o[static_cast<size_t>(axis)] = s;
    outs.push_back({o, inType(g, n, 0)});
    total += s;
  }
  if (total != x[static_cast<size_t>(axis)])
    fail("{}: split sizes sum to {} but axis {} has extent {}", where(n), total, axis,
         x[static_cast<size_t>(axis)]);
  return outs;
}

OutTypes inferPad(const Graph &g, Node &n) {
  const Shape &x = inShape(g, n, 0);
  auto pads = n.attrInts("pads");
  if (pads.size() != 2 * x.size())
    fail("{}: pads has {} entries, expected {}", where(n), pads.size(), 2 * x.size());
  const PadMode mode = padModeOf(n);
  Shape out = x;
  for (size_t i = 0; i < x.size(); ++i) {
    const int64_t b = pads[i], e = pads[i + x.size()];
    // A hostile model's pads may be anything (a fuzzer's INT64_MIN): bounded first, so that the
    // sums below and padAxis's negations stay in range.
    constexpr int64_t kMaxPad = int64_t{1} << 62;
    if (b < -kMaxPad || b > kMaxPad || e < -kMaxPad || e > kMaxPad ||
        __builtin_add_overflow(out[i], b + e, &out[i]))
      fail("{}: pads {} and {} on axis {} (extent {}) are beyond 2^62", where(n), b, e, i, x[i]);
    const PadAxis a = padAxis(x[i], b, e);
    const int64_t kept = a.last - a.first + 1;
    if (kept < 0)
      fail("{}: pads {} and {} crop {} elements from axis {} of extent {}", where(n), b, e,
           x[i] - kept, i, x[i]);
    if (out[i] < 1)
      fail("{}: pads {} and {} leave axis {} (extent {}) with extent {}; npuc needs positive "
           "extents",
           where(n), b, e, i, x[i], out[i]);
    if (mode == PadMode::Constant || (b <= 0 && e <= 0))
      continue;
    const char *name = mode == PadMode::Edge ? "edge" : "reflect";
    if (kept == 0)
      fail("{}: mode={} pads axis {}, which the negative pads crop to nothing", where(n), name, i);
    if (mode == PadMode::Reflect && std::max(b, e) >= kept)
      fail("{}: mode=reflect pads axis {} by {}, but a reflect pad must be smaller than the "
           "axis extent {}{}",
           where(n), i, std::max(b, e), kept, kept == x[i] ? "" : " (after cropping)");
  }
  return {{out, firstInputType(g, n)}};
}

OutTypes inferSlice(const Graph &g, Node &n) {
  const Shape &x = inShape(g, n, 0);
  auto b = n.attrInts("starts"), e = n.attrInts("ends"), st = n.attrInts("steps");
  if (b.size() != x.size() || e.size() != x.size() || st.size() != x.size())
    fail("{}: starts/ends/steps must have one entry per axis", where(n));
  Shape o;
  for (size_t d = 0; d < x.size(); ++d) {
    if (st[d] == 0)
      fail("{}: step 0 on axis {}", where(n), d);
    int64_t len =
        st[d] > 0 ? (e[d] - b[d] + st[d] - 1) / st[d] : (b[d] - e[d] - st[d] - 1) / -st[d];
    o.push_back(std::max<int64_t>(len, 0));
  }
  return {{o, inType(g, n, 0)}};
}

OutTypes inferExpand(const Graph &g, Node &n) {
  for (int64_t d : n.attrInts("shape"))
    if (d < 0)
      fail("{}: shape entry {} is negative", where(n), d);
  return {{broadcastShapes(inShape(g, n, 0), n.attrInts("shape"), where(n)), inType(g, n, 0)}};
}

OutTypes inferTile(const Graph &g, Node &n) {
  Shape x = inShape(g, n, 0);
  auto r = n.attrInts("repeats");
  if (r.size() != x.size())
    fail("{}: repeats has {} entries for rank {}", where(n), r.size(), x.size());
  for (size_t d = 0; d < x.size(); ++d) {
    if (r[d] < 0)
      fail("{}: negative repeat {}", where(n), r[d]);
    if (__builtin_mul_overflow(x[d], r[d], &x[d]))
      fail("{}: repeats [{}] make axis {} longer than int64 holds", where(n), fmt::join(r, ", "),
           d);
  }
  return {{x, inType(g, n, 0)}};
}

OutTypes inferResize(const Graph &g, Node &n) {
  Shape s = n.attrInts("sizes");
  if (s.size() != inShape(g, n, 0).size())
    fail("{}: output sizes have rank {}, input has rank {}", where(n), s.size(),
         inShape(g, n, 0).size());
  for (int64_t d : s)
    if (d < 1)
      fail("{}: attribute sizes = [{}] must be positive", where(n), fmt::join(s, ", "));
  return {{s, floatResultType(g, n)}};
}

namespace {

// DepthToSpace/SpaceToDepth: a 4-D input and a positive block size.
int64_t blockSize(const Graph &g, const Node &n) {
  int64_t b = n.attrInt("blocksize", 0);
  if (inShape(g, n, 0).size() != 4 || b <= 0)
    fail("{}: needs a 4-D input and a positive blocksize", where(n));
  return b;
}

} // namespace

OutTypes inferDepthToSpace(const Graph &g, Node &n) {
  int64_t b = blockSize(g, n);
  const Shape &x = inShape(g, n, 0);
  if (x[1] % (b * b))
    fail("{}: channels {} not divisible by blocksize^2 = {}", where(n), x[1], b * b);
  return {{{x[0], x[1] / (b * b), x[2] * b, x[3] * b}, inType(g, n, 0)}};
}

OutTypes inferSpaceToDepth(const Graph &g, Node &n) {
  int64_t b = blockSize(g, n);
  const Shape &x = inShape(g, n, 0);
  if (x[2] % b || x[3] % b)
    fail("{}: spatial extent {}x{} not divisible by blocksize {}", where(n), x[2], x[3], b);
  return {{{x[0], x[1] * b * b, x[2] / b, x[3] / b}, inType(g, n, 0)}};
}

OutTypes inferGather(const Graph &g, Node &n) {
  const Shape &x = inShape(g, n, 0);
  const Shape &idx = inShape(g, n, 1);
  int64_t axis = normAxis(n, n.attrInt("axis", 0), x.size());
  Shape out(x.begin(), x.begin() + axis);
  out.insert(out.end(), idx.begin(), idx.end());
  out.insert(out.end(), x.begin() + axis + 1, x.end());
  return {{out, firstInputType(g, n)}};
}

OutTypes inferGatherElements(const Graph &g, Node &n) {
  const Shape &x = inShape(g, n, 0), &idx = inShape(g, n, 1);
  int64_t axis = axisAttr(n, "axis", x.size());
  if (idx.size() != x.size())
    fail("{}: indices rank {} differs from data rank {}", where(n), idx.size(), x.size());
  for (size_t d = 0; d < x.size(); ++d)
    if (static_cast<int64_t>(d) != axis && idx[d] > x[d])
      fail("{}: indices shape {} exceeds data shape {}", where(n), shapeToString(idx),
           shapeToString(x));
  return {{idx, inType(g, n, 0)}};
}

OutTypes inferShapeOf(const Graph &g, Node &n) {
  return {{{static_cast<int64_t>(inShape(g, n, 0).size())}, DType::I64}};
}

OutTypes inferSize(const Graph &, Node &) {
  return {{{}, DType::I64}};
}

OutTypes inferConstantOfShape(const Graph &g, Node &n) {
  const Value &s = g.value(n.inputs.at(0));
  if (!s.i64)
    fail("{}: the shape input must be a constant int64 tensor", where(n));
  for (int64_t d : *s.i64)
    if (d < 0)
      fail("{}: negative dimension {}", where(n), d);
  return {{Shape(*s.i64), static_cast<DType>(n.attrInt("dtype", 0))}};
}

OutTypes inferRange(const Graph &g, Node &n) {
  double v[3];
  for (size_t i = 0; i < 3; ++i) {
    const Value &x = g.value(n.inputs.at(i));
    if (!x.isConstant() || numElements(x.shape) != 1)
      fail("{}: input {} must be a constant scalar (Range is folded at compile time)", where(n), i);
    v[i] = x.f32 ? (*x.f32)[0] : static_cast<double>((*x.i64)[0]);
  }
  if (v[2] == 0)
    fail("{}: delta is 0", where(n));
  auto len = static_cast<int64_t>(std::max(std::ceil((v[1] - v[0]) / v[2]), 0.0));
  return {{{len}, inType(g, n, 0)}};
}

OutTypes inferEyeLike(const Graph &g, Node &n) {
  const Shape &x = inShape(g, n, 0);
  if (x.size() != 2)
    fail("{}: input must be 2-D", where(n));
  return {{x, n.hasAttr("dtype") ? castTarget(n, n.attrInt("dtype", 1)) : inType(g, n, 0)}};
}

} // namespace npuc::graph::shape
