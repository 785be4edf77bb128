// LowerData.cpp - CPU lowering of the extended data-movement and window ops (graph/ExtOps.h):
// Split, Slice, Expand, Tile, Resize (nearest/linear), DepthToSpace/SpaceToDepth,
// GatherElements, Trilu, EyeLike, Cast, ConvTranspose and LpPool. Most are a loop nest over the
// output storing a load of the input at an index computed from the output coordinates; indices
// read from tensors or computed in float are clamped so every load stays in bounds.
#include "graph/ExtOps.h"
#include "lowering/LowerInternal.h"
#include "support/Error.h"

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

// Resize's source coordinate in fp32, following graph::resizeSourceCoord's modes.
Expr resizeCoord(const graph::Node &n, size_t d, const Expr &o, int64_t in, int64_t out) {
  std::string mode = n.attrString("coordinate_transformation_mode", "half_pixel");
  auto scales = std::get<std::vector<double>>(n.attrs.at("scales"));
  Expr x = cast(kF, o), s = f32(scales.at(d));
  if (mode == "half_pixel")
    return (x + f32(0.5)) / s - f32(0.5);
  if (mode == "pytorch_half_pixel")
    return out > 1 ? (x + f32(0.5)) / s - f32(0.5) : f32(0);
  if (mode == "align_corners")
    return out == 1 ? f32(0) : x * f32(static_cast<double>(in - 1) / static_cast<double>(out - 1));
  if (mode == "asymmetric")
    return x / s;
  if (mode == "tf_half_pixel_for_nn")
    return (x + f32(0.5)) / s;
  fail("node '{}' (Resize): coordinate_transformation_mode={} not supported", n.name, mode);
}

Expr clampI(Expr e, int64_t hi) {
  return max(min(std::move(e), imm(hi - 1)), imm(0));
}

Stmt lowerResize(LowerCtx &c, const graph::Node &n) {
  Buffer in = c.input(n, 0), out = c.output(n, 0);
  size_t r = out->shape.size();
  std::vector<Var> iv = c.vars(r, "i");
  std::vector<Expr> idx = asExprs(iv);
  Expr oAt = flatIndex(idx, out->shape);
  if (n.attrString("mode", "nearest") != "linear") {
    std::string nm = n.attrString("nearest_mode", "round_prefer_floor");
    std::vector<Expr> src;
    for (size_t d = 0; d < r; ++d) {
      int64_t I = in->shape[d], O = out->shape[d];
      if (I == O && std::get<std::vector<double>>(n.attrs.at("scales"))[d] == 1.0 &&
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
    return nest(iv, out->shape, store(out, load(in, flatIndex(src, in->shape)), oAt));
  }
  // Linear: interpolate along the axes whose extent changes (2^m corners, m usually 2).
  std::vector<size_t> lin;
  std::vector<Expr> lo(r), hi(r), w(r);
  for (size_t d = 0; d < r; ++d) {
    int64_t I = in->shape[d], O = out->shape[d];
    if (I == O && std::get<std::vector<double>>(n.attrs.at("scales"))[d] == 1.0) {
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
  return nest(iv, out->shape, store(out, acc, oAt));
}

Stmt lowerConvTranspose(LowerCtx &c, const graph::Node &n) {
  Buffer x = c.input(n, 0), w = c.input(n, 1), out = c.output(n, 0);
  auto s = n.attrInts("strides", {1, 1}), d = n.attrInts("dilations", {1, 1});
  auto p = n.attrInts("pads", {0, 0, 0, 0});
  int64_t group = n.attrInt("group", 1);
  int64_t C = x->shape[1], H = x->shape[2], W = x->shape[3];
  int64_t mpg = w->shape[1], KH = w->shape[2], KW = w->shape[3], cpg = C / group;
  std::vector<Var> ov = c.vars(4, "o");
  Var ci = c.var("c"), kh = c.var("kh"), kw = c.var("kw");
  Expr oAt = flatIndex(asExprs(ov), out->shape);
  // Gather form: output (oh, ow) receives input (ih, iw) through tap (kh, kw) when
  // ih * s = oh + p - kh * d exactly.
  Expr th = ov[2] + p[0] - kh * d[0], tw = ov[3] + p[1] - kw * d[1];
  Expr ih = floordiv(th, s[0]), iw = floordiv(tw, s[1]);
  Expr ok =
      th >= 0 && tw >= 0 && floormod(th, s[0]) == 0 && floormod(tw, s[1]) == 0 && ih < H && iw < W;
  Expr chan = floordiv(ov[1], mpg) * cpg + ci;
  Expr xv = load(x, flatIndex({ov[0], chan, clampI(ih, H), clampI(iw, W)}, x->shape));
  Expr wv = load(w, flatIndex({chan, floormod(ov[1], mpg), kh, kw}, w->shape));
  Expr init = c.hasInput(n, 2) ? load(c.input(n, 2), ov[1]) : f32(0);
  Stmt red =
      forLoop(ci, imm(0), imm(cpg),
              forLoop(kh, imm(0), imm(KH),
                      forLoop(kw, imm(0), imm(KW),
                              store(out, load(out, oAt) + select(ok, xv * wv, f32(0)), oAt))));
  return nest(ov, out->shape, seq({store(out, init, oAt), red}));
}

Stmt lowerLpPool(LowerCtx &c, const graph::Node &n) {
  Buffer x = c.input(n, 0), out = c.output(n, 0);
  auto k = n.attrInts("kernel_shape"), s = n.attrInts("strides", {1, 1});
  auto d = n.attrInts("dilations", {1, 1}), p = n.attrInts("pads", {0, 0, 0, 0});
  double pw = static_cast<double>(n.attrInt("p", 2));
  int64_t H = x->shape[2], W = x->shape[3];
  std::vector<Var> ov = c.vars(4, "o");
  Var kh = c.var("kh"), kw = c.var("kw");
  Expr oAt = flatIndex(asExprs(ov), out->shape);
  Expr ih = ov[2] * s[0] - p[0] + kh * d[0], iw = ov[3] * s[1] - p[1] + kw * d[1];
  Expr xv = load(x, flatIndex({ov[0], ov[1], clampI(ih, H), clampI(iw, W)}, x->shape));
  Expr term = call(kF, "pow", {call(kF, "fabs", {xv}), f32(pw)});
  Expr inside = ih >= 0 && ih < H && iw >= 0 && iw < W;
  Stmt red = forLoop(kh, imm(0), imm(k[0]),
                     forLoop(kw, imm(0), imm(k[1]),
                             store(out, load(out, oAt) + select(inside, term, f32(0)), oAt)));
  return nest(ov, out->shape,
              seq({store(out, f32(0), oAt), red,
                   store(out, call(kF, "pow", {load(out, oAt), f32(1.0 / pw)}), oAt)}));
}

} // namespace

Stmt lowerExtData(LowerCtx &c, const graph::Node &n) {
  const OpKind op = n.kind;
  if (op == OpKind::Split)
    return lowerSplit(c, n);
  if (op == OpKind::ConvTranspose)
    return lowerConvTranspose(c, n);
  if (op == OpKind::LpPool)
    return lowerLpPool(c, n);
  if (op == OpKind::Resize)
    return lowerResize(c, n);
  if (op == OpKind::Slice || op == OpKind::Expand || op == OpKind::Tile ||
      op == OpKind::DepthToSpace || op == OpKind::SpaceToDepth) {
    Buffer in = c.input(n, 0), out = c.output(n, 0);
    const Shape &xs = in->shape;
    return gatherNest(c, in, out, [&](const std::vector<Expr> &i) -> std::vector<Expr> {
      std::vector<Expr> s;
      if (op == OpKind::Slice) {
        auto b = n.attrInts("starts"), st = n.attrInts("steps");
        for (size_t d = 0; d < i.size(); ++d)
          s.push_back(i[d] * st[d] + b[d]);
      } else if (op == OpKind::Expand || op == OpKind::Tile) {
        size_t off = i.size() - xs.size();
        for (size_t d = 0; d < xs.size(); ++d)
          s.push_back(xs[d] == 1           ? imm(0)
                      : op == OpKind::Tile ? floormod(i[d + off], xs[d])
                                           : i[d + off]);
      } else if (op == OpKind::DepthToSpace) {
        int64_t bs = n.attrInt("blocksize", 1), C = out->shape[1];
        Expr bh = floormod(i[2], bs), bw = floormod(i[3], bs);
        Expr ch = n.attrString("mode", "DCR") == "CRD" ? (i[1] * bs + bh) * bs + bw
                                                       : (bh * bs + bw) * C + i[1];
        s = {i[0], ch, floordiv(i[2], bs), floordiv(i[3], bs)};
      } else {
        int64_t bs = n.attrInt("blocksize", 1), C = xs[1];
        Expr blk = floordiv(i[1], C);
        s = {i[0], floormod(i[1], C), i[2] * bs + floordiv(blk, bs), i[3] * bs + floormod(blk, bs)};
      }
      return s;
    });
  }
  if (op == OpKind::Gather) {
    // out[pre, j..., post] = x[pre, idx[j...], post]; indices are fp32 integers at runtime.
    Buffer in = c.input(n, 0), ib = c.input(n, 1), out = c.output(n, 0);
    auto axis = static_cast<size_t>(normAxis(n, n.attrInt("axis", 0), in->shape.size()));
    size_t q = ib->shape.size();
    std::vector<Var> iv = c.vars(out->shape.size(), "i");
    std::vector<Expr> idx = asExprs(iv);
    Expr k =
        cast(kI, load(ib, flatIndex(std::vector<Expr>(idx.begin() + static_cast<long>(axis),
                                                      idx.begin() + static_cast<long>(axis + q)),
                                    ib->shape)));
    k = select(k < 0, k + in->shape[axis], k);
    std::vector<Expr> s(idx.begin(), idx.begin() + static_cast<long>(axis));
    s.push_back(clampI(k, in->shape[axis]));
    s.insert(s.end(), idx.begin() + static_cast<long>(axis + q), idx.end());
    return nest(iv, out->shape,
                store(out, load(in, flatIndex(s, in->shape)), flatIndex(idx, out->shape)));
  }
  if (op == OpKind::GatherElements || op == OpKind::Trilu || op == OpKind::EyeLike ||
      op == OpKind::Cast) {
    Buffer in = c.input(n, 0), out = c.output(n, 0);
    std::vector<Var> iv = c.vars(out->shape.size(), "i");
    std::vector<Expr> idx = asExprs(iv);
    Expr v;
    if (op == OpKind::GatherElements) {
      Buffer ib = c.input(n, 1);
      auto axis = static_cast<size_t>(normAxis(n, n.attrInt("axis", 0), in->shape.size()));
      Expr k = cast(kI, load(ib, flatIndex(idx, ib->shape)));
      k = select(k < 0, k + in->shape[axis], k);
      std::vector<Expr> s = idx;
      s[axis] = clampI(k, in->shape[axis]);
      v = load(in, flatIndex(s, in->shape));
    } else if (op == OpKind::Cast) {
      graph::DType to = c.g.value(n.outputs[0]).dtype;
      Expr x = load(in, flatIndex(idx, out->shape));
      v = to == graph::DType::Bool ? select(x != f32(0), f32(1), f32(0))
          : to == graph::DType::I64
              ? select(x < f32(0), call(kF, "ceil", {x}), call(kF, "floor", {x}))
              : x;
    } else {
      int64_t k = n.attrInt("k", 0);
      size_t r = idx.size();
      Expr diff = idx[r - 1] - idx[r - 2];
      if (op == OpKind::EyeLike)
        v = select(diff == k, f32(1), f32(0));
      else
        v = select(n.attrInt("upper", 1) ? diff >= k : diff <= k,
                   load(in, flatIndex(idx, out->shape)), f32(0));
    }
    return nest(iv, out->shape, store(out, v, flatIndex(idx, out->shape)));
  }
  return Stmt();
}

} // namespace npuc::tir::lower
