// IfPromotion.cpp - loop unswitching on invariant conditions (see IfPromotion.h).
#include "tir/transform/IfPromotion.h"

#include "tir/Eval.h"
#include "tir/IRMutator.h"
#include "tir/IRVisitor.h"
#include "tir/Substitute.h"

#include <unordered_set>

namespace npuc::tir {
namespace {

void conjuncts(const Expr &c, std::vector<Expr> &out) {
  if (const auto *op = c.as<AndNode>()) {
    conjuncts(op->a, out);
    conjuncts(op->b, out);
    return;
  }
  out.push_back(c);
}

Expr conjoin(const std::vector<Expr> &cs) {
  Expr r;
  for (const Expr &c : cs)
    r = r.defined() ? (r && c) : c;
  return r;
}

class LoadedBuffers : public IRVisitor {
public:
  std::unordered_set<const BufferNode *> buffers;
  void visitLoad(const LoadNode *op) override {
    buffers.insert(op->buffer.get());
    IRVisitor::visitLoad(op);
  }
};

class StoredBuffers : public IRVisitor {
public:
  std::unordered_set<const BufferNode *> buffers;
  bool npuOp = false;
  void visitStore(const StoreNode *op) override {
    buffers.insert(op->buffer.get());
    IRVisitor::visitStore(op);
  }
  void visitNpuOp(const NpuOpNode *op) override { npuOp = true; }
};

// A condition that reads memory the loop writes is not invariant, whatever its variables.
bool storesWhatItReads(const Stmt &body, const Expr &cond) {
  LoadedBuffers l;
  l.visit(cond);
  if (l.buffers.empty())
    return false;
  StoredBuffers s;
  s.visit(body);
  if (s.npuOp)
    return true;
  for (const BufferNode *b : l.buffers)
    if (s.buffers.count(b))
      return true;
  return false;
}

class Promoter : public IRMutator {
public:
  explicit Promoter(const ProverOptions &o) : prover_(o) {}

protected:
  Stmt mutateFor(const ForNode *op, const Stmt &self) override {
    const auto *mn = op->min.as<IntImmNode>(), *ext = op->extent.as<IntImmNode>();
    bool ranged = mn && ext && ext->value > 0;
    if (ranged)
      prover_.bind(op->var, mn->value, ext->value);
    Stmt s = IRMutator::mutateFor(op, self);
    const auto *loop = s.as<ForNode>();
    Stmt out = promote(loop, s);
    if (ranged)
      prover_.unbind(op->var);
    return out;
  }

private:
  Prover prover_;

  Stmt rebuild(const ForNode *loop, const Stmt &body) {
    return ForNode::make(loop->var, loop->min, loop->extent, loop->forKind, body);
  }

  Stmt promote(const ForNode *loop, const Stmt &s) {
    const auto *iff = loop->body.as<IfThenElseNode>();
    if (!iff)
      return s;
    const VarNode *v = loop->var.node();
    if (storesWhatItReads(loop->body, iff->cond))
      return s;
    if (usesVar(iff->cond, v)) {
      Truth t = prover_.decide(iff->cond);
      if (t == Truth::True)
        return rebuild(loop, iff->thenCase);
      if (t == Truth::False)
        return iff->elseCase.defined() ? rebuild(loop, iff->elseCase) : SeqNode::make({});
      if (iff->elseCase.defined())
        return s;
      // Move the invariant conjuncts out, keep the others on the inside.
      std::vector<Expr> cs, inv, var;
      conjuncts(iff->cond, cs);
      for (const Expr &c : cs)
        (usesVar(c, v) ? var : inv).push_back(c);
      if (inv.empty())
        return s;
      Stmt inner = rebuild(loop, IfThenElseNode::make(conjoin(var), iff->thenCase));
      return IfThenElseNode::make(conjoin(inv), inner);
    }
    Stmt thenLoop = rebuild(loop, iff->thenCase);
    Stmt elseLoop;
    if (iff->elseCase.defined())
      elseLoop = freshCopy(rebuild(loop, iff->elseCase));
    return IfThenElseNode::make(iff->cond, thenLoop, elseLoop);
  }
};

} // namespace

PrimFunc ifPromotion(const PrimFunc &f, const ProverOptions &o) {
  PrimFunc out = f;
  out.body = Promoter(o).mutate(f.body);
  return out;
}

} // namespace npuc::tir
