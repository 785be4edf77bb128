// Codegen.cpp - the TIR -> LLVM IR emitter (see Codegen.h for the mapping): entry points,
// expressions, statements and allocation. Loops are in CodegenLoops.cpp.
#include "cpu_fallback/CodegenEmitter.h"

#include "support/Error.h"
#include "tir/Printer.h"

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

namespace npuc::cpu {
namespace detail {

using namespace npuc::tir;

void FuncEmitter::emit() {
  auto *ptrTy = llvm::PointerType::getUnqual(ctx_);
  NPUC_ASSERT(!m_.getFunction(f_.name), "two PrimFuncs named " + f_.name);
  // The exported entry point unpacks args and calls the body function, whose parameters are
  // noalias: distinct tensors never overlap, and telling LLVM so lets it keep accumulators in
  // registers and vectorise across stores. The body is always inlined into the entry.
  std::vector<llvm::Type *> paramTys(f_.params.size(), ptrTy);
  auto *implTy = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx_), paramTys, false);
  fn_ = llvm::Function::Create(
      implTy, opt_.gpu ? llvm::Function::ExternalLinkage : llvm::Function::InternalLinkage,
      opt_.gpu ? f_.name : f_.name + ".body", m_);
  fn_->addFnAttr(llvm::Attribute::NoUnwind);
  if (!opt_.gpu)
    fn_->addFnAttr(llvm::Attribute::AlwaysInline);
  for (size_t i = 0; i < f_.params.size(); ++i) {
    fn_->addParamAttr(unsigned(i), llvm::Attribute::NoAlias);
    fn_->getArg(unsigned(i))->setName(f_.params[i]->name);
    buffers_[f_.params[i].get()] = fn_->getArg(unsigned(i));
  }
  entry_ = llvm::BasicBlock::Create(ctx_, "entry", fn_);
  b_.SetInsertPoint(entry_);
  stmt(f_.body);
  b_.CreateRetVoid();
  if (opt_.gpu) {
    // A kernel entry: PTX calling convention plus the nvvm.annotations marker.
    fn_->setCallingConv(llvm::CallingConv::PTX_Kernel);
    llvm::Metadata *md[] = {llvm::ValueAsMetadata::get(fn_), llvm::MDString::get(ctx_, "kernel"),
                            llvm::ValueAsMetadata::get(b_.getInt32(1))};
    m_.getOrInsertNamedMetadata("nvvm.annotations")->addOperand(llvm::MDNode::get(ctx_, md));
    return;
  }

  auto *fnTy = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx_), {ptrTy}, false);
  auto *outer = llvm::Function::Create(fnTy, llvm::Function::ExternalLinkage, f_.name, m_);
  outer->addFnAttr(llvm::Attribute::NoUnwind);
  llvm::Argument *args = outer->getArg(0);
  args->setName("args");
  b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", outer));
  std::vector<llvm::Value *> ptrs;
  for (size_t i = 0; i < f_.params.size(); ++i) {
    llvm::Value *slot = b_.CreateConstInBoundsGEP1_64(ptrTy, args, i);
    ptrs.push_back(b_.CreateLoad(ptrTy, slot, f_.params[i]->name));
  }
  b_.CreateCall(fn_, ptrs);
  b_.CreateRetVoid();
}

llvm::Type *FuncEmitter::type(DataType t) {
  switch (t.code) {
  case DataType::Code::Int:
  case DataType::Code::UInt:
    return llvm::Type::getIntNTy(ctx_, static_cast<unsigned>(t.bits));
  case DataType::Code::Bool:
    return llvm::Type::getInt1Ty(ctx_);
  case DataType::Code::Float:
    if (t.bits == 16)
      return llvm::Type::getHalfTy(ctx_);
    if (t.bits == 32)
      return llvm::Type::getFloatTy(ctx_);
    if (t.bits == 64)
      return llvm::Type::getDoubleTy(ctx_);
    break;
  case DataType::Code::Handle:
    return llvm::PointerType::getUnqual(ctx_);
  }
  NPUC_ASSERT(false, "no LLVM type for " + toString(t));
}

llvm::Value *FuncEmitter::bufferPtr(const Buffer &buf) {
  llvm::Value *p = buffers_.find(buf.get());
  NPUC_ASSERT(p != nullptr, "buffer " + buf->name + " used outside its scope in " + f_.name);
  return p;
}

llvm::Value *FuncEmitter::address(const Buffer &buf, const Expr &index) {
  llvm::Value *idx = expr(index);
  return b_.CreateInBoundsGEP(type(buf->dtype), bufferPtr(buf), {idx});
}

llvm::Value *FuncEmitter::floorDivMod(llvm::Value *a, llvm::Value *bv, bool wantMod) {
  llvm::Value *q = b_.CreateSDiv(a, bv), *r = b_.CreateSRem(a, bv);
  llvm::Value *zero = llvm::ConstantInt::get(a->getType(), 0);
  llvm::Value *adjust =
      b_.CreateAnd(b_.CreateICmpNE(r, zero),
                   b_.CreateICmpNE(b_.CreateICmpSLT(r, zero), b_.CreateICmpSLT(bv, zero)));
  if (wantMod)
    return b_.CreateSelect(adjust, b_.CreateAdd(r, bv), r);
  return b_.CreateSelect(adjust, b_.CreateSub(q, llvm::ConstantInt::get(a->getType(), 1)), q);
}

llvm::Value *FuncEmitter::binary(NodeKind k, DataType t, llvm::Value *a, llvm::Value *bv) {
  bool fl = t.isFloat(), sgn = t.isInt();
  switch (k) {
  case NodeKind::Add:
    return fl ? b_.CreateFAdd(a, bv) : b_.CreateAdd(a, bv);
  case NodeKind::Sub:
    return fl ? b_.CreateFSub(a, bv) : b_.CreateSub(a, bv);
  case NodeKind::Mul:
    return fl ? b_.CreateFMul(a, bv) : b_.CreateMul(a, bv);
  case NodeKind::Div:
    return fl ? b_.CreateFDiv(a, bv) : sgn ? b_.CreateSDiv(a, bv) : b_.CreateUDiv(a, bv);
  case NodeKind::Mod:
    return fl ? b_.CreateFRem(a, bv) : sgn ? b_.CreateSRem(a, bv) : b_.CreateURem(a, bv);
  case NodeKind::FloorDiv:
  case NodeKind::FloorMod: {
    bool mod = k == NodeKind::FloorMod;
    if (fl) {
      llvm::Value *q = b_.CreateUnaryIntrinsic(llvm::Intrinsic::floor, b_.CreateFDiv(a, bv));
      return mod ? b_.CreateFSub(a, b_.CreateFMul(q, bv)) : q;
    }
    if (!sgn)
      return mod ? b_.CreateURem(a, bv) : b_.CreateUDiv(a, bv);
    return floorDivMod(a, bv, mod);
  }
  case NodeKind::Min:
  case NodeKind::Max: {
    // select(a < b) rather than minnum: matches std::min/std::max of the reference kernels.
    bool isMin = k == NodeKind::Min;
    llvm::Value *c = fl    ? (isMin ? b_.CreateFCmpOLT(a, bv) : b_.CreateFCmpOGT(a, bv))
                     : sgn ? (isMin ? b_.CreateICmpSLT(a, bv) : b_.CreateICmpSGT(a, bv))
                           : (isMin ? b_.CreateICmpULT(a, bv) : b_.CreateICmpUGT(a, bv));
    return b_.CreateSelect(c, a, bv);
  }
  case NodeKind::EQ:
    return fl ? b_.CreateFCmpOEQ(a, bv) : b_.CreateICmpEQ(a, bv);
  case NodeKind::NE:
    return fl ? b_.CreateFCmpUNE(a, bv) : b_.CreateICmpNE(a, bv);
  case NodeKind::LT:
    return fl ? b_.CreateFCmpOLT(a, bv) : sgn ? b_.CreateICmpSLT(a, bv) : b_.CreateICmpULT(a, bv);
  case NodeKind::LE:
    return fl ? b_.CreateFCmpOLE(a, bv) : sgn ? b_.CreateICmpSLE(a, bv) : b_.CreateICmpULE(a, bv);
  case NodeKind::GT:
    return fl ? b_.CreateFCmpOGT(a, bv) : sgn ? b_.CreateICmpSGT(a, bv) : b_.CreateICmpUGT(a, bv);
  case NodeKind::GE:
    return fl ? b_.CreateFCmpOGE(a, bv) : sgn ? b_.CreateICmpSGE(a, bv) : b_.CreateICmpUGE(a, bv);
  case NodeKind::And:
    return b_.CreateAnd(a, bv);
  case NodeKind::Or:
    return b_.CreateOr(a, bv);
  default:
    NPUC_ASSERT(false, std::string("codegen: not a binary kind ") + kindName(k));
  }
}

llvm::Value *FuncEmitter::cast(DataType to, DataType from, llvm::Value *v) {
  llvm::Type *t = type(to);
  if (auto *vt = llvm::dyn_cast<llvm::FixedVectorType>(v->getType()))
    t = llvm::FixedVectorType::get(t, vt->getNumElements());
  if (to == from)
    return v;
  if (to.isBool())
    return from.isFloat() ? b_.CreateFCmpUNE(v, llvm::ConstantFP::get(v->getType(), 0.0))
                          : b_.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
  if (to.isFloat()) {
    if (from.isFloat())
      return b_.CreateFPCast(v, t);
    return from.isInt() ? b_.CreateSIToFP(v, t) : b_.CreateUIToFP(v, t);
  }
  if (from.isFloat())
    return to.isInt() ? b_.CreateFPToSI(v, t) : b_.CreateFPToUI(v, t);
  return b_.CreateIntCast(v, t, from.isInt());
}

llvm::Value *FuncEmitter::gpuRegister(const CallNode *op) {
  static const std::unordered_map<std::string, llvm::Intrinsic::ID> kRegs = {
      {"tid.x", llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x},
      {"ntid.x", llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_x},
      {"ctaid.x", llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x},
      {"nctaid.x", llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x}};
  auto it = kRegs.find(op->name);
  if (it == kRegs.end())
    return nullptr;
  NPUC_ASSERT(opt_.gpu, "thread register " + op->name + " in a CPU function " + f_.name);
  llvm::Value *v = b_.CreateCall(llvm::Intrinsic::getDeclaration(&m_, it->second));
  return b_.CreateIntCast(v, type(op->type), true);
}

llvm::Value *FuncEmitter::gpuMath(const CallNode *op, const std::vector<llvm::Value *> &args) {
  static const std::unordered_map<std::string, size_t> kNative = {
      {"sqrt", 1}, {"fabs", 1}, {"floor", 1}, {"ceil", 1}, {"fmax", 2}, {"fmin", 2}};
  if (kNative.count(op->name))
    return nullptr;
  NPUC_ASSERT(op->type.bits == 32 || op->type.bits == 64, "GPU math on " + toString(op->type));
  std::string sym = "__nv_" + op->name + (op->type.bits == 32 ? "f" : "");
  llvm::Type *t = type(op->type);
  std::vector<llvm::Type *> params(args.size(), t);
  auto *call =
      b_.CreateCall(m_.getOrInsertFunction(sym, llvm::FunctionType::get(t, params, false)), args);
  call->setDoesNotThrow();
  return call;
}

llvm::Value *FuncEmitter::callIntrinsic(const CallNode *op) {
  if (llvm::Value *r = gpuRegister(op))
    return r;
  std::vector<llvm::Value *> args;
  for (const Expr &a : op->args) {
    NPUC_ASSERT(a.type() == op->type, "intrinsic " + op->name + " argument type differs");
    args.push_back(expr(a));
  }
  NPUC_ASSERT(op->type.isFloat(), "intrinsic " + op->name + " on non-float type");
  if (opt_.gpu)
    if (llvm::Value *r = gpuMath(op, args))
      return r;
  static const std::unordered_map<std::string, std::pair<llvm::Intrinsic::ID, size_t>> kLlvm = {
      {"exp", {llvm::Intrinsic::exp, 1}},     {"log", {llvm::Intrinsic::log, 1}},
      {"sqrt", {llvm::Intrinsic::sqrt, 1}},   {"fabs", {llvm::Intrinsic::fabs, 1}},
      {"floor", {llvm::Intrinsic::floor, 1}}, {"ceil", {llvm::Intrinsic::ceil, 1}},
      {"round", {llvm::Intrinsic::round, 1}}, {"pow", {llvm::Intrinsic::pow, 2}},
      {"fmax", {llvm::Intrinsic::maxnum, 2}}, {"fmin", {llvm::Intrinsic::minnum, 2}},
      {"sin", {llvm::Intrinsic::sin, 1}},     {"cos", {llvm::Intrinsic::cos, 1}}};
  llvm::Type *t = type(op->type);
  if (auto it = kLlvm.find(op->name); it != kLlvm.end()) {
    NPUC_ASSERT(args.size() == it->second.second, "intrinsic " + op->name + " takes " +
                                                      std::to_string(it->second.second) +
                                                      " arguments");
    llvm::Function *f = llvm::Intrinsic::getDeclaration(&m_, it->second.first, {t});
    return b_.CreateCall(f, args);
  }
  static const std::unordered_map<std::string, size_t> kLibm = {
      {"tanh", 1}, {"erf", 1}, {"atan", 1}, {"tan", 1}, {"log1p", 1}, {"expm1", 1}};
  auto it = kLibm.find(op->name);
  NPUC_ASSERT(it != kLibm.end(), "codegen: unknown intrinsic " + op->name);
  NPUC_ASSERT(args.size() == it->second, "intrinsic " + op->name + " arity");
  NPUC_ASSERT(op->type.bits == 32 || op->type.bits == 64, "libm call on " + toString(op->type));
  std::string sym = op->name + (op->type.bits == 32 ? "f" : "");
  std::vector<llvm::Type *> params(args.size(), t);
  llvm::FunctionCallee callee =
      m_.getOrInsertFunction(sym, llvm::FunctionType::get(t, params, false));
  auto *call = b_.CreateCall(callee, args);
  call->setDoesNotAccessMemory();
  call->setDoesNotThrow();
  return call;
}

llvm::Value *FuncEmitter::expr(const Expr &e) {
  NPUC_ASSERT(e.defined(), "codegen: null expression in " + f_.name);
  switch (e.kind()) {
  case NodeKind::IntImm:
    return llvm::ConstantInt::get(type(e.type()), static_cast<uint64_t>(e.as<IntImmNode>()->value),
                                  true);
  case NodeKind::FloatImm:
    return llvm::ConstantFP::get(type(e.type()), e.as<FloatImmNode>()->value);
  case NodeKind::Var: {
    llvm::Value *v = vars_.find(e.get());
    NPUC_ASSERT(v != nullptr, "codegen: unbound variable " + e.as<VarNode>()->name);
    return v;
  }
  case NodeKind::Not:
    return b_.CreateNot(expr(e.as<NotNode>()->a));
  case NodeKind::Select: {
    const auto *op = e.as<SelectNode>();
    // Both arms are evaluated (no control flow): loads in TIR arms are always in bounds by
    // construction (padding uses clamped or guarded indices), so this is safe and vectorises.
    llvm::Value *c = expr(op->cond);
    llvm::Value *t = expr(op->trueValue);
    return b_.CreateSelect(c, t, expr(op->falseValue));
  }
  case NodeKind::Cast: {
    const auto *op = e.as<CastNode>();
    return cast(op->type, op->value.type(), expr(op->value));
  }
  case NodeKind::Load: {
    const auto *op = e.as<LoadNode>();
    return b_.CreateLoad(type(op->type), address(op->buffer, op->index));
  }
  case NodeKind::Call:
    return callIntrinsic(e.as<CallNode>());
  default:
    break;
  }
  const auto *op = static_cast<const BinaryNode *>(e.get());
  llvm::Value *a = expr(op->a);
  llvm::Value *bv = expr(op->b);
  return binary(e.kind(), op->a.type(), a, bv);
}

void FuncEmitter::allocate(const AllocateNode *op) {
  const Buffer &buf = op->buffer;
  llvm::Type *elem = type(buf->dtype);
  int64_t bytes = buf->numElements() * buf->dtype.bytes();
  llvm::Value *count = b_.getInt64(static_cast<uint64_t>(buf->numElements()));
  NPUC_ASSERT(!opt_.gpu || bytes <= kMaxStackAllocBytes,
              "GPU kernels hold no large local buffers (Gpu.cpp makes group scratch global): " +
                  buf->name);
  if (bytes <= kMaxStackAllocBytes) {
    // Entry-block allocas are static: an Allocate inside a loop does not grow the stack.
    llvm::IRBuilder<> eb(entry_, entry_->begin());
    buffers_[buf.get()] = eb.CreateAlloca(elem, count, buf->name);
    stmt(op->body);
  } else {
    auto *ptrTy = llvm::PointerType::getUnqual(ctx_);
    llvm::FunctionCallee mallocFn =
        m_.getOrInsertFunction("malloc", llvm::FunctionType::get(ptrTy, {b_.getInt64Ty()}, false));
    llvm::FunctionCallee freeFn =
        m_.getOrInsertFunction("free", llvm::FunctionType::get(b_.getVoidTy(), {ptrTy}, false));
    llvm::Value *p =
        b_.CreateCall(mallocFn, {b_.getInt64(static_cast<uint64_t>(bytes))}, buf->name);
    buffers_[buf.get()] = p;
    stmt(op->body);
    b_.CreateCall(freeFn, {p});
  }
  buffers_.erase(buf.get());
}

void FuncEmitter::stmt(const Stmt &s) {
  NPUC_ASSERT(s.defined(), "codegen: null statement in " + f_.name);
  switch (s.kind()) {
  case NodeKind::For:
    return loop(s.as<ForNode>());
  case NodeKind::IfThenElse: {
    const auto *op = s.as<IfThenElseNode>();
    llvm::Value *c = expr(op->cond);
    auto *thenB = llvm::BasicBlock::Create(ctx_, "then", fn_);
    auto *elseB = op->elseCase.defined() ? llvm::BasicBlock::Create(ctx_, "else", fn_) : nullptr;
    auto *join = llvm::BasicBlock::Create(ctx_, "endif", fn_);
    b_.CreateCondBr(c, thenB, elseB ? elseB : join);
    b_.SetInsertPoint(thenB);
    stmt(op->thenCase);
    b_.CreateBr(join);
    if (elseB) {
      b_.SetInsertPoint(elseB);
      stmt(op->elseCase);
      b_.CreateBr(join);
    }
    b_.SetInsertPoint(join);
    return;
  }
  case NodeKind::Store: {
    const auto *op = s.as<StoreNode>();
    llvm::Value *v = expr(op->value);
    b_.CreateStore(v, address(op->buffer, op->index));
    return;
  }
  case NodeKind::Allocate:
    return allocate(s.as<AllocateNode>());
  case NodeKind::Seq:
    for (const Stmt &c : s.as<SeqNode>()->stmts)
      stmt(c);
    return;
  case NodeKind::Evaluate:
    expr(s.as<EvaluateNode>()->value);
    return;
  case NodeKind::AttrStmt: {
    const auto *op = s.as<AttrStmtNode>();
    if (op->key == kVectorizeAttr && !opt_.gpu && vectorizable(op->body))
      return vectorLoop(op->body.as<ForNode>());
    return stmt(op->body); // other annotations carry no CPU semantics
  }
  case NodeKind::NpuOp:
    NPUC_ASSERT(false, "codegen: NPU instruction in CPU function " + f_.name + ": " + toText(s));
  default:
    NPUC_ASSERT(false, std::string("codegen: unhandled statement ") + kindName(s.kind()));
  }
}

} // namespace detail

std::unique_ptr<llvm::Module>
emitLLVM(llvm::LLVMContext &ctx, const std::vector<tir::PrimFunc> &funcs, const EmitOptions &opt) {
  auto m = std::make_unique<llvm::Module>(opt.gpu ? "npuc_gpu" : "npuc_cpu", ctx);
  for (const tir::PrimFunc &f : funcs)
    detail::FuncEmitter(*m, f, opt).emit();
  return m;
}

} // namespace npuc::cpu
