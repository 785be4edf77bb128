// Codegen.cpp - the TIR -> LLVM IR emitter (see Codegen.h for the mapping).
#include "cpu_fallback/Codegen.h"

#include "support/Error.h"
#include "tir/Linear.h"
#include "tir/Printer.h"
#include "tir/Substitute.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

#include <unordered_map>

namespace npuc::cpu {
namespace {

using namespace npuc::tir;

constexpr int64_t kMaxStackAllocBytes = 64 * 1024;

class FuncEmitter {
public:
  FuncEmitter(llvm::Module &m, const PrimFunc &f, const EmitOptions &opt)
      : m_(m), ctx_(m.getContext()), b_(ctx_), f_(f), opt_(opt) {
    // fp32 tolerance, not bit-exactness, is the contract: let the back end fuse a*b+c into FMAs.
    llvm::FastMathFlags fmf;
    fmf.setAllowContract(true);
    b_.setFastMathFlags(fmf);
  }

  void emit() {
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

private:
  llvm::Module &m_;
  llvm::LLVMContext &ctx_;
  llvm::IRBuilder<> b_;
  const PrimFunc &f_;
  const EmitOptions &opt_;
  llvm::Function *fn_ = nullptr;
  llvm::BasicBlock *entry_ = nullptr;
  std::unordered_map<const void *, llvm::Value *> vars_, buffers_;
  int parallelCount_ = 0;

  llvm::Type *type(DataType t) {
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

  llvm::Value *bufferPtr(const Buffer &buf) {
    auto it = buffers_.find(buf.get());
    NPUC_ASSERT(it != buffers_.end(),
                "buffer " + buf->name + " used outside its scope in " + f_.name);
    return it->second;
  }

  llvm::Value *address(const Buffer &buf, const Expr &index) {
    llvm::Value *idx = expr(index);
    return b_.CreateInBoundsGEP(type(buf->dtype), bufferPtr(buf), {idx});
  }

  // Integer floor division/modulo from truncating ones: adjust when the remainder is non-zero
  // and its sign differs from the divisor's.
  llvm::Value *floorDivMod(llvm::Value *a, llvm::Value *bv, bool wantMod) {
    llvm::Value *q = b_.CreateSDiv(a, bv), *r = b_.CreateSRem(a, bv);
    llvm::Value *zero = llvm::ConstantInt::get(a->getType(), 0);
    llvm::Value *adjust =
        b_.CreateAnd(b_.CreateICmpNE(r, zero),
                     b_.CreateICmpNE(b_.CreateICmpSLT(r, zero), b_.CreateICmpSLT(bv, zero)));
    if (wantMod)
      return b_.CreateSelect(adjust, b_.CreateAdd(r, bv), r);
    return b_.CreateSelect(adjust, b_.CreateSub(q, llvm::ConstantInt::get(a->getType(), 1)), q);
  }

  llvm::Value *binary(NodeKind k, DataType t, llvm::Value *a, llvm::Value *bv) {
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

  llvm::Value *cast(DataType to, DataType from, llvm::Value *v) {
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

  llvm::Value *gpuRegister(const CallNode *op) {
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

  // libdevice's float math (__nv_expf, ...): NVPTX has no instructions for these.
  llvm::Value *gpuMath(const CallNode *op, const std::vector<llvm::Value *> &args) {
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

  llvm::Value *callIntrinsic(const CallNode *op) {
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

  llvm::Value *expr(const Expr &e) {
    NPUC_ASSERT(e.defined(), "codegen: null expression in " + f_.name);
    switch (e.kind()) {
    case NodeKind::IntImm:
      return llvm::ConstantInt::get(type(e.type()),
                                    static_cast<uint64_t>(e.as<IntImmNode>()->value), true);
    case NodeKind::FloatImm:
      return llvm::ConstantFP::get(type(e.type()), e.as<FloatImmNode>()->value);
    case NodeKind::Var: {
      auto it = vars_.find(e.get());
      NPUC_ASSERT(it != vars_.end(), "codegen: unbound variable " + e.as<VarNode>()->name);
      return it->second;
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

  // A parallel loop's body becomes `void body(ptr closure, i64 begin, i64 end)`, which runs
  // iterations [begin, end); the closure struct holds every variable and buffer in scope plus
  // the loop's min. The loop itself calls the module's hook (the host's thread pool) or, when no
  // host installed one, the body over the whole range.
  void parallelLoop(const ForNode *op) {
    auto *ptrTy = llvm::PointerType::getUnqual(ctx_);
    auto *i64 = b_.getInt64Ty();
    llvm::Value *mn = expr(op->min);
    llvm::Value *n = b_.CreateSExtOrTrunc(expr(op->extent), i64);
    std::vector<std::pair<const void *, llvm::Value *>> vars(vars_.begin(), vars_.end()),
        bufs(buffers_.begin(), buffers_.end());
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
    llvm::Value *end =
        b_.CreateAdd(innerMin, b_.CreateSExtOrTrunc(innerFn->getArg(nArgs - 1), ivTy));
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

  // `ptr npuc_parallel_for_hook`, weak so that every module may define it and the first one
  // loaded wins (one hook per process image).
  llvm::GlobalVariable *parallelHook() {
    const char *name = "npuc_parallel_for_hook";
    if (llvm::GlobalVariable *g = m_.getNamedGlobal(name))
      return g;
    auto *ptrTy = llvm::PointerType::getUnqual(ctx_);
    return new llvm::GlobalVariable(m_, ptrTy, false, llvm::GlobalValue::WeakAnyLinkage,
                                    llvm::ConstantPointerNull::get(ptrTy), name);
  }

  void loop(const ForNode *op) {
    if (op->forKind == ForKind::Parallel)
      return parallelLoop(op);
    if (op->forKind == ForKind::Unrolled && op->min.kind() == NodeKind::IntImm &&
        op->extent.kind() == NodeKind::IntImm)
      return unrolledLoop(op);
    llvm::Value *mn = expr(op->min);
    serialLoop(op, mn, b_.CreateAdd(mn, expr(op->extent)));
  }

  void serialLoop(const ForNode *op, llvm::Value *mn, llvm::Value *end) {
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

  // ---- Vector loops (AttrStmt kVectorizeAttr around a For; see Codegen.h) ----
  // The loop's whole extent becomes one vector of that many lanes. An expression free of the
  // loop variable stays scalar (splatted where it meets a vector); a load or store whose index
  // is v + rest is one contiguous vector access; anything else runs lane by lane, so any body
  // of stores, sequences and unrolled loops is correct, and the schedules keep the hot accesses
  // contiguous.
  const void *vecVar_ = nullptr;
  unsigned vecLanes_ = 0;
  llvm::Value *vecBase_ = nullptr;

  static bool vectorBody(const Stmt &s) {
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

  static bool vectorizable(const Stmt &s) {
    if (s.kind() != NodeKind::For)
      return false;
    const auto *f = s.as<ForNode>();
    return f->forKind == ForKind::Serial && f->extent.kind() == NodeKind::IntImm &&
           f->extent.as<IntImmNode>()->value >= 2 && f->extent.as<IntImmNode>()->value <= 64 &&
           vectorBody(f->body);
  }

  void vectorLoop(const ForNode *op) {
    NPUC_ASSERT(!vecVar_, "nested vector loops in " + f_.name);
    vecBase_ = expr(op->min);
    vecVar_ = op->var.get();
    vecLanes_ = unsigned(op->extent.as<IntImmNode>()->value);
    vectorStmt(op->body);
    vecVar_ = nullptr;
    vecBase_ = nullptr;
  }

  void unrolledLoop(const ForNode *op) {
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

  llvm::Value *splat(llvm::Value *v) {
    return v->getType()->isVectorTy() ? v : b_.CreateVectorSplat(vecLanes_, v);
  }

  /// `e` for one lane: the vector variable bound to base + lane.
  llvm::Value *laneValue(const Expr &e, unsigned lane) {
    vars_[vecVar_] = b_.CreateAdd(vecBase_, llvm::ConstantInt::get(vecBase_->getType(), lane));
    llvm::Value *v = expr(e);
    vars_.erase(vecVar_);
    return v;
  }

  llvm::Value *scalarized(const Expr &e) {
    llvm::Value *v = llvm::PoisonValue::get(llvm::FixedVectorType::get(type(e.type()), vecLanes_));
    for (unsigned i = 0; i < vecLanes_; ++i)
      v = b_.CreateInsertElement(v, laneValue(e, i), uint64_t(i));
    return v;
  }

  /// Address of lane 0 when `index` is v + rest (a contiguous access), else null.
  llvm::Value *contiguousAddress(const Buffer &buf, const Expr &index) {
    int64_t coeff = 0;
    Expr rest;
    if (!linearIn(index, static_cast<const VarNode *>(vecVar_), coeff, rest) || coeff != 1)
      return nullptr;
    llvm::Value *r = expr(rest);
    llvm::Value *idx = b_.CreateAdd(r, b_.CreateSExtOrTrunc(vecBase_, r->getType()));
    return b_.CreateInBoundsGEP(type(buf->dtype), bufferPtr(buf), {idx});
  }

  llvm::Value *vectorExpr(const Expr &e) {
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

  void vectorStmt(const Stmt &s) {
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

  void allocate(const AllocateNode *op) {
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
      llvm::FunctionCallee mallocFn = m_.getOrInsertFunction(
          "malloc", llvm::FunctionType::get(ptrTy, {b_.getInt64Ty()}, false));
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

  void stmt(const Stmt &s) {
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
};

} // namespace

std::unique_ptr<llvm::Module>
emitLLVM(llvm::LLVMContext &ctx, const std::vector<tir::PrimFunc> &funcs, const EmitOptions &opt) {
  auto m = std::make_unique<llvm::Module>(opt.gpu ? "npuc_gpu" : "npuc_cpu", ctx);
  for (const tir::PrimFunc &f : funcs)
    FuncEmitter(*m, f, opt).emit();
  return m;
}

} // namespace npuc::cpu
