// RemoveNoOp.cpp - bottom-up deletion of statements without effect (see RemoveNoOp.h).
#include "tir/transform/RemoveNoOp.h"

#include "tir/Equal.h"
#include "tir/IRMutator.h"
#include "tir/IRVisitor.h"

namespace npuc::tir {
namespace {

class HasCall : public IRVisitor {
public:
  bool found = false;
  void visitCall(const CallNode *) override { found = true; }
};

Stmt noOp() {
  return SeqNode::make({});
}

class NoOpRemover : public IRMutator {
protected:
  Stmt mutateEvaluate(const EvaluateNode *op, const Stmt &self) override {
    HasCall h;
    h.visit(op->value);
    return h.found ? self : noOp();
  }

  Stmt mutateStore(const StoreNode *op, const Stmt &self) override {
    const auto *ld = op->value.as<LoadNode>();
    if (ld && ld->buffer.same(op->buffer) && structuralEqual(ld->index, op->index))
      return noOp();
    return self;
  }

  Stmt mutateFor(const ForNode *op, const Stmt &self) override {
    const auto *ext = op->extent.as<IntImmNode>();
    if (ext && ext->value <= 0)
      return noOp();
    Stmt s = IRMutator::mutateFor(op, self);
    return isNoOp(s.as<ForNode>()->body) ? noOp() : s;
  }

  Stmt mutateIfThenElse(const IfThenElseNode *op, const Stmt &self) override {
    Stmt t = mutate(op->thenCase);
    Stmt e = op->elseCase.defined() ? mutate(op->elseCase) : Stmt();
    if (e.defined() && isNoOp(e))
      e = Stmt();
    if (isNoOp(t)) {
      if (!e.defined())
        return noOp();
      return IfThenElseNode::make(!op->cond, e);
    }
    if (t.same(op->thenCase) && e.same(op->elseCase))
      return self;
    return IfThenElseNode::make(op->cond, t, e);
  }

  Stmt mutateAllocate(const AllocateNode *op, const Stmt &self) override {
    Stmt s = IRMutator::mutateAllocate(op, self);
    return isNoOp(s.as<AllocateNode>()->body) ? noOp() : s;
  }

  Stmt mutateAttrStmt(const AttrStmtNode *op, const Stmt &self) override {
    Stmt s = IRMutator::mutateAttrStmt(op, self);
    return isNoOp(s.as<AttrStmtNode>()->body) ? noOp() : s;
  }

  Stmt mutateSeq(const SeqNode *op, const Stmt &self) override {
    std::vector<Stmt> kept;
    bool changed = false;
    for (const Stmt &c : op->stmts) {
      Stmt m = mutate(c);
      changed = changed || !m.same(c);
      if (isNoOp(m)) {
        changed = true;
        continue;
      }
      if (const auto *inner = m.as<SeqNode>()) {
        kept.insert(kept.end(), inner->stmts.begin(), inner->stmts.end());
        changed = true;
      } else {
        kept.push_back(m);
      }
    }
    if (!changed)
      return self;
    if (kept.size() == 1)
      return kept[0];
    return SeqNode::make(std::move(kept));
  }
};

} // namespace

bool isNoOp(const Stmt &s) {
  const auto *seq = s.as<SeqNode>();
  return seq && seq->stmts.empty();
}

Stmt removeNoOp(const Stmt &s) {
  return NoOpRemover().mutate(s);
}

PrimFunc removeNoOp(const PrimFunc &f) {
  PrimFunc out = f;
  out.body = removeNoOp(f.body);
  return out;
}

} // namespace npuc::tir
