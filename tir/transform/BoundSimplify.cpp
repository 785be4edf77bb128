// BoundSimplify.cpp - interval-decided min/max removal (BoundSimplify.h).
#include "tir/transform/BoundSimplify.h"

#include "tir/Bound.h"
#include "tir/IRMutator.h"
#include "tir/Simplify.h"

namespace npuc::tir {
namespace {

class BoundSimplifier : public IRMutator {
protected:
  Stmt mutateFor(const ForNode *op, const Stmt &self) override {
    const auto *mn = op->min.as<IntImmNode>();
    const auto *ex = op->extent.as<IntImmNode>();
    if (mn && ex && ex->value >= 1)
      bounds_.bind(op->var, mn->value, ex->value);
    Stmt out = IRMutator::mutateFor(op, self);
    bounds_.unbind(op->var);
    return out;
  }

  Expr mutateMin(const MinNode *op, const Expr &self) override {
    return decide(op, self, /*isMin=*/true);
  }
  Expr mutateMax(const MaxNode *op, const Expr &self) override {
    return decide(op, self, /*isMin=*/false);
  }

private:
  BoundAnalyzer bounds_;

  template <typename Node> Expr decide(const Node *op, const Expr &self, bool isMin) {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (self.type().isIntegral()) {
      Interval ia = bounds_.bound(a), ib = bounds_.bound(b);
      // a <= b everywhere: min is a, max is b (and symmetrically).
      if (ia.hi != Interval::kPosInf && ib.lo != Interval::kNegInf && ia.hi <= ib.lo)
        return isMin ? a : b;
      if (ib.hi != Interval::kPosInf && ia.lo != Interval::kNegInf && ib.hi <= ia.lo)
        return isMin ? b : a;
    }
    if (a.same(op->a) && b.same(op->b))
      return self;
    return isMin ? min(a, b) : max(a, b);
  }
};

} // namespace

PrimFunc boundSimplify(const PrimFunc &f) {
  PrimFunc out = f;
  out.body = simplify(BoundSimplifier().mutate(f.body));
  return out;
}

} // namespace npuc::tir
