// Simplify.cpp - the rewrite rules listed in Simplify.h, as an IRMutator.
#include "tir/Simplify.h"

#include "tir/Eval.h"
#include "tir/IRMutator.h"

#include <cmath>
#include <cstdint>

namespace npuc::tir {
namespace {

bool intConst(const Expr &e, int64_t &v) {
  if (const auto *op = e.as<IntImmNode>()) {
    v = op->value;
    return true;
  }
  return false;
}

double roundTo(double v, DataType t) {
  return t.bits == 32 ? static_cast<float>(v) : v;
}

bool commutative(NodeKind k) {
  return k == NodeKind::Add || k == NodeKind::Mul || k == NodeKind::Min || k == NodeKind::Max ||
         k == NodeKind::EQ || k == NodeKind::NE || k == NodeKind::And || k == NodeKind::Or;
}

class Simplifier : public IRMutator {
protected:
  Expr binary(NodeKind k, const Expr &self, const BinaryNode *op) {
    Expr a = mutate(op->a), b = mutate(op->b);
    DataType t = a.type();
    int64_t ca = 0, cb = 0;
    bool ia = intConst(a, ca), ib = intConst(b, cb);
    if (ia && ib) {
      int64_t out = 0;
      if (foldIntBinary(k, ca, cb, t, out))
        return IntImmNode::make(out, self.type());
    }
    const auto *fa = a.as<FloatImmNode>(), *fb = b.as<FloatImmNode>();
    if (fa && fb) {
      if (auto folded = foldFloat(k, fa->value, fb->value, self.type()); folded.defined())
        return folded;
    }
    // Constants to the right of commutative integer operators, so later rules see x op c.
    if (t.isIntegral() && commutative(k) && ia && !ib) {
      std::swap(a, b);
      std::swap(ca, cb);
      std::swap(ia, ib);
    }
    if (t.isIntegral() && ib) {
      // The rules below merge two constants; where that fold is refused (int32/int64 overflow,
      // Eval.h) the rule is not applied and the expression stays as it is.
      Expr c;
      switch (k) {
      case NodeKind::Add:
        if (cb == 0)
          return a;
        if (const auto *inner = a.as<AddNode>();
            inner && (c = fold(NodeKind::Add, inner->b, cb)).defined())
          return simplifyAgain(inner->a + c);
        if (const auto *inner = a.as<SubNode>();
            inner && (c = fold(NodeKind::Sub, b, inner->b)).defined())
          return simplifyAgain(inner->a + c);
        // x + -c reads as x - c.
        if (t.isInt() && cb < 0 &&
            (c = fold(NodeKind::Sub, IntImmNode::make(0, t), cb)).defined() &&
            c.as<IntImmNode>()->value > 0)
          return simplifyAgain(a - c);
        break;
      case NodeKind::Sub:
        if (cb == 0)
          return a;
        if (const auto *inner = a.as<AddNode>();
            inner && (c = fold(NodeKind::Sub, inner->b, cb)).defined())
          return simplifyAgain(inner->a + c);
        if (const auto *inner = a.as<SubNode>();
            inner && (c = fold(NodeKind::Add, inner->b, cb)).defined())
          return simplifyAgain(inner->a - c);
        if (t.isInt() && cb < 0 &&
            (c = fold(NodeKind::Sub, IntImmNode::make(0, t), cb)).defined() &&
            c.as<IntImmNode>()->value > 0)
          return simplifyAgain(a + c);
        break;
      case NodeKind::Mul:
        if (cb == 1)
          return a;
        if (cb == 0)
          return b;
        // (x + c1) * c2 -> x * c2 + c1 * c2: constants stay outermost in index expressions.
        if (const auto *inner = a.as<AddNode>();
            inner && (c = fold(NodeKind::Mul, inner->b, cb)).defined())
          return simplifyAgain(inner->a * b + c);
        if (const auto *inner = a.as<SubNode>();
            inner && (c = fold(NodeKind::Mul, inner->b, cb)).defined())
          return simplifyAgain(inner->a * b - c);
        if (const auto *inner = a.as<MulNode>();
            inner && (c = fold(NodeKind::Mul, inner->b, cb)).defined())
          return simplifyAgain(inner->a * c);
        break;
      case NodeKind::Div:
      case NodeKind::FloorDiv:
        if (cb == 1)
          return a;
        break;
      case NodeKind::Mod:
      case NodeKind::FloorMod:
        if (cb == 1)
          return IntImmNode::make(0, t);
        break;
      case NodeKind::And:
        return cb ? a : b;
      case NodeKind::Or:
        return cb ? b : a;
      default:
        break;
      }
    }
    if ((t.isInt() || t.isUInt()) && !ib && (k == NodeKind::Add || k == NodeKind::Sub)) {
      if (Expr moved = constantsOutward(k, a, b); moved.defined())
        return simplifyAgain(moved);
    }
    if (t.isIntegral() && (k == NodeKind::Sub) && a.same(b) && a.as<VarNode>())
      return IntImmNode::make(0, t);
    if ((k == NodeKind::Min || k == NodeKind::Max) && a.same(b))
      return a;
    if (t.isFloat() && fb) {
      // x - (+0.0) is exact for every x; x + 0.0 is not (it turns -0.0 into +0.0).
      if (k == NodeKind::Sub && fb->value == 0 && !std::signbit(fb->value))
        return a;
      if ((k == NodeKind::Mul || k == NodeKind::Div) && fb->value == 1)
        return a;
    }
    if (a.same(op->a) && b.same(op->b))
      return self;
    return makeBinary(k, a, b);
  }

  // Moves a constant term of either operand of x +/- y outward: (x + c) + y -> (x + y) + c,
  // x - (y - c) -> (x - y) + c, ...; so shifted indices such as (i + 1) * 2 + j - 2 fold.
  static Expr constantsOutward(NodeKind k, const Expr &a, const Expr &b) {
    auto split = [](const Expr &e, Expr &x, Expr &c, bool &plus) {
      if (e.kind() != NodeKind::Add && e.kind() != NodeKind::Sub)
        return false;
      // Only now is the downcast valid (UBSan's vptr check flags it on any other node).
      const auto *op = static_cast<const BinaryNode *>(e.get());
      if (!op->b.as<IntImmNode>())
        return false;
      x = op->a;
      c = op->b;
      plus = e.kind() == NodeKind::Add;
      return true;
    };
    Expr x, c;
    bool plus = false;
    if (split(a, x, c, plus)) { // (x +/- c) +/- b
      Expr rest = k == NodeKind::Add ? x + b : x - b;
      return plus ? rest + c : rest - c;
    }
    if (split(b, x, c, plus)) { // a +/- (x +/- c)
      Expr rest = k == NodeKind::Add ? a + x : a - x;
      bool addC = (k == NodeKind::Add) == plus;
      return addC ? rest + c : rest - c;
    }
    return Expr();
  }

  // x op y of two integer constants (x an IntImm Expr, y its value or an IntImm), or a null Expr
  // when x is no constant or the fold is refused.
  static Expr fold(NodeKind k, const Expr &x, int64_t y) {
    const auto *cx = x.as<IntImmNode>();
    int64_t out = 0;
    if (!cx || !foldIntBinary(k, cx->value, y, x.type(), out))
      return Expr();
    return IntImmNode::make(out, x.type());
  }
  static Expr fold(NodeKind k, const Expr &x, const Expr &y) {
    const auto *cy = y.as<IntImmNode>();
    return cy ? fold(k, x, cy->value) : Expr();
  }

  // Rules produce new nodes whose children may enable further folding (e.g. (x+1)+(-1)).
  Expr simplifyAgain(const Expr &e) { return mutate(e); }

  static Expr foldFloat(NodeKind k, double a, double b, DataType rt) {
    switch (k) {
    case NodeKind::Add:
      return FloatImmNode::make(roundTo(a + b, rt), rt);
    case NodeKind::Sub:
      return FloatImmNode::make(roundTo(a - b, rt), rt);
    case NodeKind::Mul:
      return FloatImmNode::make(roundTo(a * b, rt), rt);
    case NodeKind::Div:
      return FloatImmNode::make(roundTo(a / b, rt), rt);
    case NodeKind::Min:
      return FloatImmNode::make(a < b ? a : b, rt);
    case NodeKind::Max:
      return FloatImmNode::make(a > b ? a : b, rt);
    case NodeKind::EQ:
      return IntImmNode::make(a == b, rt);
    case NodeKind::NE:
      return IntImmNode::make(a != b, rt);
    case NodeKind::LT:
      return IntImmNode::make(a < b, rt);
    case NodeKind::LE:
      return IntImmNode::make(a <= b, rt);
    case NodeKind::GT:
      return IntImmNode::make(a > b, rt);
    case NodeKind::GE:
      return IntImmNode::make(a >= b, rt);
    default:
      return Expr();
    }
  }

#define TIR_BINARY(Name, Symbol)                                                                   \
  Expr mutate##Name(const Name##Node *op, const Expr &self) override {                             \
    return binary(NodeKind::Name, self, op);                                                       \
  }
#include "tir/IRNodes.def"

  Expr mutateNot(const NotNode *op, const Expr &self) override {
    Expr a = mutate(op->a);
    int64_t c = 0;
    if (intConst(a, c))
      return IntImmNode::make(c == 0, DataType::Bool());
    if (const auto *inner = a.as<NotNode>())
      return inner->a;
    return a.same(op->a) ? self : NotNode::make(a);
  }

  Expr mutateSelect(const SelectNode *op, const Expr &self) override {
    Expr c = mutate(op->cond), t = mutate(op->trueValue), f = mutate(op->falseValue);
    int64_t cv = 0;
    if (intConst(c, cv))
      return cv ? t : f;
    if (t.same(f))
      return t;
    if (c.same(op->cond) && t.same(op->trueValue) && f.same(op->falseValue))
      return self;
    return SelectNode::make(c, t, f);
  }

  Expr mutateCast(const CastNode *op, const Expr &self) override {
    Expr v = mutate(op->value);
    DataType t = op->type;
    if (v.type() == t)
      return v;
    int64_t c = 0;
    if (intConst(v, c)) {
      if (t.isIntegral())
        return IntImmNode::make(wrapInt(c, t), t);
      if (t.isFloat()) {
        const bool u64 = v.type().isUInt() && v.type().bits >= 64; // c is the bit pattern
        double d = u64 ? static_cast<double>(static_cast<uint64_t>(c)) : static_cast<double>(c);
        return FloatImmNode::make(roundTo(d, t), t);
      }
    }
    if (const auto *f = v.as<FloatImmNode>(); f && t.isFloat())
      return FloatImmNode::make(roundTo(f->value, t), t);
    return v.same(op->value) ? self : CastNode::make(t, v);
  }

  Stmt mutateFor(const ForNode *op, const Stmt &self) override {
    Expr mn = mutate(op->min), ext = mutate(op->extent);
    int64_t e = 0;
    if (intConst(ext, e) && e <= 0)
      return SeqNode::make({});
    Stmt body = mutate(op->body);
    if (mn.same(op->min) && ext.same(op->extent) && body.same(op->body))
      return self;
    return ForNode::make(op->var, mn, ext, op->forKind, body);
  }

  Stmt mutateIfThenElse(const IfThenElseNode *op, const Stmt &self) override {
    Expr c = mutate(op->cond);
    int64_t cv = 0;
    if (intConst(c, cv)) {
      if (cv)
        return mutate(op->thenCase);
      return op->elseCase.defined() ? mutate(op->elseCase) : SeqNode::make({});
    }
    Stmt t = mutate(op->thenCase), e = mutate(op->elseCase);
    if (c.same(op->cond) && t.same(op->thenCase) && e.same(op->elseCase))
      return self;
    return IfThenElseNode::make(c, t, e);
  }

  Stmt mutateSeq(const SeqNode *op, const Stmt &self) override {
    std::vector<Stmt> out;
    bool changed = false;
    for (const Stmt &s : op->stmts) {
      Stmt m = mutate(s);
      if (const auto *inner = m.as<SeqNode>()) {
        // Nested sequences (including empty ones left by dropped loops) are spliced in.
        out.insert(out.end(), inner->stmts.begin(), inner->stmts.end());
        changed = true;
        continue;
      }
      changed |= !m.same(s);
      out.push_back(m);
    }
    return changed ? SeqNode::make(std::move(out)) : self;
  }
};

} // namespace

Expr simplify(const Expr &e) {
  return Simplifier().mutate(e);
}
Stmt simplify(const Stmt &s) {
  return Simplifier().mutate(s);
}

} // namespace npuc::tir
