// LoopCollapse.cpp - merging contiguous loop pairs (see LoopCollapse.h).
#include "tir/transform/LoopCollapse.h"

#include "tir/Bound.h"
#include "tir/IRMutator.h"
#include "tir/Linear.h"
#include "tir/Simplify.h"
#include "tir/Substitute.h"

namespace npuc::tir {
namespace {

bool isZero(const Expr &e) {
  const auto *c = e.as<IntImmNode>();
  return c && c->value == 0;
}

// Rewrites the indices that use i/j into the fused variable; `ok` turns false on an index
// that is not of the contiguous form.
class IndexRewriter : public IRMutator {
public:
  const VarNode *i = nullptr, *j = nullptr;
  int64_t innerExtent = 0;
  Var fused;
  bool ok = true;

  Expr rewrite(const Expr &idx) {
    if (!usesVar(idx, i) && !usesVar(idx, j))
      return idx;
    int64_t ci = 0, cj = 0;
    Expr r1, r2;
    int64_t stride = 0;
    if (!linearIn(idx, i, ci, r1) || !linearIn(r1, j, cj, r2) || cj == 0 ||
        __builtin_mul_overflow(cj, innerExtent, &stride) || ci != stride) {
      ok = false;
      return idx;
    }
    Expr t = cj == 1 ? Expr(fused) : fused * IntImmNode::make(cj, fused.type());
    return simplify(isZero(r2) ? t : r2 + t);
  }

protected:
  Expr mutateLoad(const LoadNode *op, const Expr &self) override {
    Expr idx = rewrite(op->index);
    return idx.same(op->index) ? self : LoadNode::make(op->buffer, idx);
  }
  Stmt mutateStore(const StoreNode *op, const Stmt &self) override {
    Expr v = mutate(op->value);
    Expr idx = rewrite(op->index);
    if (v.same(op->value) && idx.same(op->index))
      return self;
    return StoreNode::make(op->buffer, v, idx);
  }
};

class Collapser : public IRMutator {
protected:
  Stmt mutateFor(const ForNode *op, const Stmt &self) override {
    const auto *mn = op->min.as<IntImmNode>(), *ex = op->extent.as<IntImmNode>();
    const bool bound = mn && ex && ex->value >= 1;
    if (bound)
      bounds_.bind(op->var, mn->value, ex->value);
    Stmt s = collapse(IRMutator::mutateFor(op, self));
    if (bound)
      bounds_.unbind(op->var);
    return s;
  }

private:
  BoundAnalyzer bounds_; // ranges of the enclosing loops, for symbolic outer extents

  // The merged loop's extent N*M, or a null Expr when N*M may not fit in int64 (a constant
  // product that overflows, or a symbolic N not bounded by the enclosing loops' ranges): the
  // merged loop would then count a different number of iterations, so the pair stays.
  Expr fusedExtent(const Expr &n, int64_t m) const {
    Interval r = bounds_.bound(n);
    int64_t lo = 0, hi = 0;
    if (!r.bounded() || __builtin_mul_overflow(r.lo, m, &lo) ||
        __builtin_mul_overflow(r.hi, m, &hi))
      return Expr();
    return simplify(n * IntImmNode::make(m, n.type()));
  }

  Stmt collapse(const Stmt &s) {
    const auto *outer = s.as<ForNode>();
    const auto *inner = outer->body.as<ForNode>();
    if (!inner || inner->forKind != outer->forKind || !isZero(outer->min) || !isZero(inner->min))
      return s;
    const auto *m = inner->extent.as<IntImmNode>();
    if (!m || m->value <= 0)
      return s;
    Expr extent = fusedExtent(outer->extent, m->value);
    if (!extent.defined())
      return s;
    IndexRewriter rw;
    rw.i = outer->var.node();
    rw.j = inner->var.node();
    rw.innerExtent = m->value;
    rw.fused = Var::make(outer->var.name() + "_" + inner->var.name(), outer->var.type());
    Stmt body = rw.mutate(inner->body);
    if (!rw.ok || usesVar(body, rw.i) || usesVar(body, rw.j))
      return s;
    return ForNode::make(rw.fused, outer->min, extent, outer->forKind, body);
  }
};

} // namespace

PrimFunc loopCollapse(const PrimFunc &f) {
  PrimFunc out = f;
  out.body = Collapser().mutate(f.body);
  return out;
}

} // namespace npuc::tir
