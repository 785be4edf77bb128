// IRVisitor.cpp - kind dispatch and the default (recursing) visit methods.
#include "tir/IRVisitor.h"

namespace npuc::tir {

void IRVisitor::visit(const Expr &e) {
  if (!e.defined())
    return;
  switch (e.kind()) {
#define TIR_EXPR(Name)                                                                             \
  case NodeKind::Name:                                                                             \
    return visit##Name(static_cast<const Name##Node *>(e.get()));
#include "tir/IRNodes.def"
  default:
    break;
  }
}

void IRVisitor::visit(const Stmt &s) {
  if (!s.defined())
    return;
  switch (s.kind()) {
#define TIR_STMT(Name)                                                                             \
  case NodeKind::Name:                                                                             \
    return visit##Name(static_cast<const Name##Node *>(s.get()));
#include "tir/IRNodes.def"
  default:
    break;
  }
}

void IRVisitor::visitIntImm(const IntImmNode *) {}
void IRVisitor::visitFloatImm(const FloatImmNode *) {}
void IRVisitor::visitVar(const VarNode *) {}
#define TIR_BINARY(Name, Symbol)                                                                   \
  void IRVisitor::visit##Name(const Name##Node *op) {                                              \
    visit(op->a);                                                                                  \
    visit(op->b);                                                                                  \
  }
#include "tir/IRNodes.def"
void IRVisitor::visitNot(const NotNode *op) {
  visit(op->a);
}
void IRVisitor::visitSelect(const SelectNode *op) {
  visit(op->cond);
  visit(op->trueValue);
  visit(op->falseValue);
}
void IRVisitor::visitCast(const CastNode *op) {
  visit(op->value);
}
void IRVisitor::visitLoad(const LoadNode *op) {
  visit(op->index);
}
void IRVisitor::visitCall(const CallNode *op) {
  for (const Expr &a : op->args)
    visit(a);
}
void IRVisitor::visitFor(const ForNode *op) {
  visit(op->var);
  visit(op->min);
  visit(op->extent);
  visit(op->body);
}
void IRVisitor::visitIfThenElse(const IfThenElseNode *op) {
  visit(op->cond);
  visit(op->thenCase);
  visit(op->elseCase);
}
void IRVisitor::visitStore(const StoreNode *op) {
  visit(op->value);
  visit(op->index);
}
void IRVisitor::visitAllocate(const AllocateNode *op) {
  visit(op->body);
}
void IRVisitor::visitSeq(const SeqNode *op) {
  for (const Stmt &s : op->stmts)
    visit(s);
}
void IRVisitor::visitEvaluate(const EvaluateNode *op) {
  visit(op->value);
}
void IRVisitor::visitAttrStmt(const AttrStmtNode *op) {
  visit(op->value);
  visit(op->body);
}
void IRVisitor::visitNpuOp(const NpuOpNode *op) {
  for (const auto &f : op->fields)
    visit(f.second);
}

} // namespace npuc::tir
