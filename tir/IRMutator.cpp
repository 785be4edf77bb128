// IRMutator.cpp - kind dispatch and the default mutate methods (rebuild only on change).
#include "tir/IRMutator.h"

namespace npuc::tir {

Expr IRMutator::mutate(const Expr &e) {
  if (!e.defined())
    return e;
  switch (e.kind()) {
#define TIR_EXPR(Name)                                                                             \
  case NodeKind::Name:                                                                             \
    return mutate##Name(static_cast<const Name##Node *>(e.get()), e);
#include "tir/IRNodes.def"
  default:
    return e;
  }
}

Stmt IRMutator::mutate(const Stmt &s) {
  if (!s.defined())
    return s;
  switch (s.kind()) {
#define TIR_STMT(Name)                                                                             \
  case NodeKind::Name:                                                                             \
    return mutate##Name(static_cast<const Name##Node *>(s.get()), s);
#include "tir/IRNodes.def"
  default:
    return s;
  }
}

Expr IRMutator::mutateIntImm(const IntImmNode *, const Expr &self) {
  return self;
}
Expr IRMutator::mutateFloatImm(const FloatImmNode *, const Expr &self) {
  return self;
}
Expr IRMutator::mutateVar(const VarNode *, const Expr &self) {
  return self;
}

#define TIR_BINARY(Name, Symbol)                                                                   \
  Expr IRMutator::mutate##Name(const Name##Node *op, const Expr &self) {                           \
    Expr a = mutate(op->a), b = mutate(op->b);                                                     \
    if (a.same(op->a) && b.same(op->b))                                                            \
      return self;                                                                                 \
    return Name##Node::make(std::move(a), std::move(b));                                           \
  }
#include "tir/IRNodes.def"

Expr IRMutator::mutateNot(const NotNode *op, const Expr &self) {
  Expr a = mutate(op->a);
  return a.same(op->a) ? self : NotNode::make(a);
}

Expr IRMutator::mutateSelect(const SelectNode *op, const Expr &self) {
  Expr c = mutate(op->cond), t = mutate(op->trueValue), f = mutate(op->falseValue);
  if (c.same(op->cond) && t.same(op->trueValue) && f.same(op->falseValue))
    return self;
  return SelectNode::make(c, t, f);
}

Expr IRMutator::mutateCast(const CastNode *op, const Expr &self) {
  Expr v = mutate(op->value);
  return v.same(op->value) ? self : CastNode::make(op->type, v);
}

Expr IRMutator::mutateLoad(const LoadNode *op, const Expr &self) {
  Buffer b = mutateBuffer(op->buffer);
  Expr i = mutate(op->index);
  if (b.same(op->buffer) && i.same(op->index))
    return self;
  return LoadNode::make(b, i);
}

Expr IRMutator::mutateCall(const CallNode *op, const Expr &self) {
  std::vector<Expr> args;
  bool changed = false;
  for (const Expr &a : op->args) {
    args.push_back(mutate(a));
    changed |= !args.back().same(a);
  }
  return changed ? CallNode::make(op->type, op->name, std::move(args)) : self;
}

Stmt IRMutator::mutateFor(const ForNode *op, const Stmt &self) {
  Expr mn = mutate(op->min), ext = mutate(op->extent);
  Stmt body = mutate(op->body);
  if (mn.same(op->min) && ext.same(op->extent) && body.same(op->body))
    return self;
  return ForNode::make(op->var, mn, ext, op->forKind, body);
}

Stmt IRMutator::mutateIfThenElse(const IfThenElseNode *op, const Stmt &self) {
  Expr c = mutate(op->cond);
  Stmt t = mutate(op->thenCase), e = mutate(op->elseCase);
  if (c.same(op->cond) && t.same(op->thenCase) && e.same(op->elseCase))
    return self;
  return IfThenElseNode::make(c, t, e);
}

Stmt IRMutator::mutateStore(const StoreNode *op, const Stmt &self) {
  Buffer b = mutateBuffer(op->buffer);
  Expr v = mutate(op->value), i = mutate(op->index);
  if (b.same(op->buffer) && v.same(op->value) && i.same(op->index))
    return self;
  return StoreNode::make(b, v, i);
}

Stmt IRMutator::mutateAllocate(const AllocateNode *op, const Stmt &self) {
  Buffer b = mutateBuffer(op->buffer);
  Stmt body = mutate(op->body);
  if (b.same(op->buffer) && body.same(op->body))
    return self;
  return AllocateNode::make(b, body);
}

Stmt IRMutator::mutateSeq(const SeqNode *op, const Stmt &self) {
  std::vector<Stmt> stmts;
  bool changed = false;
  for (const Stmt &s : op->stmts) {
    stmts.push_back(mutate(s));
    changed |= !stmts.back().same(s);
  }
  return changed ? SeqNode::make(std::move(stmts)) : self;
}

Stmt IRMutator::mutateEvaluate(const EvaluateNode *op, const Stmt &self) {
  Expr v = mutate(op->value);
  return v.same(op->value) ? self : EvaluateNode::make(v);
}

Stmt IRMutator::mutateAttrStmt(const AttrStmtNode *op, const Stmt &self) {
  Expr v = mutate(op->value);
  Stmt body = mutate(op->body);
  if (v.same(op->value) && body.same(op->body))
    return self;
  return AttrStmtNode::make(op->key, v, body);
}

Stmt IRMutator::mutateNpuOp(const NpuOpNode *op, const Stmt &self) {
  std::vector<std::pair<std::string, Expr>> fields;
  bool changed = false;
  for (const auto &[k, v] : op->fields) {
    fields.emplace_back(k, mutate(v));
    changed |= !fields.back().second.same(v);
  }
  return changed ? NpuOpNode::make(op->mnemonic, std::move(fields)) : self;
}

} // namespace npuc::tir
