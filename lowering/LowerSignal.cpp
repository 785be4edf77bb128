// LowerSignal.cpp - CPU lowering of Einsum, Det, DFT and STFT (LowerInternal.h) as plain loop
// nests with scalar accumulators (fp32; fp64 for the DFT bins): Einsum sums the product of its operands over the labels
// not in the output, Det eliminates with partial pivoting in a local copy of each matrix, and
// DFT/STFT are the direct O(n^2) sums of cos/sin terms.
#include "graph/DataOps.h"
#include "lowering/LowerInternal.h"
#include "support/Error.h"

#include <algorithm>

namespace npuc::tir::lower {
namespace {

const DataType kF = DataType::Float(32);
const DataType kI = DataType::Int(64);
const DataType kD = DataType::Float(64);
constexpr double kPi = 3.14159265358979323846;

Expr fcall(const char *name, Expr x) {
  return call(kF, name, {std::move(x)});
}

// acc[0..1] += (xr + i xi) * e^(i angle) where angle = sign * 2 pi ((k j) mod len) / len.
// The twiddles and the sums are fp64 (acc is an fp64 buffer): bins that cancel to zero come out
// within ONNX's absolute tolerance (1e-7) only if the O(len) rounding errors of an fp32 sum of
// large terms do not land in them (numpy computes them in fp64 too).
Stmt accumulateBin(const Buffer &acc, const Expr &xr, const Expr &xi, const Expr &k, const Expr &j,
                   int64_t len, bool inverse) {
  Expr angle = cast(kD, floormod(k * j, len)) *
               fimm((inverse ? 2 : -2) * kPi / static_cast<double>(len), kD);
  Expr co = call(kD, "cos", {angle}), si = call(kD, "sin", {angle});
  Expr re = load(acc, imm(0)), im = load(acc, imm(1));
  Expr r = cast(kD, xr), i = cast(kD, xi);
  return seq({store(acc, re + (r * co - i * si), imm(0)), store(acc, im + (r * si + i * co), imm(1))});
}

// Stores the fp64 bin acc[0..1] (times `scale`) as fp32 at out[at], out[at + 1].
Stmt storeBin(const Buffer &out, const Buffer &acc, const Expr &at, double scale) {
  auto part = [&](int64_t q) { return cast(kF, load(acc, imm(q)) * fimm(scale, kD)); };
  return seq({store(out, part(0), at), store(out, part(1), at + 1)});
}

} // namespace

Stmt lowerEinsum(LowerCtx &c, const graph::Node &n) {
  std::vector<Buffer> ins;
  std::vector<Shape> shapes;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    ins.push_back(c.input(n, i));
    shapes.push_back(ins.back()->shape);
  }
  Buffer out = c.output(n, 0);
  graph::EinsumSpec spec = graph::parseEinsum(n, shapes);
  std::vector<Var> label = c.vars(spec.extents.size(), "l");
  Expr prod;
  for (size_t k = 0; k < ins.size(); ++k) {
    std::vector<Expr> at;
    for (size_t d = 0; d < shapes[k].size(); ++d)
      at.push_back(shapes[k][d] == 1 ? imm(0)
                                     : Expr(label[static_cast<size_t>(spec.inputs[k][d])]));
    Expr v = load(ins[k], flatIndex(at, shapes[k]));
    prod = prod.defined() ? prod * v : v;
  }
  std::vector<Var> ov, sv;
  Shape os, ss;
  std::vector<Expr> oIdx;
  for (int l : spec.output) {
    ov.push_back(label[static_cast<size_t>(l)]);
    oIdx.push_back(label[static_cast<size_t>(l)]);
    os.push_back(spec.extents[static_cast<size_t>(l)]);
  }
  for (int l : spec.summed()) {
    sv.push_back(label[static_cast<size_t>(l)]);
    ss.push_back(spec.extents[static_cast<size_t>(l)]);
  }
  Expr oAt = flatIndex(oIdx, os);
  if (sv.empty())
    return nest(ov, os, store(out, prod, oAt));
  Buffer acc = Buffer::make(out->name + "_acc", kF, {1}, "local");
  Stmt body =
      seq({store(acc, f32(0), imm(0)), nest(sv, ss, store(acc, load(acc, imm(0)) + prod, imm(0))),
           store(out, load(acc, imm(0)), oAt)});
  return nest(ov, os, AllocateNode::make(acc, body));
}

// Per matrix: copy it to `u`; for each column k pick the row of largest magnitude at or below
// k, swap it up (negating the determinant when it moved), multiply the diagonal element into the
// determinant and eliminate below it. s = {det, pivot row, swap temp, row factor}.
Stmt lowerDet(LowerCtx &c, const graph::Node &n) {
  Buffer x = c.input(n, 0), out = c.output(n, 0);
  int64_t m = x->shape.back();
  Buffer u = Buffer::make(out->name + "_lu", kF, {m * m}, "local");
  Buffer s = Buffer::make(out->name + "_det", kF, {4}, "local");
  Var b = c.var("b"), i = c.var("i"), j = c.var("j"), k = c.var("k");
  Var i2 = c.var("i"), j2 = c.var("j"), e = c.var("e");
  auto U = [&](Expr r, Expr col) { return load(u, r * m + col); };
  auto S = [&](int64_t q) { return load(s, imm(q)); };
  Expr piv = cast(kI, S(1));
  Stmt search =
      seq({store(s, cast(kF, k), imm(1)),
           forLoop(i, imm(0), imm(m),
                   store(s,
                         select(i > k && fcall("fabs", U(i, k)) > fcall("fabs", U(piv, k)),
                                cast(kF, i), S(1)),
                         imm(1)))});
  Stmt swap = forLoop(j, imm(0), imm(m),
                      seq({store(s, U(k, j), imm(2)), store(u, U(piv, j), k * m + j),
                           store(u, S(2), piv * m + j)}));
  Expr diag = U(k, k);
  Stmt eliminate = forLoop(
      i2, imm(0), imm(m),
      seq({store(s, select(diag != f32(0), U(i2, k) / diag, f32(0)), imm(3)),
           forLoop(j2, imm(0), imm(m),
                   store(u, select(i2 > k && j2 >= k, U(i2, j2) - S(3) * U(k, j2), U(i2, j2)),
                         i2 * m + j2))}));
  Stmt column = seq({search, store(s, select(piv != k, -S(0), S(0)), imm(0)), swap,
                     store(s, S(0) * diag, imm(0)), eliminate});
  Stmt body =
      seq({forLoop(e, imm(0), imm(m * m), store(u, load(x, b * (m * m) + e), e)),
           store(s, f32(1), imm(0)), forLoop(k, imm(0), imm(m), column), store(out, S(0), b)});
  return forLoop(b, imm(0), imm(out->numElements()),
                 AllocateNode::make(u, AllocateNode::make(s, body)));
}

Stmt lowerDFT(LowerCtx &c, const graph::Node &n) {
  Buffer x = c.input(n, 0), out = c.output(n, 0);
  auto axis = static_cast<size_t>(n.attrInt("axis", 1));
  int64_t len = n.attrInt("dft_length", 1), count = x->shape[axis], ch = x->shape.back();
  bool inverse = n.attrInt("inverse", 0) != 0;
  const Shape &os = out->shape;
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d)
    outer *= x->shape[d];
  for (size_t d = axis + 1; d + 1 < x->shape.size(); ++d)
    inner *= x->shape[d];
  int64_t bins = os[axis];
  Buffer acc = Buffer::make(out->name + "_bin", kD, {2}, "local");
  Var o = c.var("o"), k = c.var("k"), i = c.var("i"), j = c.var("j");
  Expr at = ((o * count + j) * inner + i) * ch;
  Expr xr = load(x, at), xi = ch == 2 ? load(x, at + 1) : f32(0);
  Expr oAt = ((o * bins + k) * inner + i) * 2;
  double scale = inverse ? 1.0 / static_cast<double>(len) : 1.0;
  Stmt body = seq({store(acc, fimm(0, kD), imm(0)), store(acc, fimm(0, kD), imm(1)),
                   forLoop(j, imm(0), imm(std::min(count, len)),
                           accumulateBin(acc, xr, xi, k, j, len, inverse)),
                   storeBin(out, acc, oAt, scale)});
  return forLoop(
      o, imm(0), imm(outer),
      forLoop(k, imm(0), imm(bins), forLoop(i, imm(0), imm(inner), AllocateNode::make(acc, body))));
}

Stmt lowerSTFT(LowerCtx &c, const graph::Node &n) {
  Buffer x = c.input(n, 0), out = c.output(n, 0);
  bool windowed = c.hasInput(n, 1);
  Buffer w = windowed ? c.input(n, 1) : Buffer();
  int64_t step = n.attrInt("frame_step", 1), len = n.attrInt("frame_length", 1);
  int64_t samples = x->shape[1], ch = x->shape[2];
  const Shape &os = out->shape;
  Buffer acc = Buffer::make(out->name + "_bin", kD, {2}, "local");
  Var b = c.var("b"), f = c.var("f"), k = c.var("k"), j = c.var("j");
  Expr at = (b * samples + f * step + j) * ch;
  Expr wj = windowed ? load(w, j) : f32(1);
  Expr xr = load(x, at) * wj, xi = ch == 2 ? load(x, at + 1) * wj : f32(0);
  Expr oAt = ((b * os[1] + f) * os[2] + k) * 2;
  Stmt body = seq({store(acc, fimm(0, kD), imm(0)), store(acc, fimm(0, kD), imm(1)),
                   forLoop(j, imm(0), imm(len), accumulateBin(acc, xr, xi, k, j, len, false)),
                   storeBin(out, acc, oAt, 1.0)});
  return nest({b, f, k}, {os[0], os[1], os[2]}, AllocateNode::make(acc, body));
}

} // namespace npuc::tir::lower
