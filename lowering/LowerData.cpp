// LowerData.cpp - CPU lowering of the data-movement ops (LowerInternal.h): the views, Transpose,
// Concat/Split, Pad, Slice, Expand, Tile, Resize (nearest/linear/cubic), DepthToSpace/SpaceToDepth,
// Gather/GatherElements, Trilu, EyeLike and Cast. Most are a loop nest over the output storing a
// load of the input at an index computed from the output coordinates; indices read from tensors
// or computed in float are clamped so every load stays in bounds.
#include "graph/ExtOps.h"
#include "graph/PadMode.h"
#include "lowering/LowerInternal.h"
#include "support/Error.h"
#include "tir/Simplify.h"

#include <array>
#include <cmath>

namespace npuc::tir::lower {
namespace {

const DataType kF = DataType::Float(32);
const DataType kI = DataType::Int(64);

// out[i] = in[src(i)] over the whole output.
template <typename F> Stmt gatherNest(LowerCtx &c, const Buffer &in, const Buffer &out, F src) {
  std::vector<Var> iv = c.vars(out->shape.size(), "i");
  std::vector<Expr> idx = asExprs(iv);
  std::vector<Expr> s = src(idx);
  return nest(iv, out->shape,
              store(out, load(in, flatIndex(s, in->shape)), flatIndex(idx, out->shape)));
}

// out[i] = value(in, out, i) over the whole output, i the output coordinates.
template <typename F> Stmt positionNest(LowerCtx &c, const graph::Node &n, F value) {
  Buffer in = c.input(n, 0), out = c.output(n, 0);
  std::vector<Var> iv = c.vars(out->shape.size(), "i");
  std::vector<Expr> idx = asExprs(iv);
  Expr v = value(in, out, idx);
  return nest(iv, out->shape, store(out, v, flatIndex(idx, out->shape)));
}

// Resize's source coordinate in fp32, following graph::resizeSourceCoord's modes.
Expr resizeCoord(const graph::Node &n, size_t d, const Expr &o, int64_t in, int64_t out) {
  std::string mode = n.attrString("coordinate_transformation_mode", "half_pixel");
  auto scales = std::get<std::vector<double>>(n.attrs.at("scales"));
  Expr x = cast(kF, o), s = f32(scales.at(d));
  if (mode == "half_pixel")
    return (x + f32(0.5)) / s - f32(0.5);
  if (mode == "pytorch_half_pixel")
    return out > 1 ? (x + f32(0.5)) / s - f32(0.5) : f32(0);
  // align_corners and tf_crop_and_resize: the resized length is scale * in, as in
  // graph::resizeSourceCoord (ONNX's reference).
  const double resized = scales.at(d) * static_cast<double>(in), last = static_cast<double>(in - 1);
  if (mode == "align_corners")
    return resized == 1 ? f32(0) : x * f32(last / (resized - 1));
  if (mode == "tf_crop_and_resize") {
    const auto &roi = std::get<std::vector<double>>(n.attrs.at("roi"));
    const double start = roi.at(d), span = roi.at(d + roi.size() / 2) - start;
    if (resized == 1)
      return f32(start * last + span * last / 2);
    return x * f32(span * last / (resized - 1)) + f32(start * last);
  }
  if (mode == "asymmetric")
    return x / s;
  if (mode == "tf_half_pixel_for_nn")
    return (x + f32(0.5)) / s;
  fail("node '{}' (Resize): coordinate_transformation_mode={} not supported", n.name, mode);
}

bool tfCrop(const graph::Node &n) {
  return n.attrString("coordinate_transformation_mode", "") == "tf_crop_and_resize";
}

// An axis Resize leaves alone: the same extent at scale 1 reads the output coordinate itself
// (not under tf_crop_and_resize, whose roi moves even such an axis).
bool identityAxis(const graph::Node &n, size_t d, int64_t in, int64_t out) {
  return in == out && std::get<std::vector<double>>(n.attrs.at("scales"))[d] == 1.0 && !tfCrop(n);
}

// tf_crop_and_resize: extrapolation_value where the source coordinate leaves the input along
// any axis (graph::resizeOutside), else v.
Expr cropped(const graph::Node &n, const Buffer &in, const Buffer &out,
             const std::vector<Expr> &idx, Expr v) {
  if (!tfCrop(n))
    return v;
  Expr outside;
  for (size_t d = 0; d < idx.size(); ++d) {
    int64_t I = in->shape[d];
    Expr x = resizeCoord(n, d, idx[d], I, out->shape[d]);
    Expr o = (x < f32(0)) || (x > f32(static_cast<double>(I - 1)));
    outside = outside.defined() ? outside || o : o;
  }
  return select(outside, f32(n.attrFloat("extrapolation_value", 0.0)), v);
}

Expr clampI(Expr e, int64_t hi) {
  return max(min(std::move(e), imm(hi - 1)), imm(0));
}

} // namespace

// Reshape-like ops keep the row-major element order: a flat copy.
Stmt lowerCopy(LowerCtx &c, const graph::Node &n) {
  Buffer in = c.input(n, 0), out = c.output(n, 0);
  if (in->numElements() != out->numElements())
    fail("node '{}' ({}): {} input elements but {} output elements", n.name, n.kind,
         in->numElements(), out->numElements());
  Var i = c.var("i");
  return forLoop(i, imm(0), imm(out->numElements()), store(out, load(in, i), i));
}

Stmt lowerTranspose(LowerCtx &c, const graph::Node &n) {
  Buffer in = c.input(n, 0), out = c.output(n, 0);
  size_t r = in->shape.size();
  std::vector<int64_t> perm = n.attrInts("perm");
  if (perm.empty())
    for (size_t d = 0; d < r; ++d)
      perm.push_back(static_cast<int64_t>(r - 1 - d));
  if (perm.size() != r)
    fail("node '{}' (Transpose): perm has {} entries for rank {}", n.name, perm.size(), r);
  std::vector<Var> iv = c.vars(r, "i");
  std::vector<Expr> inIdx(r);
  for (size_t d = 0; d < r; ++d) {
    int64_t p = perm[d];
    if (p < 0 || p >= static_cast<int64_t>(r) || inIdx[static_cast<size_t>(p)].defined())
      fail("node '{}' (Transpose): perm is not a permutation of 0..{}", n.name, r - 1);
    inIdx[static_cast<size_t>(p)] = iv[d];
  }
  return nest(
      iv, out->shape,
      store(out, load(in, flatIndex(inIdx, in->shape)), flatIndex(asExprs(iv), out->shape)));
}

Stmt lowerConcat(LowerCtx &c, const graph::Node &n) {
  Buffer out = c.output(n, 0);
  size_t axis = static_cast<size_t>(normAxis(n, n.attrInt("axis", 0), out->shape.size()));
  std::vector<Stmt> parts;
  int64_t pos = 0;
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    Buffer in = c.input(n, k);
    std::vector<Var> iv = c.vars(in->shape.size(), "i");
    std::vector<Expr> outIdx = asExprs(iv);
    outIdx[axis] = outIdx[axis] + pos;
    parts.push_back(nest(
        iv, in->shape,
        store(out, load(in, flatIndex(asExprs(iv), in->shape)), flatIndex(outIdx, out->shape))));
    pos += in->shape[axis];
  }
  if (pos != out->shape[axis])
    fail("node '{}' (Concat): inputs sum to {} along axis {}, output has {}", n.name, pos, axis,
         out->shape[axis]);
  return seq(parts);
}

// Pad: each output position reads its source per axis (graph/PadMode.h); constant mode selects
// the value outside the kept input range, edge clamps to it, reflect mirrors into it.
Stmt lowerPad(LowerCtx &c, const graph::Node &n) {
  Buffer in = c.input(n, 0), out = c.output(n, 0);
  size_t r = in->shape.size();
  std::vector<int64_t> pads = n.attrInts("pads");
  if (pads.size() != 2 * r)
    fail("node '{}' (Pad): pads has {} entries for rank {}", n.name, pads.size(), r);
  const graph::PadMode mode = graph::padModeOf(n);
  std::vector<Var> iv = c.vars(r, "i");
  std::vector<Expr> inIdx;
  Expr inside = IntImmNode::make(1, DataType::Bool());
  for (size_t d = 0; d < r; ++d) {
    const graph::PadAxis a = graph::padAxis(in->shape[d], pads[d], pads[d + r]);
    Expr x = iv[d] - pads[d];
    if (mode == graph::PadMode::Constant) {
      inside = inside && (x >= a.first) && (x < a.last + 1);
      inIdx.push_back(clampIdx(x, in->shape[d]));
    } else if (pads[d] <= 0 && pads[d + r] <= 0) { // cropped or untouched: always inside
      inIdx.push_back(x);
    } else if (mode == graph::PadMode::Edge) {
      inIdx.push_back(max(min(x, imm(a.last)), imm(a.first)));
    } else {
      inIdx.push_back(
          select(x < a.first, imm(2 * a.first) - x, select(x > a.last, imm(2 * a.last) - x, x)));
    }
  }
  Expr v = load(in, flatIndex(inIdx, in->shape));
  if (mode == graph::PadMode::Constant) {
    // The padding value: a run-time scalar input 1 (ONNX's constant_value when it is not a
    // constant), else the `value` attribute.
    Expr fill = n.inputs.size() > 1 ? load(c.input(n, 1), imm(0)) : f32(n.attrFloat("value", 0.0));
    v = select(simplify(inside), v, fill);
  }
  return nest(iv, out->shape, store(out, v, flatIndex(asExprs(iv), out->shape)));
}

Stmt lowerSplit(LowerCtx &c, const graph::Node &n) {
  Buffer in = c.input(n, 0);
  auto axis = static_cast<size_t>(normAxis(n, n.attrInt("axis", 0), in->shape.size()));
  std::vector<Stmt> parts;
  int64_t pos = 0;
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    Buffer out = c.output(n, k);
    parts.push_back(gatherNest(c, in, out, [&](std::vector<Expr> i) {
      i[axis] = i[axis] + pos;
      return i;
    }));
    pos += out->shape[axis];
  }
  return seq(parts);
}

// Keys' cubic kernel at distance x in [0, 2] (graph::resizeCubicWeight), as a float expression.
Expr cubicWeight(double a, const Expr &x) {
  Expr near = ((f32(a + 2) * x - f32(a + 3)) * x * x) + f32(1);
  Expr far = ((f32(a) * x - f32(5 * a)) * x + f32(8 * a)) * x - f32(4 * a);
  return select(x <= f32(1), near, select(x < f32(2), far, f32(0)));
}

// Cubic Resize (graph/RefData.cpp cubicResize): 4 taps along each axis whose extent or scale
// changes, 4^m terms for m such axes.
Stmt lowerResizeCubic(const graph::Node &n, const Buffer &in, const Buffer &out,
                      const std::vector<Var> &iv) {
  const size_t r = out->shape.size();
  const double a = n.attrFloat("cubic_coeff_a", -0.75);
  const bool exclude = n.attrInt("exclude_outside", 0) != 0;
  std::vector<Expr> idx = asExprs(iv);
  std::vector<size_t> axes;
  std::vector<std::array<Expr, 4>> src(r), w(r);
  for (size_t d = 0; d < r; ++d) {
    int64_t I = in->shape[d], O = out->shape[d];
    if (identityAxis(n, d, I, O)) {
      src[d].fill(idx[d]);
      continue;
    }
    Expr x = resizeCoord(n, d, idx[d], I, O);
    Expr f = call(kF, "floor", {x});
    Expr t = x - f, sum;
    for (int k = 0; k < 4; ++k) {
      Expr s = cast(kI, f) + (k - 1);
      w[d][k] = cubicWeight(a, call(kF, "fabs", {t + f32(1 - k)}));
      if (exclude)
        w[d][k] = select((s >= 0) && (s < I), w[d][k], f32(0));
      sum = sum.defined() ? sum + w[d][k] : w[d][k];
      src[d][k] = clampI(s, I);
    }
    if (exclude)
      for (Expr &e : w[d])
        e = e / sum;
    axes.push_back(d);
  }
  Expr acc;
  for (int64_t tap = 0; tap < (int64_t{1} << (2 * axes.size())); ++tap) {
    std::vector<Expr> s(r);
    Expr wt;
    for (size_t d = 0; d < r; ++d)
      s[d] = src[d][0];
    for (size_t j = 0; j < axes.size(); ++j) {
      auto k = static_cast<size_t>((tap >> (2 * j)) & 3);
      s[axes[j]] = src[axes[j]][k];
      wt = wt.defined() ? wt * w[axes[j]][k] : w[axes[j]][k];
    }
    Expr term = load(in, flatIndex(s, in->shape));
    term = wt.defined() ? term * wt : term;
    acc = acc.defined() ? acc + term : term;
  }
  return nest(iv, out->shape,
              store(out, cropped(n, in, out, idx, acc), flatIndex(idx, out->shape)));
}

Stmt lowerResize(LowerCtx &c, const graph::Node &n) {
  Buffer in = c.input(n, 0), out = c.output(n, 0);
  size_t r = out->shape.size();
  std::vector<Var> iv = c.vars(r, "i");
  std::vector<Expr> idx = asExprs(iv);
  Expr oAt = flatIndex(idx, out->shape);
  if (n.attrString("mode", "nearest") == "cubic")
    return lowerResizeCubic(n, in, out, iv);
  if (n.attrString("mode", "nearest") != "linear") {
    std::string nm = n.attrString("nearest_mode", "round_prefer_floor");
    std::vector<Expr> src;
    for (size_t d = 0; d < r; ++d) {
      int64_t I = in->shape[d], O = out->shape[d];
      if (identityAxis(n, d, I, O) &&
          n.attrString("coordinate_transformation_mode", "") != "tf_half_pixel_for_nn") {
        src.push_back(idx[d]);
        continue;
      }
      Expr x = resizeCoord(n, d, idx[d], I, O);
      Expr f = call(kF, "floor", {x});
      Expr half = x - f == f32(0.5);
      Expr rr = nm == "floor"               ? f
                : nm == "ceil"              ? call(kF, "ceil", {x})
                : nm == "round_prefer_ceil" ? select(half, f + f32(1), call(kF, "round", {x}))
                                            : select(half, f, call(kF, "round", {x}));
      src.push_back(clampI(cast(kI, rr), I));
    }
    return nest(iv, out->shape,
                store(out, cropped(n, in, out, idx, load(in, flatIndex(src, in->shape))), oAt));
  }
  // Linear: interpolate along the axes whose extent changes (2^m corners, m usually 2).
  std::vector<size_t> lin;
  std::vector<Expr> lo(r), hi(r), w(r);
  for (size_t d = 0; d < r; ++d) {
    int64_t I = in->shape[d], O = out->shape[d];
    if (identityAxis(n, d, I, O)) {
      lo[d] = hi[d] = idx[d];
      continue;
    }
    if (I == 1) {
      lo[d] = hi[d] = imm(0);
      continue;
    }
    Expr x = max(min(resizeCoord(n, d, idx[d], I, O), f32(static_cast<double>(I - 1))), f32(0));
    Expr f = call(kF, "floor", {x});
    lo[d] = clampI(cast(kI, f), I);
    hi[d] = clampI(cast(kI, f) + 1, I);
    w[d] = x - f;
    lin.push_back(d);
  }
  Expr acc;
  for (int64_t corner = 0; corner < (int64_t{1} << lin.size()); ++corner) {
    std::vector<Expr> s = lo;
    Expr wt;
    for (size_t j = 0; j < lin.size(); ++j) {
      size_t d = lin[j];
      bool up = (corner >> j) & 1;
      s[d] = up ? hi[d] : lo[d];
      Expr wj = up ? w[d] : f32(1) - w[d];
      wt = wt.defined() ? wt * wj : wj;
    }
    Expr term = load(in, flatIndex(s, in->shape));
    term = wt.defined() ? term * wt : term;
    acc = acc.defined() ? acc + term : term;
  }
  return nest(iv, out->shape, store(out, cropped(n, in, out, idx, acc), oAt));
}

Stmt lowerSlice(LowerCtx &c, const graph::Node &n) {
  Buffer in = c.input(n, 0), out = c.output(n, 0);
  return gatherNest(c, in, out, [&](const std::vector<Expr> &i) {
    std::vector<Expr> s;
    auto b = n.attrInts("starts"), st = n.attrInts("steps");
    for (size_t d = 0; d < i.size(); ++d)
      s.push_back(i[d] * st[d] + b[d]);
    return s;
  });
}

namespace {

// Expand (tile = false) and Tile: input axes of extent 1 broadcast, others repeat.
Stmt repeatNest(LowerCtx &c, const graph::Node &n, bool tile) {
  Buffer in = c.input(n, 0), out = c.output(n, 0);
  const Shape &xs = in->shape;
  return gatherNest(c, in, out, [&](const std::vector<Expr> &i) {
    std::vector<Expr> s;
    size_t off = i.size() - xs.size();
    for (size_t d = 0; d < xs.size(); ++d)
      s.push_back(xs[d] == 1 ? imm(0) : tile ? floormod(i[d + off], xs[d]) : i[d + off]);
    return s;
  });
}

} // namespace

Stmt lowerExpand(LowerCtx &c, const graph::Node &n) {
  return repeatNest(c, n, false);
}

Stmt lowerTile(LowerCtx &c, const graph::Node &n) {
  return repeatNest(c, n, true);
}

Stmt lowerDepthToSpace(LowerCtx &c, const graph::Node &n) {
  Buffer in = c.input(n, 0), out = c.output(n, 0);
  return gatherNest(c, in, out, [&](const std::vector<Expr> &i) -> std::vector<Expr> {
    int64_t bs = n.attrInt("blocksize", 1), C = out->shape[1];
    Expr bh = floormod(i[2], bs), bw = floormod(i[3], bs);
    Expr ch = n.attrString("mode", "DCR") == "CRD" ? (i[1] * bs + bh) * bs + bw
                                                   : (bh * bs + bw) * C + i[1];
    return {i[0], ch, floordiv(i[2], bs), floordiv(i[3], bs)};
  });
}

Stmt lowerSpaceToDepth(LowerCtx &c, const graph::Node &n) {
  Buffer in = c.input(n, 0), out = c.output(n, 0);
  return gatherNest(c, in, out, [&](const std::vector<Expr> &i) -> std::vector<Expr> {
    int64_t bs = n.attrInt("blocksize", 1), C = in->shape[1];
    Expr blk = floordiv(i[1], C);
    return {i[0], floormod(i[1], C), i[2] * bs + floordiv(blk, bs), i[3] * bs + floormod(blk, bs)};
  });
}

Stmt lowerGather(LowerCtx &c, const graph::Node &n) {
  // out[pre, j..., post] = x[pre, idx[j...], post]; indices are fp32 integers at runtime.
  Buffer in = c.input(n, 0), ib = c.input(n, 1), out = c.output(n, 0);
  auto axis = static_cast<size_t>(normAxis(n, n.attrInt("axis", 0), in->shape.size()));
  size_t q = ib->shape.size();
  std::vector<Var> iv = c.vars(out->shape.size(), "i");
  std::vector<Expr> idx = asExprs(iv);
  Expr k = cast(kI, load(ib, flatIndex(std::vector<Expr>(idx.begin() + static_cast<long>(axis),
                                                         idx.begin() + static_cast<long>(axis + q)),
                                       ib->shape)));
  k = select(k < 0, k + in->shape[axis], k);
  std::vector<Expr> s(idx.begin(), idx.begin() + static_cast<long>(axis));
  s.push_back(clampI(k, in->shape[axis]));
  s.insert(s.end(), idx.begin() + static_cast<long>(axis + q), idx.end());
  return nest(iv, out->shape,
              store(out, load(in, flatIndex(s, in->shape)), flatIndex(idx, out->shape)));
}

Stmt lowerGatherElements(LowerCtx &c, const graph::Node &n) {
  return positionNest(c, n, [&](const Buffer &in, const Buffer &, const std::vector<Expr> &idx) {
    Buffer ib = c.input(n, 1);
    auto axis = static_cast<size_t>(normAxis(n, n.attrInt("axis", 0), in->shape.size()));
    Expr k = cast(kI, load(ib, flatIndex(idx, ib->shape)));
    k = select(k < 0, k + in->shape[axis], k);
    std::vector<Expr> s = idx;
    s[axis] = clampI(k, in->shape[axis]);
    return load(in, flatIndex(s, in->shape));
  });
}

Stmt lowerTrilu(LowerCtx &c, const graph::Node &n) {
  return positionNest(c, n, [&](const Buffer &in, const Buffer &out, const std::vector<Expr> &idx) {
    size_t r = idx.size();
    Expr diff = idx[r - 1] - idx[r - 2];
    // A run-time k (input 1) is an integer held in fp32 in compiled code: compare in fp32,
    // exact for any |k| and extent below 2^24.
    if (n.inputs.size() > 1) {
      Expr k = cast(kF, load(c.input(n, 1), imm(0))), d = cast(kF, diff);
      return select(n.attrInt("upper", 1) ? d >= k : d <= k, load(in, flatIndex(idx, out->shape)),
                    f32(0));
    }
    int64_t k = n.attrInt("k", 0);
    return select(n.attrInt("upper", 1) ? diff >= k : diff <= k,
                  load(in, flatIndex(idx, out->shape)), f32(0));
  });
}

// EyeLike reads only its input's shape, which is the output's.
Stmt lowerEyeLike(LowerCtx &c, const graph::Node &n) {
  return positionNest(c, n, [&](const Buffer &, const Buffer &, const std::vector<Expr> &idx) {
    int64_t k = n.attrInt("k", 0);
    size_t r = idx.size();
    Expr diff = idx[r - 1] - idx[r - 2];
    return select(diff == k, f32(1), f32(0));
  });
}

Stmt lowerCast(LowerCtx &c, const graph::Node &n) {
  return positionNest(c, n, [&](const Buffer &in, const Buffer &out, const std::vector<Expr> &idx) {
    graph::DType to = c.g.value(n.outputs[0]).dtype;
    Expr x = load(in, flatIndex(idx, out->shape));
    if (to == graph::DType::Bool)
      return select(x != f32(0), f32(1), f32(0));
    if (isFloatType(to))
      return x;
    // Integers: truncation toward zero, then ONNX's wrap-around for the 8- and 16-bit types
    // (exact in fp32 below 2^24; wider results are checked at run time, Runtime.cpp).
    Expr t = select(x < f32(0), call(kF, "ceil", {x}), call(kF, "floor", {x}));
    const int bits = 8 * dtypeSize(to);
    if (bits > 16)
      return t;
    const float range = static_cast<float>(1 << bits);
    const float lo = isSignedInt(to) ? -range / 2 : 0.0f;
    return t - call(kF, "floor", {(t - f32(lo)) / f32(range)}) * f32(range);
  });
}

} // namespace npuc::tir::lower
