// LowerMath.cpp - CPU lowering of the elementwise and reduction ops (LowerInternal.h): the core
// arithmetic, activations and BatchNormalization, the extended unary maps, broadcasting
// comparisons/logic/Pow/Mod/Where, Reduce* and ArgMax/ArgMin, LayerNormalization/
// InstanceNormalization, LpNormalization, LRN, LogSoftmax, Hardmax, CumSum and TopK. Bool and
// int64 results are stored as fp32 0/1 and integers (see graph/ExtOps.h). Functions LLVM has no
// intrinsic or libm call for here (asin, sinh, ...) are built from exp/log/atan/sqrt in forms
// that avoid cancellation.
#include "graph/ExtOps.h"
#include "lowering/LowerInternal.h"
#include "support/Error.h"

#include <cmath>
#include <limits>
#include <set>

namespace npuc::tir::lower {
namespace {

const DataType kF = DataType::Float(32);

Expr fcall(const char *name, Expr x) {
  return call(kF, name, {std::move(x)});
}
Expr fsel(Expr cond) {
  return select(std::move(cond), f32(1), f32(0));
}
Expr inf() {
  return f32(std::numeric_limits<double>::infinity());
}
Expr toF(Expr i) {
  return cast(kF, std::move(i));
}

Expr unaryExpr(const graph::Node &n, const Expr &x) {
  const OpKind op = n.kind;
  auto a = [&](const char *k, double d) { return f32(n.attrFloat(k, d)); };
  switch (op) {
  case OpKind::Abs:
    return fcall("fabs", x);
  case OpKind::Neg:
    return -x;
  case OpKind::Sqrt:
    return fcall("sqrt", x);
  case OpKind::Log:
    return fcall("log", x);
  case OpKind::Erf:
    return fcall("erf", x);
  case OpKind::Floor:
    return fcall("floor", x);
  case OpKind::Ceil:
    return fcall("ceil", x);
  case OpKind::Sin:
    return fcall("sin", x);
  case OpKind::Cos:
    return fcall("cos", x);
  case OpKind::Tan:
    return fcall("tan", x);
  case OpKind::Atan:
    return fcall("atan", x);
  case OpKind::Reciprocal:
    return f32(1) / x;
  case OpKind::Round: { // halves to even; llvm.round would send them away from zero
    Expr f = fcall("floor", x), d = x - f;
    Expr fEven = f - f32(2) * fcall("floor", f * f32(0.5)) == f32(0);
    return select(d > f32(0.5), f + f32(1), select(d < f32(0.5), f, select(fEven, f, f + f32(1))));
  }
  case OpKind::Asin:
    return fcall("atan", x / fcall("sqrt", f32(1) - x * x));
  case OpKind::Acos:
    return f32(M_PI / 2) - fcall("atan", x / fcall("sqrt", f32(1) - x * x));
  case OpKind::Sinh:
    return (fcall("expm1", x) - fcall("expm1", -x)) * f32(0.5);
  case OpKind::Cosh:
    return (fcall("exp", x) + fcall("exp", -x)) * f32(0.5);
  case OpKind::Asinh: { // odd function: evaluate on |x| to avoid cancellation for x < 0
    Expr ax = fcall("fabs", x);
    Expr r = fcall("log", ax + fcall("sqrt", ax * ax + f32(1)));
    return select(x < f32(0), -r, r);
  }
  case OpKind::Acosh:
    return fcall("log", x + fcall("sqrt", x * x - f32(1)));
  case OpKind::Atanh:
    return f32(0.5) * fcall("log1p", f32(2) * x / (f32(1) - x));
  case OpKind::Sign:
    return select(x > f32(0), f32(1), select(x < f32(0), f32(-1), f32(0)));
  case OpKind::Softplus: // exp overflows fp32 beyond ~88; log1p(exp(x)) == x to fp32 there
    return select(x > f32(30), x, fcall("log1p", fcall("exp", x)));
  case OpKind::Softsign:
    return x / (f32(1) + fcall("fabs", x));
  case OpKind::LeakyRelu:
    return select(x < f32(0), a("alpha", 0.01) * x, x);
  case OpKind::Elu:
    return select(x < f32(0), a("alpha", 1.0) * fcall("expm1", x), x);
  case OpKind::Selu: {
    double al = n.attrFloat("alpha", 1.67326319217681884765625);
    double gm = n.attrFloat("gamma", 1.05070102214813232421875);
    return select(x > f32(0), f32(gm) * x, f32(gm * al) * fcall("expm1", x));
  }
  case OpKind::Celu: {
    Expr al = a("alpha", 1.0);
    return max(x, f32(0)) + min(f32(0), al * fcall("expm1", x / al));
  }
  case OpKind::HardSigmoid:
    return max(f32(0), min(f32(1), a("alpha", 0.2) * x + a("beta", 0.5)));
  case OpKind::HardSwish:
    return x * max(f32(0), min(f32(1), x / f32(6) + f32(0.5)));
  case OpKind::ThresholdedRelu:
    return select(x > a("alpha", 1.0), x, f32(0));
  case OpKind::Shrink: {
    Expr l = a("lambd", 0.5), b = a("bias", 0.0);
    return select(x < -l, x + b, select(x > l, x - b, f32(0)));
  }
  case OpKind::Gelu: {
    if (n.attrString("approximate", "none") == "tanh")
      return f32(0.5) * x *
             (f32(1) + fcall("tanh", f32(std::sqrt(2.0 / M_PI)) * (x + f32(0.044715) * x * x * x)));
    return f32(0.5) * x * (f32(1) + fcall("erf", x * f32(M_SQRT1_2)));
  }
  case OpKind::Not:
    return fsel(x == f32(0));
  case OpKind::IsNaN: // ordered comparisons are false for NaN only
    return select(fcall("fabs", x) <= inf(), f32(0), f32(1));
  case OpKind::IsInf: {
    bool pos = n.attrInt("detect_positive", 1) != 0, neg = n.attrInt("detect_negative", 1) != 0;
    Expr r = f32(0);
    if (pos)
      r = select(x == inf(), f32(1), r);
    if (neg)
      r = select(x == -inf(), f32(1), r);
    return r;
  }
  default:
    break;
  }
  fail("node '{}' ({}): no TIR lowering for this unary operator", n.name, op);
}

Expr binaryExpr(const graph::Node &n, const Expr &a, const Expr &b) {
  const OpKind op = n.kind;
  switch (op) {
  case OpKind::Pow:
    return call(kF, "pow", {a, b});
  case OpKind::BitShift: {
    // Unsigned operands, exact integers in fp32 (Runtime.cpp checks). Scaling by a power of two
    // is exact: a left shift is exact until it leaves the type's range, where the run-time check
    // refuses the value instead of wrapping it; a right shift is floor(a / 2^b), 0 from 64 on.
    Expr scale = call(kF, "pow", {f32(2), call(kF, "fmin", {b, f32(64)})});
    return n.attrString("direction", "") == "LEFT" ? a * scale : fcall("floor", a / scale);
  }
  case OpKind::Mod:
    return n.attrInt("fmod", 0) ? a % b : floormod(a, b);
  case OpKind::Equal:
    return fsel(a == b);
  case OpKind::Less:
    return fsel(a < b);
  case OpKind::Greater:
    return fsel(a > b);
  case OpKind::LessOrEqual:
    return fsel(a <= b);
  case OpKind::GreaterOrEqual:
    return fsel(a >= b);
  case OpKind::And:
    return select(a != f32(0), fsel(b != f32(0)), f32(0));
  case OpKind::Or:
    return select(a != f32(0), f32(1), fsel(b != f32(0)));
  case OpKind::Xor:
    return select(a != f32(0), fsel(b == f32(0)), fsel(b != f32(0)));
  case OpKind::PRelu:
    return select(a < f32(0), a * b, a);
  case OpKind::Sum:
  case OpKind::Mean:
    return a + b;
  default:
    break;
  }
  fail("node '{}' ({}): no TIR lowering for this binary operator", n.name, op);
}

// Pow with an integer result (ONNX's type is the base's): pow in fp64 truncated toward zero, as
// `npuc ref` computes a float exponent (the same libm pow on the same doubles); an integer
// exponent is exact while |result| < 2^53, and the run-time check refuses results beyond 2^24.
Expr intPowExpr(const Expr &a, const Expr &b) {
  const DataType kD = DataType::Float(64);
  Expr p = call(kD, "pow", {cast(kD, a), cast(kD, b)});
  return cast(kF, select(p < fimm(0, kD), call(kD, "ceil", {p}), call(kD, "floor", {p})));
}

// outer x len x inner view around `axis`.
struct AxisView {
  int64_t outer = 1, len = 1, inner = 1;
};
AxisView axisView(const Shape &s, size_t axis) {
  AxisView v;
  v.len = s[axis];
  for (size_t d = 0; d < axis; ++d)
    v.outer *= s[d];
  for (size_t d = axis + 1; d < s.size(); ++d)
    v.inner *= s[d];
  return v;
}

// A loop nest over the output storing value(operand, iv) at each position, where operand(i)
// loads input i broadcast to the output coordinates iv.
template <typename F> Stmt mapNest(LowerCtx &c, const graph::Node &n, F value) {
  Buffer out = c.output(n, 0);
  std::vector<Var> iv = c.vars(out->shape.size(), "i");
  std::vector<Expr> idx = asExprs(iv);
  auto operand = [&](size_t i) {
    Buffer b = c.input(n, i);
    return load(b, broadcastIndex(b->shape, idx));
  };
  Expr v = value(operand, iv);
  return nest(iv, out->shape, store(out, v, flatIndex(idx, out->shape)));
}

Expr arithExpr(const graph::Node &n, const Expr &a, const Expr &b) {
  switch (n.kind) {
  case OpKind::Add:
    return a + b;
  case OpKind::Sub:
    return a - b;
  case OpKind::Mul:
    return a * b;
  case OpKind::Div:
    return a / b;
  case OpKind::Max:
    return max(a, b);
  case OpKind::Min:
    return min(a, b);
  default:
    break;
  }
  NPUC_ASSERT(false, fmt::format("Ops.def gives {} the Arith lowering", n.kind));
  return Expr();
}

} // namespace

// Add, Sub, Mul, Div (two operands), Max and Min (any number), broadcasting.
Stmt lowerArith(LowerCtx &c, const graph::Node &n) {
  return mapNest(c, n, [&](auto &operand, const std::vector<Var> &) {
    const OpKind op = n.kind;
    if (n.inputs.empty())
      fail("node '{}' ({}): no inputs", n.name, op);
    if (n.inputs.size() != 2 && op != OpKind::Max && op != OpKind::Min)
      fail("node '{}' ({}): expects 2 inputs, has {}", n.name, op, n.inputs.size());
    Expr v = operand(0);
    for (size_t i = 1; i < n.inputs.size(); ++i) {
      Expr b = operand(i);
      v = arithExpr(n, v, b);
    }
    // Integer Div truncates toward zero (the values are exact integers in fp32, Runtime.cpp).
    if (op == OpKind::Div && isIntStored(c.g.value(n.outputs[0]).dtype))
      v = select(v < f32(0), call(kF, "ceil", {v}), call(kF, "floor", {v}));
    return v;
  });
}

// Relu, Sigmoid, Tanh, Exp, Clip.
Stmt lowerActivation(LowerCtx &c, const graph::Node &n) {
  return mapNest(c, n, [&](auto &operand, const std::vector<Var> &) {
    Expr x = operand(0);
    switch (n.kind) {
    case OpKind::Relu:
      return select(x > f32(0), x, f32(0));
    case OpKind::Sigmoid:
      return f32(1) / (f32(1) + call(kF, "exp", {-x}));
    case OpKind::Tanh:
      return call(kF, "tanh", {x});
    case OpKind::Exp:
      return call(kF, "exp", {x});
    case OpKind::Clip: {
      Expr v = x;
      if (n.hasAttr("min"))
        v = max(v, f32(n.attrFloat("min", 0)));
      if (n.hasAttr("max"))
        v = min(v, f32(n.attrFloat("max", 0)));
      return v;
    }
    default:
      break;
    }
    NPUC_ASSERT(false, fmt::format("Ops.def gives {} the Activation lowering", n.kind));
    return Expr();
  });
}

Stmt lowerBatchNorm(LowerCtx &c, const graph::Node &n) {
  return mapNest(c, n, [&](auto &operand, const std::vector<Var> &iv) {
    Expr x = operand(0);
    if (n.inputs.size() < 5)
      fail("node '{}' (BatchNormalization): expects 5 inputs, has {}", n.name, n.inputs.size());
    if (iv.size() < 2)
      fail("node '{}' (BatchNormalization): input rank must be >= 2", n.name);
    double eps = n.attrFloat("epsilon", 1e-5);
    Expr ch = iv[1];
    Expr scale = load(c.input(n, 1), ch), bias = load(c.input(n, 2), ch);
    Expr mean = load(c.input(n, 3), ch), var = load(c.input(n, 4), ch);
    return (x - mean) / call(kF, "sqrt", {var + f32(eps)}) * scale + bias;
  });
}

Stmt lowerMap(LowerCtx &c, const graph::Node &n) {
  Buffer out = c.output(n, 0);
  std::vector<Var> iv = c.vars(out->shape.size(), "i");
  std::vector<Expr> idx = asExprs(iv);
  auto operand = [&](size_t i) {
    Buffer b = c.input(n, i);
    return load(b, broadcastIndex(b->shape, idx));
  };
  Expr v;
  if (graph::isExtUnaryOp(n.kind)) {
    v = unaryExpr(n, operand(0));
  } else if (n.kind == OpKind::Where) {
    v = select(operand(0) != f32(0), operand(1), operand(2));
  } else {
    v = operand(0);
    for (size_t i = 1; i < n.inputs.size(); ++i)
      v = n.kind == OpKind::Pow && isIntStored(c.g.value(n.outputs[0]).dtype)
              ? intPowExpr(v, operand(i))
              : binaryExpr(n, v, operand(i));
    if (n.kind == OpKind::Mean)
      v = v / f32(static_cast<double>(n.inputs.size()));
  }
  return nest(iv, out->shape, store(out, v, flatIndex(idx, out->shape)));
}

// Reduce*/ArgMax/ArgMin: a loop nest over the kept axes, the reduced axes inside it.
Stmt lowerReduce(LowerCtx &c, const graph::Node &n) {
  Buffer x = c.input(n, 0), out = c.output(n, 0);
  const OpKind op = n.kind;
  size_t r = x->shape.size();
  bool arg = op == OpKind::ArgMax || op == OpKind::ArgMin;
  std::set<int64_t> axes;
  if (arg) {
    axes.insert(normAxis(n, n.attrInt("axis", 0), r));
  } else {
    for (int64_t a : n.attrInts("axes"))
      axes.insert(normAxis(n, a, r));
    if (axes.empty())
      for (size_t d = 0; d < r; ++d)
        axes.insert(static_cast<int64_t>(d));
  }
  std::vector<Var> kv, rv; // kept-axis loops, reduced-axis loops
  Shape kShape, rShape, keep = x->shape;
  std::vector<Expr> xIdx;
  for (size_t d = 0; d < r; ++d) {
    Var v = c.var(axes.count(static_cast<int64_t>(d)) ? "r" : "i");
    xIdx.push_back(v);
    if (axes.count(static_cast<int64_t>(d))) {
      rv.push_back(v);
      rShape.push_back(x->shape[d]);
      keep[d] = 1;
    } else {
      kv.push_back(v);
      kShape.push_back(x->shape[d]);
    }
  }
  std::vector<Expr> oIdxV;
  for (size_t d = 0, k = 0; d < r; ++d)
    oIdxV.push_back(keep[d] == 1 && axes.count(static_cast<int64_t>(d)) ? imm(0) : Expr(kv[k++]));
  Expr oIdx = flatIndex(oIdxV, keep);
  Expr xv = load(x, flatIndex(xIdx, x->shape));
  Expr acc = load(out, oIdx);
  double count = static_cast<double>(numElements(rShape));
  if (arg) {
    // red[0] = best value so far, red[1] = its index; the first (or, with select_last_index,
    // the last) extreme wins.
    Buffer red = Buffer::make(out->name + "_best", kF, {2}, "local");
    Expr best = load(red, imm(0));
    bool last = n.attrInt("select_last_index", 0) != 0;
    Expr better =
        op == OpKind::ArgMax ? (last ? xv >= best : xv > best) : (last ? xv <= best : xv < best);
    Expr k = toF(rv[0]);
    Stmt body =
        seq({store(red, op == OpKind::ArgMax ? -inf() : inf(), imm(0)), store(red, f32(0), imm(1)),
             nest(rv, rShape,
                  seq({store(red, select(better, k, load(red, imm(1))), imm(1)),
                       store(red, select(better, xv, best), imm(0))})),
             store(out, load(red, imm(1)), oIdx)});
    return nest(kv, kShape, AllocateNode::make(red, body));
  }
  Expr init = op == OpKind::ReduceMax    ? -inf()
              : op == OpKind::ReduceMin  ? inf()
              : op == OpKind::ReduceProd ? f32(1)
                                         : f32(0);
  Expr step = op == OpKind::ReduceMax                                   ? max(acc, xv)
              : op == OpKind::ReduceMin                                 ? min(acc, xv)
              : op == OpKind::ReduceProd                                ? acc * xv
              : op == OpKind::ReduceL1                                  ? acc + fcall("fabs", xv)
              : op == OpKind::ReduceL2 || op == OpKind::ReduceSumSquare ? acc + xv * xv
              : op == OpKind::ReduceLogSumExp                           ? acc + fcall("exp", xv)
                                                                        : acc + xv;
  std::vector<Stmt> body{store(out, init, oIdx), nest(rv, rShape, store(out, step, oIdx))};
  if (op == OpKind::ReduceMean)
    body.push_back(store(out, acc / f32(count), oIdx));
  else if (op == OpKind::ReduceL2)
    body.push_back(store(out, fcall("sqrt", acc), oIdx));
  else if (op == OpKind::ReduceLogSum || op == OpKind::ReduceLogSumExp)
    body.push_back(store(out, fcall("log", acc), oIdx));
  return nest(kv, kShape, seq(body));
}

// LayerNormalization (blocks = the trailing dims from axis) and InstanceNormalization (blocks =
// the spatial dims of one (n, c)): mean, then variance, then the scaled output; red holds them.
// The statistics are fp64, as `npuc ref` computes them: over a near-constant block the variance
// is ~0, so the output is (x - mean) / sqrt(eps), and an fp32 mean's rounding error (an ulp of x)
// came out amplified ~300x (random-graph seed 64961; ops cases *_flat_rows, *_flat_plane).
// With LowerOptions::fp64Statistics off (a machine without fp64) they are fp32 and that
// amplification is accepted.
Stmt lowerNormalize(LowerCtx &c, const graph::Node &n) {
  const bool wide = c.options.fp64Statistics;
  const DataType kD = wide ? DataType::Float(64) : kF;
  Buffer x = c.input(n, 0), out = c.output(n, 0), scale = c.input(n, 1);
  bool layer = n.kind == OpKind::LayerNormalization;
  size_t axis =
      layer ? static_cast<size_t>(normAxis(n, n.attrInt("axis", -1), x->shape.size())) : 2;
  Shape norm(x->shape.begin() + static_cast<int64_t>(axis), x->shape.end());
  int64_t len = numElements(norm), blocks = x->numElements() / std::max<int64_t>(len, 1);
  double eps = n.attrFloat("epsilon", 1e-5);
  Var b = c.var("b"), k1 = c.var("k"), k2 = c.var("k"), k3 = c.var("k");
  RowStats red(c, out->name + "_stat", kD, 2, b, blocks);
  Expr mean = red.get(0), var = red.get(1);
  auto at = [&](const Var &k) { return b * len + k; };
  auto xd = [&](const Var &k) { return cast(kD, load(x, at(k))); };
  // Index of parameter p for element k of the block (numpy broadcast against `norm`).
  auto param = [&](const Buffer &p, const Var &k) -> Expr {
    if (!layer)
      return load(p, floormod(b, x->shape[1]));
    std::vector<int64_t> st = stridesOf(norm);
    std::vector<Expr> idx;
    // k < len: the outermost dim needs no floormod (which would hide k's affine form).
    for (size_t d = 0; d < norm.size(); ++d)
      idx.push_back(d == 0 ? floordiv(k, st[d]) : floormod(floordiv(k, st[d]), norm[d]));
    return load(p, broadcastIndex(p->shape, idx));
  };
  // red[1] holds 1 / sqrt(var + eps) once the variance is known. The output pass stays fp32
  // (twice the vector width) with the mean split into hi + lo: x - hi is exact where x is near
  // the mean (Sterbenz), which is where the rounding would be amplified.
  Expr hi = cast(kF, mean), lo = cast(kF, mean - cast(kD, hi));
  Expr centred = wide ? load(x, at(k3)) - hi - lo : load(x, at(k3)) - mean;
  Expr y = centred * cast(kF, var) * param(scale, k3);
  if (c.hasInput(n, 2))
    y = y + param(c.input(n, 2), k3);
  Expr dlen = fimm(static_cast<double>(len), kD);
  return red.wrap(
      {b}, {blocks},
      {red.set(0, fimm(0, kD)), forLoop(k1, imm(0), imm(len), red.set(0, mean + xd(k1))),
       red.set(0, mean / dlen), red.set(1, fimm(0, kD)),
       forLoop(k2, imm(0), imm(len), red.set(1, var + (xd(k2) - mean) * (xd(k2) - mean))),
       red.set(1, fimm(1, kD) / call(kD, "sqrt", {var / dlen + fimm(eps, kD)})),
       forLoop(k3, imm(0), imm(len), store(out, y, at(k3)))});
}

// LogSoftmax, Hardmax, LpNormalization and CumSum: per (outer, inner) line along the axis.
Stmt lowerAlongAxis(LowerCtx &c, const graph::Node &n) {
  Buffer x = c.input(n, 0), out = c.output(n, 0);
  const OpKind op = n.kind;
  size_t axis = static_cast<size_t>(
      normAxis(n, n.attrInt("axis", op == OpKind::LpNormalization ? -1 : 0), x->shape.size()));
  AxisView v = axisView(x->shape, axis);
  Var o = c.var("o"), i = c.var("i"), k1 = c.var("k"), k2 = c.var("k"), k3 = c.var("k");
  auto at = [&](const Expr &k) { return (o * v.len + k) * v.inner + i; };
  Buffer red = Buffer::make(out->name + "_red", kF, {2}, "local");
  Expr r0 = load(red, imm(0)), r1 = load(red, imm(1));
  std::vector<Stmt> body;
  if (op == OpKind::LogSoftmax) {
    body = {store(red, -inf(), imm(0)),
            forLoop(k1, imm(0), imm(v.len), store(red, max(r0, load(x, at(k1))), imm(0))),
            store(red, f32(0), imm(1)),
            forLoop(k2, imm(0), imm(v.len),
                    store(red, r1 + fcall("exp", load(x, at(k2)) - r0), imm(1))),
            forLoop(k3, imm(0), imm(v.len),
                    store(out, load(x, at(k3)) - r0 - fcall("log", r1), at(k3)))};
  } else if (op == OpKind::Hardmax) {
    Expr xv = load(x, at(k1));
    body = {store(red, -inf(), imm(0)), store(red, f32(0), imm(1)),
            forLoop(k1, imm(0), imm(v.len),
                    seq({store(red, select(xv > r0, toF(k1), r1), imm(1)),
                         store(red, max(r0, xv), imm(0))})),
            forLoop(k3, imm(0), imm(v.len), store(out, fsel(toF(k3) == r1), at(k3)))};
  } else if (op == OpKind::LpNormalization) {
    bool l1 = n.attrInt("p", 2) == 1;
    Expr xv = load(x, at(k1));
    body = {store(red, f32(0), imm(0)),
            forLoop(k1, imm(0), imm(v.len),
                    store(red, r0 + (l1 ? fcall("fabs", xv) : xv * xv), imm(0))),
            forLoop(k3, imm(0), imm(v.len),
                    store(out, load(x, at(k3)) / (l1 ? r0 : fcall("sqrt", r0)), at(k3)))};
  } else { // CumSum
    bool excl = n.attrInt("exclusive", 0) != 0, rev = n.attrInt("reverse", 0) != 0;
    Expr k = rev ? imm(v.len - 1) - k1 : Expr(k1);
    Expr xv = load(x, at(k));
    body = {store(red, f32(0), imm(0)),
            forLoop(k1, imm(0), imm(v.len),
                    excl ? seq({store(out, r0, at(k)), store(red, r0 + xv, imm(0))})
                         : seq({store(red, r0 + xv, imm(0)), store(out, r0, at(k))}))};
  }
  return forLoop(o, imm(0), imm(v.outer),
                 forLoop(i, imm(0), imm(v.inner), AllocateNode::make(red, seq(body))));
}

Stmt lowerLRN(LowerCtx &c, const graph::Node &n) {
  Buffer x = c.input(n, 0), out = c.output(n, 0);
  double alpha = n.attrFloat("alpha", 1e-4), beta = n.attrFloat("beta", 0.75);
  double bias = n.attrFloat("bias", 1.0);
  int64_t size = n.attrInt("size", 1), lo = (size - 1) / 2;
  int64_t N = x->shape[0], C = x->shape[1], inner = x->numElements() / std::max<int64_t>(N * C, 1);
  Var b = c.var("b"), ch = c.var("c"), i = c.var("i"), j = c.var("j");
  Buffer red = Buffer::make(out->name + "_sq", kF, {1}, "local");
  Expr cc = ch - lo + j;
  Expr xv = load(x, (b * C + clampIdx(cc, C)) * inner + i);
  Expr sq = select(cc >= 0 && cc < C, xv * xv, f32(0));
  Expr at = (b * C + ch) * inner + i;
  Stmt body =
      seq({store(red, f32(0), imm(0)),
           forLoop(j, imm(0), imm(size), store(red, load(red, imm(0)) + sq, imm(0))),
           store(out,
                 load(x, at) /
                     call(kF, "pow",
                          {f32(bias) + f32(alpha / static_cast<double>(size)) * load(red, imm(0)),
                           f32(beta)}),
                 at)});
  return forLoop(
      b, imm(0), imm(N),
      forLoop(ch, imm(0), imm(C), forLoop(i, imm(0), imm(inner), AllocateNode::make(red, body))));
}

// TopK without scratch arrays: the j-th pick is the best element strictly after the previous
// pick in (value, index) order, so k passes over the line give the sorted top k, ties by index.
Stmt lowerTopK(LowerCtx &c, const graph::Node &n) {
  Buffer x = c.input(n, 0), vals = c.output(n, 0), idxs = c.output(n, 1);
  size_t axis = static_cast<size_t>(normAxis(n, n.attrInt("axis", -1), x->shape.size()));
  int64_t k = n.attrInt("k", 1);
  bool largest = n.attrInt("largest", 1) != 0;
  AxisView v = axisView(x->shape, axis);
  Var o = c.var("o"), i = c.var("i"), j = c.var("j"), q = c.var("q");
  // red: previous value, previous index, best value, best index, take flag
  Buffer red = Buffer::make(vals->name + "_sel", kF, {5}, "local");
  auto R = [&](int s) { return load(red, imm(s)); };
  Expr xv = load(x, (o * v.len + q) * v.inner + i), qf = toF(q);
  Expr after =
      largest ? (xv < R(0) || (xv == R(0) && qf > R(1))) : (xv > R(0) || (xv == R(0) && qf > R(1)));
  Expr better = R(3) < f32(0) || (largest ? xv > R(2) : xv < R(2));
  Expr oAt = (o * k + j) * v.inner + i;
  Stmt pick = seq({store(red, largest ? -inf() : inf(), imm(2)), store(red, f32(-1), imm(3)),
                   forLoop(q, imm(0), imm(v.len),
                           seq({store(red, fsel(after && better), imm(4)),
                                store(red, select(R(4) != f32(0), xv, R(2)), imm(2)),
                                store(red, select(R(4) != f32(0), qf, R(3)), imm(3))})),
                   store(vals, R(2), oAt), store(idxs, R(3), oAt), store(red, R(2), imm(0)),
                   store(red, R(3), imm(1))});
  Stmt body = seq({store(red, largest ? inf() : -inf(), imm(0)), store(red, f32(-1), imm(1)),
                   forLoop(j, imm(0), imm(k), pick)});
  return forLoop(o, imm(0), imm(v.outer),
                 forLoop(i, imm(0), imm(v.inner), AllocateNode::make(red, body)));
}

} // namespace npuc::tir::lower
