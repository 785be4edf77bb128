// LoopShift.cpp - rebasing loops at 0 (see LoopShift.h).
#include "tir/transform/LoopShift.h"

#include "tir/IRMutator.h"
#include "tir/Simplify.h"
#include "tir/Substitute.h"

namespace npuc::tir {
namespace {

class Shifter : public IRMutator {
protected:
  Stmt mutateFor(const ForNode *op, const Stmt &self) override {
    Stmt body = mutate(op->body);
    const auto *mn = op->min.as<IntImmNode>();
    if (mn && mn->value == 0) {
      if (body.same(op->body))
        return self;
      return ForNode::make(op->var, op->min, op->extent, op->forKind, body);
    }
    // The same Var now counts from 0; inside the body it stands for var + min.
    body = substitute(body, {{op->var.node(), simplify(op->var + op->min)}});
    return ForNode::make(op->var, IntImmNode::make(0, op->var.type()), op->extent, op->forKind,
                         body);
  }
};

} // namespace

PrimFunc loopShift(const PrimFunc &f) {
  PrimFunc out = f;
  out.body = Shifter().mutate(f.body);
  return out;
}

} // namespace npuc::tir
