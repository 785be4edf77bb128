// InstrMatch.cpp - perfect nests, affine access analysis and operation matching (InstrMatch.h).
#include "npu/isel/InstrMatch.h"

#include "tir/Equal.h"
#include "tir/Linear.h"
#include "tir/Simplify.h"
#include "tir/Substitute.h"

#include <cmath>
#include <limits>

namespace npuc::tir {

bool perfectNest(const Stmt &s, PerfectNest &out) {
  out = PerfectNest{};
  Stmt cur = s;
  while (const auto *f = cur.as<ForNode>()) {
    NestLoop l;
    l.var = f->var;
    const auto *mn = f->min.as<IntImmNode>();
    const auto *ex = f->extent.as<IntImmNode>();
    l.constant = mn && ex;
    if (l.constant) {
      l.min = mn->value;
      l.extent = ex->value;
    }
    out.loops.push_back(l);
    cur = f->body;
  }
  out.store = cur.as<StoreNode>();
  return out.store != nullptr;
}

bool affineAccess(const Buffer &b, const Expr &index, const std::vector<NestLoop> &loops,
                  Access &out) {
  out.buffer = b;
  out.strides.assign(loops.size(), 0);
  Expr rest = index;
  VarMap atMin;
  for (size_t l = 0; l < loops.size(); ++l) {
    int64_t c = 0;
    Expr r;
    if (!linearIn(rest, loops[l].var.node(), c, r))
      return false;
    if (c != 0 && !loops[l].constant)
      return false;
    out.strides[l] = c;
    rest = r;
    if (c != 0)
      atMin[loops[l].var.node()] = imm(loops[l].min);
  }
  // The base is the index with every loop at its minimum: rest + sum(stride * min).
  Expr base = rest;
  for (size_t l = 0; l < loops.size(); ++l)
    if (out.strides[l] != 0 && loops[l].min != 0)
      base = base + imm(out.strides[l] * loops[l].min);
  out.base = simplify(base);
  for (const NestLoop &l : loops)
    if (usesVar(out.base, l.var.node()))
      return false;
  return true;
}

Expr stripFloatCast(const Expr &e) {
  Expr cur = e;
  while (const auto *c = cur.as<CastNode>()) {
    if (!c->type.isFloat() || !c->value.type().isFloat())
      break;
    cur = c->value;
  }
  return cur;
}

namespace {

bool isLoad(const Expr &e) {
  return stripFloatCast(e).as<LoadNode>() != nullptr;
}

bool constValue(const Expr &e, double &v) {
  Expr x = stripFloatCast(e);
  if (const auto *f = x.as<FloatImmNode>()) {
    v = f->value;
    return true;
  }
  if (const auto *i = x.as<IntImmNode>()) {
    v = static_cast<double>(i->value);
    return true;
  }
  return false;
}

OpMatch make(const char *op, std::vector<Expr> srcs, double imm0 = 0, double imm1 = 0) {
  OpMatch m;
  m.op = op;
  for (Expr &s : srcs)
    m.srcs.push_back(stripFloatCast(s));
  m.imm0 = imm0;
  m.imm1 = imm1;
  return m;
}

constexpr double kInf = std::numeric_limits<double>::infinity();

// Unary ops the vector unit may offer, by the intrinsic name the lowering uses.
bool unaryIntrinsic(const std::string &name) {
  return name == "exp" || name == "tanh" || name == "sqrt" || name == "sigmoid" || name == "log" ||
         name == "fabs";
}

// x * c (or c * x) with x a load: the scale and the operand.
bool scaled(const Expr &e, Expr &x, double &c) {
  const auto *m = e.as<MulNode>();
  if (!m)
    return false;
  if (isLoad(m->a) && constValue(m->b, c)) {
    x = m->a;
    return true;
  }
  if (isLoad(m->b) && constValue(m->a, c)) {
    x = m->b;
    return true;
  }
  return false;
}

bool isDst(const Expr &e, const Buffer &dst, const Expr &dstIndex) {
  const auto *l = stripFloatCast(e).as<LoadNode>();
  return l && l->buffer.same(dst) && structuralEqual(l->index, dstIndex);
}

} // namespace

Expr selectAsMinMax(const Expr &e) {
  const auto *s = e.as<SelectNode>();
  if (!s || !isBinary(s->cond.kind()) || !s->trueValue.type().isFloat())
    return e;
  const auto *c = static_cast<const BinaryNode *>(s->cond.get());
  const NodeKind k = s->cond.kind();
  if (k != NodeKind::GT && k != NodeKind::GE && k != NodeKind::LT && k != NodeKind::LE)
    return e;
  const bool greater = k == NodeKind::GT || k == NodeKind::GE;
  if (structuralEqual(s->trueValue, c->a) && structuralEqual(s->falseValue, c->b))
    return greater ? max(c->a, c->b) : min(c->a, c->b);
  if (structuralEqual(s->trueValue, c->b) && structuralEqual(s->falseValue, c->a))
    return greater ? min(c->a, c->b) : max(c->a, c->b);
  return e;
}

std::vector<OpMatch> matchOps(const Expr &value, const Buffer &dst, const Expr &dstIndex) {
  std::vector<OpMatch> out;
  Expr v = selectAsMinMax(stripFloatCast(value));
  double c = 0, c2 = 0;
  if (constValue(v, c)) {
    out.push_back(make("fill", {}, c));
    return out;
  }
  if (isLoad(v)) {
    out.push_back(make("copy", {v}));
    return out;
  }
  if (const auto *call = v.as<CallNode>()) {
    if (unaryIntrinsic(call->name) && call->args.size() == 1 && isLoad(call->args[0]))
      out.push_back(make(call->name.c_str(), {call->args[0]}));
    return out;
  }
  Expr x;
  const auto *bin = isBinary(v.kind()) ? static_cast<const BinaryNode *>(v.get()) : nullptr;
  if (!bin || !v.type().isFloat())
    return out;
  const Expr &a = bin->a, &b = bin->b;
  const bool la = isLoad(a), lb = isLoad(b);
  switch (v.kind()) {
  case NodeKind::Add:
    if (la && lb)
      out.push_back(make("add", {a, b}));
    else if (la && constValue(b, c))
      out.push_back(make("muladd", {a}, 1.0, c));
    else if (lb && constValue(a, c))
      out.push_back(make("muladd", {b}, 1.0, c));
    else if (scaled(a, x, c) && constValue(b, c2))
      out.push_back(make("muladd", {x}, c, c2));
    else if (scaled(b, x, c) && constValue(a, c2))
      out.push_back(make("muladd", {x}, c, c2));
    // dst += a * b into the store's own element: the tensor unit's accumulation.
    for (int side = 0; side < 2; ++side) {
      const Expr &acc = side == 0 ? a : b, &prod = side == 0 ? b : a;
      const auto *m = prod.as<MulNode>();
      if (isDst(acc, dst, dstIndex) && m && isLoad(m->a) && isLoad(m->b)) {
        out.push_back(make("matmul", {m->a, m->b}));
        break;
      }
    }
    break;
  case NodeKind::Sub:
    if (la && lb)
      out.push_back(make("sub", {a, b}));
    else if (la && constValue(b, c))
      out.push_back(make("muladd", {a}, 1.0, -c));
    else if (lb && constValue(a, c))
      out.push_back(make("muladd", {b}, -1.0, c));
    break;
  case NodeKind::Mul:
    if (la && lb)
      out.push_back(make("mul", {a, b}));
    else if (scaled(v, x, c))
      out.push_back(make("muladd", {x}, c, 0.0));
    break;
  case NodeKind::Div:
    if (la && lb)
      out.push_back(make("div", {a, b}));
    // x / 2^k == x * 2^-k exactly (for no other divisor is the reciprocal's product exact).
    else if (la && constValue(b, c) && c != 0 && std::abs(c) == std::ldexp(1.0, std::ilogb(c)))
      out.push_back(make("muladd", {a}, 1.0 / c, 0.0));
    break;
  case NodeKind::Max:
  case NodeKind::Min: {
    const bool isMax = v.kind() == NodeKind::Max;
    if (la && lb) {
      out.push_back(make(isMax ? "max" : "min", {a, b}));
      break;
    }
    // clip(x, lo, hi) == min(max(x, lo), hi) (either nesting, lo <= hi).
    const NodeKind innerKind = isMax ? NodeKind::Min : NodeKind::Max;
    const auto *inner = a.kind() == innerKind ? static_cast<const BinaryNode *>(a.get()) : nullptr;
    if (inner && constValue(b, c) && isLoad(inner->a) && constValue(inner->b, c2)) {
      double lo = isMax ? c : c2, hi = isMax ? c2 : c;
      if (lo <= hi)
        out.push_back(make("clip", {inner->a}, lo, hi));
      break;
    }
    Expr ld = la ? a : b;
    if (!(la || lb) || !constValue(la ? b : a, c))
      break;
    if (isMax && c == 0)
      out.push_back(make("relu", {ld}));
    out.push_back(isMax ? make("clip", {ld}, c, kInf) : make("clip", {ld}, -kInf, c));
    break;
  }
  default:
    break;
  }
  return out;
}

} // namespace npuc::tir
