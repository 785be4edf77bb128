// LowerSample.cpp - lowering of the operators that sample a tensor at data-given positions:
// MaxUnpool, RoiAlign, MaxRoiPool and GridSample (graph/RefSample.cpp is their reference).
// Index operands are fp32 integers, clamped into range for the load or store (the reference
// executor rejects one outside). Region bounds and sample counts that depend on the data are
// loop bounds computed at run time.
#include "lowering/LowerInternal.h"
#include "support/Error.h"

#include <limits>
#include <string>

namespace npuc::tir::lower {
namespace {

const DataType kF = DataType::Float(32);
const DataType kI = DataType::Int(64);

Expr fc(const char *name, Expr x) {
  return call(kF, name, {std::move(x)});
}
Expr toF(Expr e) {
  return cast(kF, std::move(e));
}
Expr toI(Expr e) {
  return cast(kI, std::move(e));
}
Expr clampTo(Expr e, int64_t lo, int64_t hi) { // into [lo, hi]
  return max(min(std::move(e), imm(hi)), imm(lo));
}

} // namespace

Stmt lowerMaxUnpool(LowerCtx &c, const graph::Node &n) {
  Buffer x = c.input(n, 0), idx = c.input(n, 1), out = c.output(n, 0);
  Var o = c.var("o"), i = c.var("i");
  int64_t total = out->numElements();
  return seq({forLoop(o, imm(0), imm(total), store(out, f32(0), o)),
              forLoop(i, imm(0), imm(x->numElements()),
                      store(out, load(x, i), clampIdx(toI(load(idx, i)), total)))});
}

// One output bin (r, c, ph, pw) averages (or takes the largest weighted corner of) a grid of
// bilinear samples; with sampling_ratio 0 the grid's size follows the region's (run time).
Stmt lowerRoiAlign(LowerCtx &c, const graph::Node &n) {
  Buffer x = c.input(n, 0), rois = c.input(n, 1), bi = c.input(n, 2), out = c.output(n, 0);
  const int64_t N = x->shape[0], C = x->shape[1], H = x->shape[2], W = x->shape[3];
  const int64_t OH = out->shape[2], OW = out->shape[3];
  const double scale = n.attrFloat("spatial_scale", 1.0);
  const bool halfPixel =
      n.attrString("coordinate_transformation_mode", "half_pixel") == "half_pixel";
  const bool isMax = n.attrString("mode", "avg") == "max";
  const int64_t ratio = n.attrInt("sampling_ratio", 0);
  std::vector<Var> ov = c.vars(4, "o"); // roi, channel, ph, pw
  Var iy = c.var("iy"), ix = c.var("ix");
  auto roi = [&](int64_t j) { return load(rois, ov[0] * 4 + j) * f32(scale); };
  Expr off = f32(halfPixel ? 0.5 : 0.0);
  Expr y0 = roi(1) - off, x0 = roi(0) - off;
  Expr rh = roi(3) - off - y0, rw = roi(2) - off - x0;
  if (!halfPixel) { // output_half_pixel: the legacy rule forces at least one pixel
    rh = call(kF, "fmax", {rh, f32(1)});
    rw = call(kF, "fmax", {rw, f32(1)});
  }
  Expr bh = rh / f32(static_cast<double>(OH)), bw = rw / f32(static_cast<double>(OW));
  Expr gh = ratio > 0 ? imm(ratio) : toI(fc("ceil", rh / f32(static_cast<double>(OH))));
  Expr gw = ratio > 0 ? imm(ratio) : toI(fc("ceil", rw / f32(static_cast<double>(OW))));
  Expr yy = y0 + toF(ov[2]) * bh + (toF(iy) + f32(0.5)) * bh / toF(gh);
  Expr xx = x0 + toF(ov[3]) * bw + (toF(ix) + f32(0.5)) * bw / toF(gw);
  Expr valid = yy >= f32(-1) && yy <= f32(static_cast<double>(H)) && xx >= f32(-1) &&
               xx <= f32(static_cast<double>(W));
  // ONNX Runtime's corner rule: clamp to 0, and a position at or past the last row/column
  // samples that row/column alone.
  Expr yc = call(kF, "fmax", {yy, f32(0)}), xc = call(kF, "fmax", {xx, f32(0)});
  Expr yl = toI(yc), xl = toI(xc);
  Expr yEdge = yl >= H - 1, xEdge = xl >= W - 1;
  Expr ly = select(yEdge, f32(0), yc - toF(yl)), lx = select(xEdge, f32(0), xc - toF(xl));
  Expr y1 = min(yl, imm(H - 1)), y2 = min(yl + 1, imm(H - 1));
  Expr x1 = min(xl, imm(W - 1)), x2 = min(xl + 1, imm(W - 1));
  Expr b = clampTo(toI(load(bi, ov[0])), 0, N - 1);
  Expr plane = (b * C + ov[1]) * (H * W);
  auto px = [&](const Expr &yi, const Expr &xi) { return load(x, plane + yi * W + xi); };
  Expr hy = f32(1) - ly, hx = f32(1) - lx;
  Expr v1 = hy * hx * px(y1, x1), v2 = hy * lx * px(y1, x2);
  Expr v3 = ly * hx * px(y2, x1), v4 = ly * lx * px(y2, x2);
  Expr sample = isMax ? max(max(v1, v2), max(v3, v4)) : v1 + v2 + v3 + v4;
  sample = select(valid, sample, f32(0));
  Expr oAt = flatIndex(asExprs(ov), out->shape), acc = load(out, oAt);
  double init = isMax ? -std::numeric_limits<double>::infinity() : 0.0;
  Stmt grid =
      forLoop(iy, imm(0), gh,
              forLoop(ix, imm(0), gw, store(out, isMax ? max(acc, sample) : acc + sample, oAt)));
  Expr cells = gh * gw;
  Expr fin = isMax ? select(cells > 0, acc, f32(0)) : acc / toF(max(cells, imm(1)));
  return nest(ov, out->shape, seq({store(out, f32(init), oAt), grid, store(out, fin, oAt)}));
}

// Fast R-CNN's max pooling over whole-pixel bins of each region (rounded corners, inclusive).
Stmt lowerMaxRoiPool(LowerCtx &c, const graph::Node &n) {
  Buffer x = c.input(n, 0), rois = c.input(n, 1), out = c.output(n, 0);
  const int64_t N = x->shape[0], C = x->shape[1], H = x->shape[2], W = x->shape[3];
  const int64_t OH = out->shape[2], OW = out->shape[3];
  const double scale = n.attrFloat("spatial_scale", 1.0);
  std::vector<Var> ov = c.vars(4, "o");
  Var h = c.var("h"), w = c.var("w");
  auto roi = [&](int64_t j) { return load(rois, ov[0] * 5 + j); };
  // std::round: halves away from zero.
  auto corner = [&](int64_t j) {
    Expr v = roi(j) * f32(scale);
    return toI(select(v < f32(0), f32(0) - fc("floor", f32(0.5) - v), fc("floor", v + f32(0.5))));
  };
  Expr xs = corner(1), ys = corner(2), xe = corner(3), ye = corner(4);
  Expr bh = toF(max(ye - ys + 1, imm(1))) / f32(static_cast<double>(OH));
  Expr bw = toF(max(xe - xs + 1, imm(1))) / f32(static_cast<double>(OW));
  Expr hs = clampTo(toI(fc("floor", toF(ov[2]) * bh)) + ys, 0, H);
  Expr he = clampTo(toI(fc("ceil", toF(ov[2] + 1) * bh)) + ys, 0, H);
  Expr ws = clampTo(toI(fc("floor", toF(ov[3]) * bw)) + xs, 0, W);
  Expr we = clampTo(toI(fc("ceil", toF(ov[3] + 1) * bw)) + xs, 0, W);
  Expr b = clampTo(toI(roi(0)), 0, N - 1);
  Expr oAt = flatIndex(asExprs(ov), out->shape), acc = load(out, oAt);
  Expr xv = load(x, ((b * C + ov[1]) * H + h) * W + w);
  Stmt bin = forLoop(h, hs, max(he - hs, imm(0)),
                     forLoop(w, ws, max(we - ws, imm(0)), store(out, max(acc, xv), oAt)));
  Expr empty = he <= hs || we <= ws;
  return nest(ov, out->shape,
              seq({store(out, f32(-std::numeric_limits<double>::infinity()), oAt), bin,
                   store(out, select(empty, f32(0), acc), oAt)}));
}

namespace {

// GridSample's coordinate rules (see graph/RefSample.cpp): the padding mode applied to a pixel
// position along an axis of `size` pixels.
struct GridCoords {
  std::string pad;
  bool align;

  Expr unnormalize(const Expr &g, int64_t size) const {
    auto s = static_cast<double>(size);
    return align ? (g + f32(1)) * f32((s - 1) / 2) : ((g + f32(1)) * f32(s) - f32(1)) * f32(0.5);
  }
  static Expr reflect(const Expr &e, double twiceLow, double twiceHigh) {
    if (twiceLow == twiceHigh)
      return f32(0);
    double lo = twiceLow / 2, span = (twiceHigh - twiceLow) / 2;
    Expr a = fc("fabs", e - f32(lo));
    Expr flips = fc("floor", a / f32(span));
    Expr extra = a - flips * f32(span);
    Expr odd = flips - f32(2) * fc("floor", flips * f32(0.5)) != f32(0);
    return select(odd, f32(span + lo) - extra, extra + f32(lo));
  }
  Expr padded(Expr e, int64_t size) const {
    auto hi = static_cast<double>(size - 1);
    if (pad == "zeros")
      return e;
    if (pad == "reflection")
      e = align ? reflect(e, 0, 2 * hi) : reflect(e, -1, 2 * hi + 1);
    return call(kF, "fmin", {call(kF, "fmax", {e, f32(0)}), f32(hi)});
  }
};

// Halves to even (std::nearbyint), as PyTorch's nearest mode rounds.
Expr roundHalfEven(const Expr &x) {
  Expr f = fc("floor", x), d = x - f;
  Expr fEven = f - f32(2) * fc("floor", f * f32(0.5)) == f32(0);
  return select(d > f32(0.5), f + f32(1), select(d < f32(0.5), f, select(fEven, f, f + f32(1))));
}

// The cubic convolution weights (A = -0.75) of the four taps around fraction t.
std::vector<Expr> cubicWeights(const Expr &t) {
  const double A = -0.75;
  auto near = [&](const Expr &d) { return ((f32(A + 2) * d - f32(A + 3)) * d * d) + f32(1); };
  auto far = [&](const Expr &d) {
    return ((f32(A) * d - f32(5 * A)) * d + f32(8 * A)) * d - f32(4 * A);
  };
  return {far(t + f32(1)), near(t), near(f32(1) - t), far(f32(2) - t)};
}

} // namespace

Stmt lowerGridSample(LowerCtx &c, const graph::Node &n) {
  Buffer x = c.input(n, 0), grid = c.input(n, 1), out = c.output(n, 0);
  const int64_t C = x->shape[1], H = x->shape[2], W = x->shape[3];
  const int64_t OH = out->shape[2], OW = out->shape[3];
  const std::string mode = n.attrString("mode", "bilinear");
  GridCoords gc{n.attrString("padding_mode", "zeros"), n.attrInt("align_corners", 0) != 0};
  std::vector<Var> ov = c.vars(4, "o"); // n, c, y, x
  Expr g = ((ov[0] * OH + ov[2]) * OW + ov[3]) * 2;
  Expr ix = gc.unnormalize(load(grid, g), W), iy = gc.unnormalize(load(grid, g + 1), H);
  Expr plane = (ov[0] * C + ov[1]) * (H * W);
  // A tap outside the input reads 0.
  auto at = [&](const Expr &yi, const Expr &xi) {
    Expr inside = yi >= 0 && yi < H && xi >= 0 && xi < W;
    return select(inside, load(x, plane + clampIdx(yi, H) * W + clampIdx(xi, W)), f32(0));
  };
  Expr v;
  if (mode == "bicubic") {
    Expr fx = fc("floor", ix), fy = fc("floor", iy);
    std::vector<Expr> wx = cubicWeights(ix - fx), wy = cubicWeights(iy - fy);
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) {
        // Each tap is moved by the padding mode on its own (PyTorch's rule).
        Expr ty = toI(gc.padded(fy + f32(i - 1), H)), tx = toI(gc.padded(fx + f32(j - 1), W));
        Expr term = wy[size_t(i)] * wx[size_t(j)] * at(ty, tx);
        v = v.defined() ? v + term : term;
      }
  } else {
    ix = gc.padded(ix, W);
    iy = gc.padded(iy, H);
    if (mode == "nearest") {
      v = at(toI(roundHalfEven(iy)), toI(roundHalfEven(ix)));
    } else {
      Expr fx = fc("floor", ix), fy = fc("floor", iy), lx = ix - fx, ly = iy - fy;
      Expr x0 = toI(fx), y0 = toI(fy);
      v = (f32(1) - ly) * ((f32(1) - lx) * at(y0, x0) + lx * at(y0, x0 + 1)) +
          ly * ((f32(1) - lx) * at(y0 + 1, x0) + lx * at(y0 + 1, x0 + 1));
    }
  }
  return nest(ov, out->shape, store(out, v, flatIndex(asExprs(ov), out->shape)));
}

} // namespace npuc::tir::lower
