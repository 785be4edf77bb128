// LoopSplitDiv.cpp - splitting loops by the constant their variable is divided by.
#include "tir/transform/LoopSplitDiv.h"

#include "tir/IRMutator.h"
#include "tir/IRVisitor.h"
#include "tir/Schedule.h"

#include <set>

namespace npuc::tir {
namespace {

// The constants v is floor-divided or floor-modded by.
class Divisors : public IRVisitor {
public:
  explicit Divisors(const VarNode *v) : v_(v) {}
  std::set<int64_t> found;
  void visitFloorDiv(const FloorDivNode *op) override {
    note(op);
    IRVisitor::visitFloorDiv(op);
  }
  void visitFloorMod(const FloorModNode *op) override {
    note(op);
    IRVisitor::visitFloorMod(op);
  }

private:
  const VarNode *v_;
  void note(const BinaryNode *op) {
    const auto *k = op->b.as<IntImmNode>();
    if (op->a.get() == v_ && k)
      found.insert(k->value);
  }
};

class Splitter : public IRMutator {
protected:
  Stmt mutateFor(const ForNode *op, const Stmt &self) override {
    Stmt s = IRMutator::mutateFor(op, self);
    const auto *l = s.as<ForNode>();
    const auto *mn = l->min.as<IntImmNode>();
    const auto *ex = l->extent.as<IntImmNode>();
    if (!mn || mn->value != 0 || !ex)
      return s;
    Divisors d(l->var.node());
    d.visit(l->body);
    if (d.found.size() != 1)
      return s;
    int64_t k = *d.found.begin();
    if (k <= 1 || ex->value % k != 0 || ex->value == k)
      return s;
    return schedule::splitLoop(l, k);
  }
};

} // namespace

PrimFunc loopSplitDiv(const PrimFunc &f) {
  PrimFunc out = f;
  out.body = Splitter().mutate(f.body);
  return out;
}

} // namespace npuc::tir
