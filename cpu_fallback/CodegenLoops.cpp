// CodegenLoops.cpp - loops of the TIR -> LLVM IR emitter (Codegen.h): serial loops as a
// header/body/latch CFG, parallel loops outlined onto the host's thread pool hook, unrolled loops
// emitted once per iteration, and cpu.vectorize loops as straight-line vector code.
#include "cpu_fallback/CodegenEmitter.h"

#include "support/Error.h"
#include "tir/Linear.h"
#include "tir/Printer.h"
#include "tir/Substitute.h"

#include <algorithm>

namespace npuc::cpu::detail {

using namespace npuc::tir;

std::vector<std::pair<const void *, llvm::Value *>> Bindings::inBindingOrder() const {
  std::vector<std::pair<uint64_t, std::pair<const void *, llvm::Value *>>> byOrder;
  for (const auto &[node, e] : map_)
    byOrder.push_back({e.order, {node, e.value}});
  std::sort(byOrder.begin(), byOrder.end(),
            [](const auto &a, const auto &b) { return a.first < b.first; });
  std::vector<std::pair<const void *, llvm::Value *>> out;
  for (const auto &b : byOrder)
    out.push_back(b.second);
  return out;
}

void FuncEmitter::parallelLoop(const ForNode *op) {
  auto *ptrTy = llvm::PointerType::getUnqual(ctx_);
  auto *i64 = b_.getInt64Ty();
  llvm::Value *mn = expr(op->min);
  llvm::Value *n = b_.CreateSExtOrTrunc(expr(op->extent), i64);
  std::vector<std::pair<const void *, llvm::Value *>> vars = vars_.inBindingOrder(),
                                                      bufs = buffers_.inBindingOrder();
  std::vector<llvm::Type *> slotTys{mn->getType()};
  for (auto &[k, v] : vars)
    slotTys.push_back(v->getType());
  for (auto &[k, v] : bufs)
    slotTys.push_back(v->getType());
  auto *closureTy = llvm::StructType::get(ctx_, slotTys);
  llvm::Value *closure;
  {
    llvm::IRBuilder<> eb(entry_, entry_->begin());
    closure = eb.CreateAlloca(closureTy, nullptr, op->var.name() + ".closure");
  }
  std::vector<llvm::Value *> vals{mn};
  for (auto &[k, v] : vars)
    vals.push_back(v);
  for (auto &[k, v] : bufs)
    vals.push_back(v);
  for (size_t i = 0; i < vals.size(); ++i)
    b_.CreateStore(vals[i], b_.CreateStructGEP(closureTy, closure, unsigned(i)));

  auto *bodyTy = llvm::FunctionType::get(b_.getVoidTy(), {ptrTy, i64, i64}, false);
  auto *bodyFn = llvm::Function::Create(bodyTy, llvm::Function::InternalLinkage,
                                        f_.name + ".par" + std::to_string(parallelCount_++), m_);
  bodyFn->addFnAttr(llvm::Attribute::NoUnwind);
  // Emit the body function with this emitter, then restore the parent's state.
  auto savedIP = b_.saveIP();
  llvm::Function *savedFn = fn_;
  llvm::BasicBlock *savedEntry = entry_;
  auto savedVars = vars_, savedBufs = buffers_;
  fn_ = bodyFn;
  entry_ = llvm::BasicBlock::Create(ctx_, "entry", bodyFn);
  b_.SetInsertPoint(entry_);
  llvm::Value *cl = bodyFn->getArg(0);
  std::vector<llvm::Value *> loaded;
  for (size_t i = 0; i < slotTys.size(); ++i)
    loaded.push_back(b_.CreateLoad(slotTys[i], b_.CreateStructGEP(closureTy, cl, unsigned(i))));
  loaded.push_back(bodyFn->getArg(1));
  loaded.push_back(bodyFn->getArg(2));
  // The loop runs in an always-inlined function whose buffer parameters are noalias, so the
  // body keeps the aliasing facts the entry function has (loads from the closure lose them).
  std::vector<llvm::Type *> innerTys = slotTys;
  innerTys.push_back(i64);
  innerTys.push_back(i64);
  auto *innerFn =
      llvm::Function::Create(llvm::FunctionType::get(b_.getVoidTy(), innerTys, false),
                             llvm::Function::InternalLinkage, bodyFn->getName() + ".loop", m_);
  innerFn->addFnAttr(llvm::Attribute::NoUnwind);
  innerFn->addFnAttr(llvm::Attribute::AlwaysInline);
  b_.CreateCall(innerFn, loaded);
  b_.CreateRetVoid();
  fn_ = innerFn;
  entry_ = llvm::BasicBlock::Create(ctx_, "entry", innerFn);
  b_.SetInsertPoint(entry_);
  llvm::Value *innerMin = innerFn->getArg(0);
  for (size_t i = 0; i < vars.size(); ++i)
    vars_[vars[i].first] = innerFn->getArg(unsigned(1 + i));
  for (size_t i = 0; i < bufs.size(); ++i) {
    unsigned a = unsigned(1 + vars.size() + i);
    innerFn->addParamAttr(a, llvm::Attribute::NoAlias);
    buffers_[bufs[i].first] = innerFn->getArg(a);
  }
  llvm::Type *ivTy = mn->getType();
  unsigned nArgs = unsigned(innerTys.size());
  llvm::Value *begin =
      b_.CreateAdd(innerMin, b_.CreateSExtOrTrunc(innerFn->getArg(nArgs - 2), ivTy));
  llvm::Value *end = b_.CreateAdd(innerMin, b_.CreateSExtOrTrunc(innerFn->getArg(nArgs - 1), ivTy));
  serialLoop(op, begin, end);
  b_.CreateRetVoid();
  fn_ = savedFn;
  entry_ = savedEntry;
  vars_ = std::move(savedVars);
  buffers_ = std::move(savedBufs);
  b_.restoreIP(savedIP);

  llvm::GlobalVariable *hookVar = parallelHook();
  llvm::Value *hook = b_.CreateLoad(ptrTy, hookVar, "parallel_for");
  auto *viaHook = llvm::BasicBlock::Create(ctx_, "par.pool", fn_);
  auto *inline_ = llvm::BasicBlock::Create(ctx_, "par.inline", fn_);
  auto *join = llvm::BasicBlock::Create(ctx_, "par.done", fn_);
  b_.CreateCondBr(b_.CreateIsNull(hook), inline_, viaHook);
  b_.SetInsertPoint(viaHook);
  auto *hookTy = llvm::FunctionType::get(b_.getVoidTy(), {ptrTy, ptrTy, i64}, false);
  b_.CreateCall(hookTy, hook, {bodyFn, closure, n});
  b_.CreateBr(join);
  b_.SetInsertPoint(inline_);
  b_.CreateCall(bodyFn, {closure, llvm::ConstantInt::get(i64, 0), n});
  b_.CreateBr(join);
  b_.SetInsertPoint(join);
}

llvm::GlobalVariable *FuncEmitter::parallelHook() {
  const char *name = "npuc_parallel_for_hook";
  if (llvm::GlobalVariable *g = m_.getNamedGlobal(name))
    return g;
  auto *ptrTy = llvm::PointerType::getUnqual(ctx_);
  return new llvm::GlobalVariable(m_, ptrTy, false, llvm::GlobalValue::WeakAnyLinkage,
                                  llvm::ConstantPointerNull::get(ptrTy), name);
}

void FuncEmitter::loop(const ForNode *op) {
  if (op->forKind == ForKind::Parallel)
    return parallelLoop(op);
  if (op->forKind == ForKind::Unrolled && op->min.kind() == NodeKind::IntImm &&
      op->extent.kind() == NodeKind::IntImm)
    return unrolledLoop(op);
  llvm::Value *mn = expr(op->min);
  serialLoop(op, mn, b_.CreateAdd(mn, expr(op->extent)));
}

void FuncEmitter::serialLoop(const ForNode *op, llvm::Value *mn, llvm::Value *end) {
  llvm::BasicBlock *pre = b_.GetInsertBlock();
  auto *header = llvm::BasicBlock::Create(ctx_, op->var.name() + ".header", fn_);
  auto *body = llvm::BasicBlock::Create(ctx_, op->var.name() + ".body", fn_);
  auto *exit = llvm::BasicBlock::Create(ctx_, op->var.name() + ".exit", fn_);
  b_.CreateBr(header);
  b_.SetInsertPoint(header);
  llvm::PHINode *iv = b_.CreatePHI(mn->getType(), 2, op->var.name());
  iv->addIncoming(mn, pre);
  b_.CreateCondBr(b_.CreateICmpSLT(iv, end), body, exit);
  b_.SetInsertPoint(body);
  vars_[op->var.get()] = iv;
  stmt(op->body);
  vars_.erase(op->var.get());
  llvm::Value *next = b_.CreateAdd(iv, llvm::ConstantInt::get(mn->getType(), 1), "", true, true);
  iv->addIncoming(next, b_.GetInsertBlock());
  b_.CreateBr(header);
  b_.SetInsertPoint(exit);
}

bool FuncEmitter::vectorBody(const Stmt &s) {
  switch (s.kind()) {
  case NodeKind::Store:
    return true;
  case NodeKind::Seq:
    for (const Stmt &c : s.as<SeqNode>()->stmts)
      if (!vectorBody(c))
        return false;
    return true;
  case NodeKind::For: {
    const auto *f = s.as<ForNode>();
    return f->forKind == ForKind::Unrolled && f->min.kind() == NodeKind::IntImm &&
           f->extent.kind() == NodeKind::IntImm && vectorBody(f->body);
  }
  default:
    return false;
  }
}

bool FuncEmitter::vectorizable(const Stmt &s) {
  if (s.kind() != NodeKind::For)
    return false;
  const auto *f = s.as<ForNode>();
  return f->forKind == ForKind::Serial && f->extent.kind() == NodeKind::IntImm &&
         f->extent.as<IntImmNode>()->value >= 2 && f->extent.as<IntImmNode>()->value <= 64 &&
         vectorBody(f->body);
}

void FuncEmitter::vectorLoop(const ForNode *op) {
  NPUC_ASSERT(!vecVar_, "nested vector loops in " + f_.name);
  vecBase_ = expr(op->min);
  vecVar_ = op->var.get();
  vecLanes_ = unsigned(op->extent.as<IntImmNode>()->value);
  vectorStmt(op->body);
  vecVar_ = nullptr;
  vecBase_ = nullptr;
}

void FuncEmitter::unrolledLoop(const ForNode *op) {
  int64_t mn = op->min.as<IntImmNode>()->value, n = op->extent.as<IntImmNode>()->value;
  for (int64_t i = mn; i < mn + n; ++i) {
    vars_[op->var.get()] =
        llvm::ConstantInt::get(type(op->var.type()), static_cast<uint64_t>(i), true);
    if (vecVar_)
      vectorStmt(op->body);
    else
      stmt(op->body);
  }
  vars_.erase(op->var.get());
}

llvm::Value *FuncEmitter::splat(llvm::Value *v) {
  return v->getType()->isVectorTy() ? v : b_.CreateVectorSplat(vecLanes_, v);
}

llvm::Value *FuncEmitter::laneValue(const Expr &e, unsigned lane) {
  vars_[vecVar_] = b_.CreateAdd(vecBase_, llvm::ConstantInt::get(vecBase_->getType(), lane));
  llvm::Value *v = expr(e);
  vars_.erase(vecVar_);
  return v;
}

llvm::Value *FuncEmitter::scalarized(const Expr &e) {
  llvm::Value *v = llvm::PoisonValue::get(llvm::FixedVectorType::get(type(e.type()), vecLanes_));
  for (unsigned i = 0; i < vecLanes_; ++i)
    v = b_.CreateInsertElement(v, laneValue(e, i), uint64_t(i));
  return v;
}

llvm::Value *FuncEmitter::contiguousAddress(const Buffer &buf, const Expr &index) {
  int64_t coeff = 0;
  Expr rest;
  if (!linearIn(index, static_cast<const VarNode *>(vecVar_), coeff, rest) || coeff != 1)
    return nullptr;
  llvm::Value *r = expr(rest);
  llvm::Value *idx = b_.CreateAdd(r, b_.CreateSExtOrTrunc(vecBase_, r->getType()));
  return b_.CreateInBoundsGEP(type(buf->dtype), bufferPtr(buf), {idx});
}

llvm::Value *FuncEmitter::vectorExpr(const Expr &e) {
  if (!usesVar(e, static_cast<const VarNode *>(vecVar_)))
    return expr(e);
  switch (e.kind()) {
  case NodeKind::Var: {
    std::vector<llvm::Constant *> lanes;
    for (unsigned i = 0; i < vecLanes_; ++i)
      lanes.push_back(llvm::ConstantInt::get(vecBase_->getType(), i));
    return b_.CreateAdd(splat(vecBase_), llvm::ConstantVector::get(lanes));
  }
  case NodeKind::Load: {
    const auto *op = e.as<LoadNode>();
    if (llvm::Value *p = contiguousAddress(op->buffer, op->index)) {
      llvm::Type *et = type(op->type);
      return b_.CreateAlignedLoad(llvm::FixedVectorType::get(et, vecLanes_), p,
                                  llvm::Align(uint64_t(op->type.bytes())));
    }
    return scalarized(e);
  }
  case NodeKind::Not:
    return b_.CreateNot(vectorExpr(e.as<NotNode>()->a));
  case NodeKind::Select: {
    const auto *op = e.as<SelectNode>();
    llvm::Value *c = splat(vectorExpr(op->cond));
    llvm::Value *t = splat(vectorExpr(op->trueValue));
    return b_.CreateSelect(c, t, splat(vectorExpr(op->falseValue)));
  }
  case NodeKind::Cast: {
    const auto *op = e.as<CastNode>();
    return cast(op->type, op->value.type(), vectorExpr(op->value));
  }
  case NodeKind::IntImm:
  case NodeKind::FloatImm:
  case NodeKind::Call:
    return scalarized(e);
  default:
    break;
  }
  const auto *op = static_cast<const BinaryNode *>(e.get());
  llvm::Value *a = splat(vectorExpr(op->a));
  llvm::Value *bv = splat(vectorExpr(op->b));
  return binary(e.kind(), op->a.type(), a, bv);
}

void FuncEmitter::vectorStmt(const Stmt &s) {
  switch (s.kind()) {
  case NodeKind::Seq:
    for (const Stmt &c : s.as<SeqNode>()->stmts)
      vectorStmt(c);
    return;
  case NodeKind::For:
    return unrolledLoop(s.as<ForNode>());
  case NodeKind::Store: {
    const auto *op = s.as<StoreNode>();
    llvm::Value *v = vectorExpr(op->value);
    if (llvm::Value *p = contiguousAddress(op->buffer, op->index)) {
      b_.CreateAlignedStore(splat(v), p, llvm::Align(uint64_t(op->buffer->dtype.bytes())));
      return;
    }
    for (unsigned i = 0; i < vecLanes_; ++i) {
      llvm::Value *lv = v->getType()->isVectorTy() ? b_.CreateExtractElement(v, uint64_t(i)) : v;
      vars_[vecVar_] = b_.CreateAdd(vecBase_, llvm::ConstantInt::get(vecBase_->getType(), i));
      llvm::Value *addr = address(op->buffer, op->index);
      vars_.erase(vecVar_);
      b_.CreateStore(lv, addr);
    }
    return;
  }
  default:
    NPUC_ASSERT(false, std::string("codegen: vector loop holds a ") + kindName(s.kind()));
  }
}

} // namespace npuc::cpu::detail
