// LowerNN.cpp - lowering of the neural-network ops: Conv, ConvTranspose, MaxPool/AveragePool,
// LpPool, the global pools, Gemm, MatMul and Softmax. Accumulation is fp32 in the output buffer
// (the reference accumulates in double; tests allow for the difference). Windows read padded
// positions through Select over a clamped index, so every load is in bounds.
#include "graph/Quant.h"
#include "lowering/LowerInternal.h"
#include "support/Error.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace npuc::tir::lower {
namespace {

const DataType kF = DataType::Float(32);

// The spatial attributes of a window op over the r = rank - 2 (1 to 3) axes of its input x
// (for ConvTranspose, of its output): kernel_shape (or `kernel`), strides, dilations (r entries
// each) and pads (2r: the begins, then the ends).
struct WindowAttrs {
  size_t r = 0;
  std::vector<int64_t> k, s, d, p;
};

WindowAttrs windowAttrs(const graph::Node &n, const Buffer &x, std::vector<int64_t> kernel) {
  if (x->shape.size() < 3 || x->shape.size() > 5)
    fail("node '{}' ({}): only 1 to 3 spatial axes are supported, '{}' has rank {}", n.name, n.kind,
         x->name, x->shape.size());
  WindowAttrs a;
  a.r = x->shape.size() - 2;
  auto get = [&](const char *key, std::vector<int64_t> dflt, size_t want) {
    std::vector<int64_t> v = n.attrInts(key, std::move(dflt));
    if (v.size() != want)
      fail("node '{}' ({}): attribute {} has {} entries, expected {}", n.name, n.kind, key,
           v.size(), want);
    return v;
  };
  a.k = get("kernel_shape", std::move(kernel), a.r);
  a.s = get("strides", std::vector<int64_t>(a.r, 1), a.r);
  a.d = get("dilations", std::vector<int64_t>(a.r, 1), a.r);
  a.p = get("pads", std::vector<int64_t>(2 * a.r, 0), 2 * a.r);
  return a;
}

Shape spatialOf(const Shape &s) {
  return Shape(s.begin() + 2, s.end());
}

// Input coordinate of a window tap and whether it is inside the unpadded input.
struct Tap {
  Expr coord, inside;
};
Tap tap(const Expr &o, const Expr &k, int64_t stride, int64_t pad, int64_t dil, int64_t extent) {
  Expr x = o * stride + k * dil - pad;
  return {x, x >= 0 && x < extent};
}

// Number of taps k in [0, K) with 0 <= o*s - p + k*d < H (closed form, for AveragePool).
Expr validTaps(const Expr &o, int64_t s, int64_t p, int64_t d, int64_t K, int64_t H) {
  Expr start = o * s - p;
  Expr lo = max(floordiv(imm(d - 1) - start, d), imm(0));
  Expr hi = min(floordiv(imm(H - 1) - start, d), imm(K - 1));
  return max(hi - lo + 1, imm(0));
}

// Number of taps with o*s - p + k*d < H + padEnd: positions in the explicit padding count for
// count_include_pad, positions beyond it (ceil_mode) do not.
Expr paddedTaps(const Expr &o, int64_t s, int64_t p, int64_t padEnd, int64_t d, int64_t K,
                int64_t H) {
  Expr start = o * s - p;
  return min(max(floordiv(imm(H + padEnd - 1) - start, d) + 1, imm(0)), imm(K));
}

} // namespace

Stmt lowerConv(LowerCtx &c, const graph::Node &n) {
  Buffer x = c.input(n, 0), w = c.input(n, 1), out = c.output(n, 0);
  if (w->shape.size() != x->shape.size())
    fail("node '{}' (Conv): weight rank {} differs from the input's {}", n.name, w->shape.size(),
         x->shape.size());
  WindowAttrs a = windowAttrs(n, x, spatialOf(w->shape));
  int64_t group = n.attrInt("group", 1);
  int64_t C = x->shape[1], M = w->shape[0];
  if (group <= 0 || C % group || M % group || w->shape[1] != C / group)
    fail("node '{}' (Conv): group={} does not divide channels {} -> {} (weight has {} per group)",
         n.name, group, C, M, w->shape[1]);
  int64_t cpg = C / group, mpg = M / group;
  std::vector<Var> ov = c.vars(2 + a.r, "o"), kv = c.vars(a.r, "k"); // n, m, spatial...
  Var ci = c.var("c");
  Expr oIdx = flatIndex(asExprs(ov), out->shape);
  bool padded = std::any_of(a.p.begin(), a.p.end(), [](int64_t v) { return v != 0; });
  std::vector<Expr> xi{ov[0], floordiv(ov[1], mpg) * cpg + ci}, wi{ov[1], ci};
  Expr inside = Expr();
  for (size_t i = 0; i < a.r; ++i) {
    int64_t H = x->shape[2 + i];
    Tap t = tap(ov[2 + i], kv[i], a.s[i], a.p[i], a.d[i], H);
    xi.push_back(padded ? clampIdx(t.coord, H) : t.coord);
    wi.push_back(kv[i]);
    inside = inside.defined() ? (inside && t.inside) : t.inside;
  }
  // ConvInteger: inputs 2 and 3 are zero points (x's scalar, w's scalar or per output channel),
  // subtracted before the product, so padding (the zero point in ONNX) contributes nothing.
  const bool integer = n.kind == OpKind::ConvInteger;
  Expr xv = load(x, flatIndex(xi, x->shape));
  if (integer && c.hasInput(n, 2))
    xv = xv - load(c.input(n, 2), imm(0));
  if (padded)
    xv = select(inside, xv, f32(0));
  Expr wv = load(w, flatIndex(wi, w->shape));
  if (integer && c.hasInput(n, 3)) {
    Buffer wz = c.input(n, 3);
    wv = wv - load(wz, wz->numElements() == 1 ? Expr(imm(0)) : Expr(ov[1]));
  }
  Expr init = !integer && c.hasInput(n, 2) ? load(c.input(n, 2), ov[1]) : f32(0);
  Stmt red =
      forLoop(ci, imm(0), imm(cpg), nest(kv, a.k, store(out, load(out, oIdx) + xv * wv, oIdx)));
  return nest(ov, out->shape, seq({store(out, init, oIdx), red}));
}

// MaxPool (and its optional Indices output) and AveragePool.
Stmt lowerPool(LowerCtx &c, const graph::Node &n) {
  bool isMax = n.kind == OpKind::MaxPool;
  Buffer x = c.input(n, 0), out = c.output(n, 0);
  WindowAttrs a = windowAttrs(n, x, {});
  bool includePad = n.attrInt("count_include_pad", 0) != 0;
  std::vector<Var> ov = c.vars(2 + a.r, "o"), kv = c.vars(a.r, "k");
  Expr oIdx = flatIndex(asExprs(ov), out->shape);
  std::vector<Expr> xi{ov[0], ov[1]}, sp;
  Expr inside, count;
  for (size_t i = 0; i < a.r; ++i) {
    int64_t H = x->shape[2 + i], s = a.s[i], p = a.p[i], d = a.d[i], k = a.k[i];
    Tap t = tap(ov[2 + i], kv[i], s, p, d, H);
    xi.push_back(clampIdx(t.coord, H));
    sp.push_back(xi.back());
    inside = inside.defined() ? (inside && t.inside) : t.inside;
    Expr taps = includePad ? paddedTaps(ov[2 + i], s, p, a.p[a.r + i], d, k, H)
                           : validTaps(ov[2 + i], s, p, d, k, H);
    count = count.defined() ? count * taps : taps;
  }
  double neutral = isMax ? -std::numeric_limits<double>::infinity() : 0.0;
  Expr xv = select(inside, load(x, flatIndex(xi, x->shape)), f32(neutral));
  Expr acc = load(out, oIdx);
  std::vector<Stmt> step{store(out, isMax ? max(acc, xv) : acc + xv, oIdx)};
  std::vector<Stmt> body{store(out, f32(neutral), oIdx)};
  if (isMax && n.outputs.size() > 1) {
    // Indices: the flat input position of the first maximum, within the whole tensor; with
    // storage_order 1 the spatial axes count column-major (the last one slowest).
    Buffer idx = c.output(n, 1);
    Shape ext = spatialOf(x->shape);
    if (n.attrInt("storage_order", 0) != 0) {
      std::reverse(sp.begin(), sp.end());
      std::reverse(ext.begin(), ext.end());
    }
    Expr pos = flatIndex({ov[0], ov[1]}, {x->shape[0], x->shape[1]}) * numElements(ext) +
               flatIndex(sp, ext);
    step.insert(step.begin(), store(idx, select(xv > acc, cast(kF, pos), load(idx, oIdx)), oIdx));
    body.push_back(store(idx, f32(-1), oIdx));
  }
  body.push_back(nest(kv, a.k, seq(step)));
  if (!isMax)
    body.push_back(store(out, acc / cast(kF, includePad ? count : max(count, imm(1))), oIdx));
  return nest(ov, out->shape, seq(body));
}

Stmt lowerGlobalAveragePool(LowerCtx &c, const graph::Node &n) {
  Buffer x = c.input(n, 0), out = c.output(n, 0);
  if (x->shape.size() < 3)
    fail("node '{}' (GlobalAveragePool): input rank {} < 3", n.name, x->shape.size());
  int64_t nc = x->shape[0] * x->shape[1];
  int64_t hw = x->numElements() / std::max<int64_t>(nc, 1);
  Var o = c.var("o"), r = c.var("r");
  Expr acc = load(out, o);
  return forLoop(o, imm(0), imm(nc),
                 seq({store(out, f32(0), o),
                      forLoop(r, imm(0), imm(hw), store(out, acc + load(x, o * hw + r), o)),
                      store(out, acc / f32(static_cast<double>(hw)), o)}));
}

Stmt lowerGemm(LowerCtx &c, const graph::Node &n) {
  Buffer a = c.input(n, 0), b = c.input(n, 1), out = c.output(n, 0);
  if (a->shape.size() != 2 || b->shape.size() != 2)
    fail("node '{}' (Gemm): A and B must be 2-D", n.name);
  bool ta = n.attrInt("transA", 0) != 0, tb = n.attrInt("transB", 0) != 0;
  double alpha = n.attrFloat("alpha", 1.0), beta = n.attrFloat("beta", 1.0);
  int64_t M = out->shape[0], N = out->shape[1], K = ta ? a->shape[0] : a->shape[1];
  if ((tb ? b->shape[1] : b->shape[0]) != K)
    fail("node '{}' (Gemm): inner dimensions differ", n.name);
  Var i = c.var("i"), j = c.var("j"), k = c.var("k");
  Expr oIdx = i * N + j;
  Expr av = load(a, ta ? k * M + i : i * K + k), bv = load(b, tb ? j * K + k : k * N + j);
  Expr acc = load(out, oIdx);
  std::vector<Stmt> body{store(out, f32(0), oIdx),
                         forLoop(k, imm(0), imm(K), store(out, acc + av * bv, oIdx))};
  Expr fin = alpha == 1.0 ? acc : acc * f32(alpha);
  if (c.hasInput(n, 2)) {
    Buffer cb = c.input(n, 2);
    if (cb->shape.size() > 2)
      fail("node '{}' (Gemm): C has rank {} > 2", n.name, cb->shape.size());
    Expr cv = load(cb, broadcastIndex(cb->shape, {i, j}));
    fin = fin + (beta == 1.0 ? cv : cv * f32(beta));
  }
  if (!fin.same(acc))
    body.push_back(store(out, fin, oIdx));
  return forLoop(i, imm(0), imm(M), forLoop(j, imm(0), imm(N), seq(body)));
}

Stmt lowerMatMul(LowerCtx &c, const graph::Node &n) {
  Buffer a = c.input(n, 0), b = c.input(n, 1), out = c.output(n, 0);
  if (a->shape.size() < 2 || b->shape.size() < 2)
    fail("node '{}' (MatMul): 1-D operands are not supported (ranks {} and {})", n.name,
         a->shape.size(), b->shape.size());
  size_t r = out->shape.size();
  int64_t M = out->shape[r - 2], N = out->shape[r - 1], K = a->shape.back();
  if (b->shape[b->shape.size() - 2] != K)
    fail("node '{}' (MatMul): inner dimensions {} and {} differ", n.name, K,
         b->shape[b->shape.size() - 2]);
  Shape batch(out->shape.begin(), out->shape.end() - 2);
  std::vector<Var> bv = c.vars(batch.size(), "b");
  Var i = c.var("i"), j = c.var("j"), k = c.var("k");
  Shape aBatch(a->shape.begin(), a->shape.end() - 2), bBatch(b->shape.begin(), b->shape.end() - 2);
  Expr aOff = broadcastIndex(aBatch, asExprs(bv)) * (M * K);
  Expr bOff = broadcastIndex(bBatch, asExprs(bv)) * (K * N);
  Expr oIdx = (flatIndex(asExprs(bv), batch) * M + i) * N + j;
  Expr acc = load(out, oIdx);
  Expr av = load(a, aOff + i * K + k), bv2 = load(b, bOff + k * N + j);
  if (n.kind == OpKind::MatMulInteger) {
    // Zero points broadcast against their operand (per tensor, row of a, column of b).
    std::vector<Expr> ai = asExprs(bv), bi = asExprs(bv);
    ai.insert(ai.end(), {i, k});
    bi.insert(bi.end(), {k, j});
    if (c.hasInput(n, 2))
      av = av - load(c.input(n, 2),
                     broadcastIndex(graph::matMulZeroPointShape(c.shapeOf(n.inputs[2]), true), ai));
    if (c.hasInput(n, 3))
      bv2 = bv2 -
            load(c.input(n, 3),
                 broadcastIndex(graph::matMulZeroPointShape(c.shapeOf(n.inputs[3]), false), bi));
  }
  Stmt inner =
      forLoop(i, imm(0), imm(M),
              forLoop(j, imm(0), imm(N),
                      seq({store(out, f32(0), oIdx),
                           forLoop(k, imm(0), imm(K), store(out, acc + av * bv2, oIdx))})));
  return nest(bv, batch, inner);
}

Stmt lowerSoftmax(LowerCtx &c, const graph::Node &n) {
  Buffer x = c.input(n, 0), out = c.output(n, 0);
  size_t axis = static_cast<size_t>(normAxis(n, n.attrInt("axis", -1), x->shape.size()));
  int64_t outer = 1, inner = 1, len = x->shape[axis];
  for (size_t d = 0; d < axis; ++d)
    outer *= x->shape[d];
  for (size_t d = axis + 1; d < x->shape.size(); ++d)
    inner *= x->shape[d];
  Var o = c.var("o"), i = c.var("i"), k1 = c.var("k"), k2 = c.var("k"), k3 = c.var("k");
  auto at = [&](const Var &k) { return (o * len + k) * inner + i; };
  // 0 = running max, 1 = sum of exp(x - max): subtracting the max keeps exp finite.
  DataType t = DataType::Float(32);
  RowStats red(c, out->name + "_red", t, 2, o * inner + i, outer * inner);
  Expr mx = red.get(0), sum = red.get(1);
  return red.wrap(
      {o, i}, {outer, inner},
      {red.set(0, f32(-std::numeric_limits<double>::infinity())),
       forLoop(k1, imm(0), imm(len), red.set(0, max(mx, load(x, at(k1))))), red.set(1, f32(0)),
       forLoop(k2, imm(0), imm(len), red.set(1, sum + call(t, "exp", {load(x, at(k2)) - mx}))),
       forLoop(k3, imm(0), imm(len),
               store(out, call(t, "exp", {load(x, at(k3)) - mx}) / sum, at(k3)))});
}

Stmt lowerConvTranspose(LowerCtx &c, const graph::Node &n) {
  Buffer x = c.input(n, 0), w = c.input(n, 1), out = c.output(n, 0);
  WindowAttrs a = windowAttrs(n, out, spatialOf(w->shape));
  int64_t group = n.attrInt("group", 1);
  int64_t C = x->shape[1], mpg = w->shape[1], cpg = C / group;
  std::vector<Var> ov = c.vars(2 + a.r, "o"), kv = c.vars(a.r, "k");
  Var ci = c.var("c");
  Expr oAt = flatIndex(asExprs(ov), out->shape);
  // Gather form: output o receives input i through tap k when i * s = o + p - k * d exactly.
  Expr chan = floordiv(ov[1], mpg) * cpg + ci;
  std::vector<Expr> xi{ov[0], chan}, wi{chan, floormod(ov[1], mpg)};
  Expr ok;
  for (size_t i = 0; i < a.r; ++i) {
    int64_t H = x->shape[2 + i];
    Expr t = ov[2 + i] + a.p[i] - kv[i] * a.d[i];
    Expr in = floordiv(t, a.s[i]);
    Expr hit = t >= 0 && floormod(t, a.s[i]) == 0 && in < H;
    ok = ok.defined() ? (ok && hit) : hit;
    xi.push_back(clampIdx(in, H));
    wi.push_back(kv[i]);
  }
  Expr xv = load(x, flatIndex(xi, x->shape));
  Expr wv = load(w, flatIndex(wi, w->shape));
  Expr init = c.hasInput(n, 2) ? load(c.input(n, 2), ov[1]) : f32(0);
  Stmt red = forLoop(ci, imm(0), imm(cpg),
                     nest(kv, a.k, store(out, load(out, oAt) + select(ok, xv * wv, f32(0)), oAt)));
  return nest(ov, out->shape, seq({store(out, init, oAt), red}));
}

Stmt lowerLpPool(LowerCtx &c, const graph::Node &n) {
  Buffer x = c.input(n, 0), out = c.output(n, 0);
  WindowAttrs a = windowAttrs(n, x, {});
  double pw = static_cast<double>(n.attrInt("p", 2));
  std::vector<Var> ov = c.vars(2 + a.r, "o"), kv = c.vars(a.r, "k");
  Expr oAt = flatIndex(asExprs(ov), out->shape);
  std::vector<Expr> xi{ov[0], ov[1]};
  Expr inside;
  for (size_t i = 0; i < a.r; ++i) {
    int64_t H = x->shape[2 + i];
    Tap t = tap(ov[2 + i], kv[i], a.s[i], a.p[i], a.d[i], H);
    xi.push_back(clampIdx(t.coord, H));
    inside = inside.defined() ? (inside && t.inside) : t.inside;
  }
  Expr xv = load(x, flatIndex(xi, x->shape));
  Expr term = call(kF, "pow", {call(kF, "fabs", {xv}), f32(pw)});
  Stmt red = nest(kv, a.k, store(out, load(out, oAt) + select(inside, term, f32(0)), oAt));
  return nest(ov, out->shape,
              seq({store(out, f32(0), oAt), red,
                   store(out, call(kF, "pow", {load(out, oAt), f32(1.0 / pw)}), oAt)}));
}

// GlobalMaxPool and GlobalLpPool.
Stmt lowerGlobalPool(LowerCtx &c, const graph::Node &n) {
  Buffer x = c.input(n, 0), out = c.output(n, 0);
  int64_t nc = x->shape[0] * x->shape[1], len = x->numElements() / std::max<int64_t>(nc, 1);
  bool isMax = n.kind == OpKind::GlobalMaxPool;
  double p = static_cast<double>(n.attrInt("p", 2));
  Var o = c.var("o"), r = c.var("r");
  Expr acc = load(out, o), xv = load(x, o * len + r);
  Expr step = isMax ? max(acc, xv) : acc + call(kF, "pow", {call(kF, "fabs", {xv}), f32(p)});
  std::vector<Stmt> body{
      store(out, isMax ? -f32(std::numeric_limits<double>::infinity()) : f32(0), o),
      forLoop(r, imm(0), imm(len), store(out, step, o))};
  if (!isMax)
    body.push_back(store(out, call(kF, "pow", {acc, f32(1.0 / p)}), o));
  return forLoop(o, imm(0), imm(nc), seq(body));
}

} // namespace npuc::tir::lower
