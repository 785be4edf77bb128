// Bound.cpp - interval and modular-fact rules (see Bound.h).
#include "tir/Bound.h"

#include "tir/Eval.h"

#include <algorithm>
#include <numeric>

namespace npuc::tir {
namespace {

using I128 = __int128;

int64_t clamp(I128 v) {
  if (v <= Interval::kNegInf)
    return Interval::kNegInf;
  if (v >= Interval::kPosInf)
    return Interval::kPosInf;
  return static_cast<int64_t>(v);
}

bool isInf(int64_t v) {
  return v == Interval::kNegInf || v == Interval::kPosInf;
}

// a + b where an infinite operand stays infinite (-inf + +inf cannot arise from lo+lo / hi+hi).
int64_t add(int64_t a, int64_t b) {
  if (isInf(a))
    return a;
  if (isInf(b))
    return b;
  return clamp(static_cast<I128>(a) + b);
}

int64_t neg(int64_t a) {
  if (a == Interval::kNegInf)
    return Interval::kPosInf;
  if (a == Interval::kPosInf)
    return Interval::kNegInf;
  return -a;
}

int64_t mul(int64_t a, int64_t b) {
  if (a == 0 || b == 0)
    return 0;
  if (isInf(a) || isInf(b))
    return (a > 0) == (b > 0) ? Interval::kPosInf : Interval::kNegInf;
  return clamp(static_cast<I128>(a) * b);
}

// Division by a positive constant, monotone; infinities stay infinite.
int64_t divBy(int64_t a, int64_t c, bool floor) {
  if (isInf(a))
    return a;
  return floor ? floorDivInt(a, c) : a / c;
}

Interval full() {
  return {};
}

bool intConst(const Expr &e, int64_t &v) {
  if (const auto *op = e.as<IntImmNode>()) {
    v = op->value;
    return true;
  }
  return false;
}

ModFact norm(int64_t coeff, int64_t base) {
  coeff = coeff < 0 ? -coeff : coeff;
  if (coeff > 0)
    base = floorModInt(base, coeff);
  return {coeff, base};
}

bool mulOk(int64_t a, int64_t b, int64_t &out) {
  return !__builtin_mul_overflow(a, b, &out);
}

ModFact unite(ModFact x, ModFact y) {
  int64_t d = 0;
  if (__builtin_sub_overflow(x.base, y.base, &d))
    return {1, 0};
  int64_t g = std::gcd(std::gcd(x.coeff, y.coeff), d < 0 ? -d : d);
  return norm(g, x.base);
}

} // namespace

const char *truthName(Truth t) {
  switch (t) {
  case Truth::True:
    return "true";
  case Truth::False:
    return "false";
  case Truth::Unknown:
    return "unknown";
  }
  return "?";
}

void BoundAnalyzer::bind(const Var &v, int64_t min, int64_t extent) {
  ranges_[v.get()] = {min, add(min, extent - 1)};
}

Interval BoundAnalyzer::bound(const Expr &e) const {
  if (!e.defined() || !e.type().isIntegral())
    return full();
  if (e.type().isBool()) {
    Truth t = decide(e);
    if (t == Truth::Unknown)
      return {0, 1};
    return t == Truth::True ? Interval{1, 1} : Interval{0, 0};
  }
  int64_t c = 0;
  switch (e.kind()) {
  case NodeKind::IntImm:
    return {e.as<IntImmNode>()->value, e.as<IntImmNode>()->value};
  case NodeKind::Var: {
    auto it = ranges_.find(e.get());
    return it == ranges_.end() ? full() : it->second;
  }
  case NodeKind::Add: {
    Interval a = bound(e.as<AddNode>()->a), b = bound(e.as<AddNode>()->b);
    return {add(a.lo, b.lo), add(a.hi, b.hi)};
  }
  case NodeKind::Sub: {
    Interval a = bound(e.as<SubNode>()->a), b = bound(e.as<SubNode>()->b);
    return {add(a.lo, neg(b.hi)), add(a.hi, neg(b.lo))};
  }
  case NodeKind::Mul: {
    Interval a = bound(e.as<MulNode>()->a), b = bound(e.as<MulNode>()->b);
    int64_t p[] = {mul(a.lo, b.lo), mul(a.lo, b.hi), mul(a.hi, b.lo), mul(a.hi, b.hi)};
    return {*std::min_element(p, p + 4), *std::max_element(p, p + 4)};
  }
  case NodeKind::FloorDiv:
  case NodeKind::Div: {
    const auto *op = static_cast<const BinaryNode *>(e.get());
    if (!intConst(op->b, c) || c <= 0)
      return full();
    Interval a = bound(op->a);
    bool fl = e.kind() == NodeKind::FloorDiv;
    return {divBy(a.lo, c, fl), divBy(a.hi, c, fl)};
  }
  case NodeKind::FloorMod:
  case NodeKind::Mod: {
    const auto *op = static_cast<const BinaryNode *>(e.get());
    if (!intConst(op->b, c) || c <= 0)
      return full();
    Interval a = bound(op->a);
    if (e.kind() == NodeKind::Mod && a.lo < 0)
      return {-(c - 1), a.hi <= 0 ? 0 : c - 1};
    // Within one period the remainder is the identity shifted; otherwise any residue.
    if (a.bounded() && floorDivInt(a.lo, c) == floorDivInt(a.hi, c))
      return {floorModInt(a.lo, c), floorModInt(a.hi, c)};
    return {0, c - 1};
  }
  case NodeKind::Min:
  case NodeKind::Max: {
    const auto *op = static_cast<const BinaryNode *>(e.get());
    Interval a = bound(op->a), b = bound(op->b);
    if (e.kind() == NodeKind::Min)
      return {std::min(a.lo, b.lo), std::min(a.hi, b.hi)};
    return {std::max(a.lo, b.lo), std::max(a.hi, b.hi)};
  }
  case NodeKind::Select: {
    const auto *op = e.as<SelectNode>();
    Truth t = decide(op->cond);
    if (t == Truth::True)
      return bound(op->trueValue);
    if (t == Truth::False)
      return bound(op->falseValue);
    Interval a = bound(op->trueValue), b = bound(op->falseValue);
    return {std::min(a.lo, b.lo), std::max(a.hi, b.hi)};
  }
  case NodeKind::Cast: {
    const auto *op = e.as<CastNode>();
    if (op->value.type().isIntegral() && e.type().isInt() && e.type().bits >= 64)
      return bound(op->value);
    return full();
  }
  default:
    return full();
  }
}

ModFact BoundAnalyzer::modular(const Expr &e) const {
  if (!e.defined() || !e.type().isIntegral())
    return {1, 0};
  int64_t c = 0;
  switch (e.kind()) {
  case NodeKind::IntImm:
    return {0, e.as<IntImmNode>()->value};
  case NodeKind::Var: {
    Interval r = bound(e);
    if (r.isConst())
      return {0, r.lo};
    return {1, 0};
  }
  case NodeKind::Add:
  case NodeKind::Sub: {
    const auto *op = static_cast<const BinaryNode *>(e.get());
    ModFact a = modular(op->a), b = modular(op->b);
    int64_t base = 0;
    bool ovf = e.kind() == NodeKind::Add ? __builtin_add_overflow(a.base, b.base, &base)
                                         : __builtin_sub_overflow(a.base, b.base, &base);
    if (ovf)
      return {1, 0};
    return norm(std::gcd(a.coeff, b.coeff), base);
  }
  case NodeKind::Mul: {
    const auto *op = e.as<MulNode>();
    ModFact a = modular(op->a), b = modular(op->b);
    int64_t cc = 0, cb = 0, bc = 0, bb = 0;
    if (!mulOk(a.coeff, b.coeff, cc) || !mulOk(a.coeff, b.base, cb) ||
        !mulOk(b.coeff, a.base, bc) || !mulOk(a.base, b.base, bb))
      return {1, 0};
    return norm(std::gcd(std::gcd(cc, cb < 0 ? -cb : cb), bc < 0 ? -bc : bc), bb);
  }
  case NodeKind::FloorMod:
  case NodeKind::Mod: {
    const auto *op = static_cast<const BinaryNode *>(e.get());
    if (!intConst(op->b, c) || c <= 0)
      return {1, 0};
    if (e.kind() == NodeKind::Mod && bound(op->a).lo < 0)
      return {1, 0};
    ModFact a = modular(op->a);
    if (a.coeff == 0)
      return {0, floorModInt(a.base, c)};
    int64_t g = std::gcd(a.coeff, c);
    if (g == c)
      return {0, floorModInt(a.base, c)};
    return norm(g, a.base);
  }
  case NodeKind::FloorDiv: {
    const auto *op = e.as<FloorDivNode>();
    if (!intConst(op->b, c) || c <= 0)
      return {1, 0};
    ModFact a = modular(op->a);
    if (a.coeff == 0)
      return {0, floorDivInt(a.base, c)};
    if (a.coeff % c == 0)
      return norm(a.coeff / c, floorDivInt(a.base, c));
    return {1, 0};
  }
  case NodeKind::Min:
  case NodeKind::Max: {
    const auto *op = static_cast<const BinaryNode *>(e.get());
    return unite(modular(op->a), modular(op->b));
  }
  case NodeKind::Select: {
    const auto *op = e.as<SelectNode>();
    return unite(modular(op->trueValue), modular(op->falseValue));
  }
  default:
    return {1, 0};
  }
}

Truth BoundAnalyzer::decide(const Expr &cond) const {
  if (!cond.defined())
    return Truth::Unknown;
  switch (cond.kind()) {
  case NodeKind::IntImm:
    return cond.as<IntImmNode>()->value ? Truth::True : Truth::False;
  case NodeKind::Not: {
    Truth t = decide(cond.as<NotNode>()->a);
    return t == Truth::Unknown ? t : (t == Truth::True ? Truth::False : Truth::True);
  }
  case NodeKind::And:
  case NodeKind::Or: {
    const auto *op = static_cast<const BinaryNode *>(cond.get());
    Truth a = decide(op->a), b = decide(op->b);
    Truth dominant = cond.kind() == NodeKind::And ? Truth::False : Truth::True;
    if (a == dominant || b == dominant)
      return dominant;
    if (a == Truth::Unknown || b == Truth::Unknown)
      return Truth::Unknown;
    return a; // both the neutral value
  }
  case NodeKind::EQ:
  case NodeKind::NE:
  case NodeKind::LT:
  case NodeKind::LE:
  case NodeKind::GT:
  case NodeKind::GE:
    break;
  default:
    return Truth::Unknown;
  }
  const auto *op = static_cast<const BinaryNode *>(cond.get());
  if (!op->a.type().isIntegral() || op->a.type().isBool())
    return Truth::Unknown;
  Expr diff = op->a - op->b;
  Interval d = bound(diff);
  auto pick = [](bool yes, bool no) {
    return yes ? Truth::True : (no ? Truth::False : Truth::Unknown);
  };
  switch (cond.kind()) {
  case NodeKind::LT:
    return pick(d.hi != Interval::kPosInf && d.hi < 0, d.lo >= 0);
  case NodeKind::LE:
    return pick(d.hi <= 0, d.lo > 0);
  case NodeKind::GT:
    return pick(d.lo > 0, d.hi <= 0);
  case NodeKind::GE:
    return pick(d.lo >= 0, d.hi != Interval::kPosInf && d.hi < 0);
  default:
    break;
  }
  ModFact m = modular(diff);
  bool zero = (d.lo == 0 && d.hi == 0) || (m.coeff == 0 && m.base == 0);
  bool nonzero =
      d.lo > 0 || d.hi < 0 || (m.coeff == 0 && m.base != 0) || (m.coeff > 0 && m.base != 0);
  return cond.kind() == NodeKind::EQ ? pick(zero, nonzero) : pick(nonzero, zero);
}

} // namespace npuc::tir
