// CodegenEmitter.h - the TIR -> LLVM IR function emitter shared by Codegen.cpp (entry points,
// expressions, statements, allocation) and CodegenLoops.cpp (serial, parallel, unrolled and
// vector loops). Internal to cpu_fallback: the public interface is Codegen.h.
#pragma once

#include "cpu_fallback/Codegen.h"

#include <llvm/IR/IRBuilder.h>

#include <unordered_map>
#include <utility>
#include <vector>

namespace npuc::cpu::detail {

/// Variables or buffers in scope, by TIR node. Iterating (a parallel loop's closure) follows the
/// order they were bound in, not their addresses, so that a function's IR is the same in every
/// process: its machine code is keyed on that IR (Jit.h).
class Bindings {
public:
  llvm::Value *&operator[](const void *node) {
    auto [it, fresh] = map_.try_emplace(node);
    if (fresh)
      it->second.order = next_++;
    return it->second.value;
  }
  /// The value bound to `node`, or null.
  llvm::Value *find(const void *node) const {
    auto it = map_.find(node);
    return it == map_.end() ? nullptr : it->second.value;
  }
  void erase(const void *node) { map_.erase(node); }
  std::vector<std::pair<const void *, llvm::Value *>> inBindingOrder() const;

private:
  struct Entry {
    llvm::Value *value = nullptr;
    uint64_t order = 0;
  };
  std::unordered_map<const void *, Entry> map_;
  uint64_t next_ = 0;
};

/// Emits one PrimFunc into a module (the mapping is described in Codegen.h).
class FuncEmitter {
public:
  FuncEmitter(llvm::Module &m, const tir::PrimFunc &f, const EmitOptions &opt)
      : m_(m), ctx_(m.getContext()), b_(ctx_), f_(f), opt_(opt) {
    // fp32 tolerance, not bit-exactness, is the contract: let the back end fuse a*b+c into FMAs.
    llvm::FastMathFlags fmf;
    fmf.setAllowContract(true);
    b_.setFastMathFlags(fmf);
  }
  void emit();

private:
  llvm::Module &m_;
  llvm::LLVMContext &ctx_;
  llvm::IRBuilder<> b_;
  const tir::PrimFunc &f_;
  const EmitOptions &opt_;
  llvm::Function *fn_ = nullptr;
  llvm::BasicBlock *entry_ = nullptr;
  Bindings vars_, buffers_;
  int parallelCount_ = 0;
  llvm::Type *type(tir::DataType t);
  llvm::Value *bufferPtr(const tir::Buffer &buf);
  llvm::Value *address(const tir::Buffer &buf, const tir::Expr &index);
  // Integer floor division/modulo from truncating ones: adjust when the remainder is non-zero
  // and its sign differs from the divisor's.
  llvm::Value *floorDivMod(llvm::Value *a, llvm::Value *bv, bool wantMod);
  llvm::Value *binary(tir::NodeKind k, tir::DataType t, llvm::Value *a, llvm::Value *bv);
  llvm::Value *cast(tir::DataType to, tir::DataType from, llvm::Value *v);
  llvm::Value *gpuRegister(const tir::CallNode *op);
  // libdevice's float math (__nv_expf, ...): NVPTX has no instructions for these.
  llvm::Value *gpuMath(const tir::CallNode *op, const std::vector<llvm::Value *> &args);
  llvm::Value *callIntrinsic(const tir::CallNode *op);
  llvm::Value *expr(const tir::Expr &e);
  // A parallel loop's body becomes `void body(ptr closure, i64 begin, i64 end)`, which runs
  // iterations [begin, end); the closure struct holds every variable and buffer in scope plus
  // the loop's min. The loop itself calls the module's hook (the host's thread pool) or, when no
  // host installed one, the body over the whole range.
  void parallelLoop(const tir::ForNode *op);
  // `ptr npuc_parallel_for_hook`, weak so that every module may define it and the first one
  // loaded wins (one hook per process image).
  llvm::GlobalVariable *parallelHook();
  void loop(const tir::ForNode *op);
  void serialLoop(const tir::ForNode *op, llvm::Value *mn, llvm::Value *end);

  // ---- Vector loops (AttrStmt kVectorizeAttr around a For; see Codegen.h) ----
  // The loop's whole extent becomes one vector of that many lanes. An expression free of the
  // loop variable stays scalar (splatted where it meets a vector); a load or store whose index
  // is v + rest is one contiguous vector access; anything else runs lane by lane, so any body
  // of stores, sequences and unrolled loops is correct, and the schedules keep the hot accesses
  // contiguous.
  const void *vecVar_ = nullptr;
  unsigned vecLanes_ = 0;
  llvm::Value *vecBase_ = nullptr;
  static bool vectorBody(const tir::Stmt &s);
  static bool vectorizable(const tir::Stmt &s);
  void vectorLoop(const tir::ForNode *op);
  void unrolledLoop(const tir::ForNode *op);
  llvm::Value *splat(llvm::Value *v);
  /// `e` for one lane: the vector variable bound to base + lane.
  llvm::Value *laneValue(const tir::Expr &e, unsigned lane);
  llvm::Value *scalarized(const tir::Expr &e);
  /// Address of lane 0 when `index` is v + rest (a contiguous access), else null.
  llvm::Value *contiguousAddress(const tir::Buffer &buf, const tir::Expr &index);
  llvm::Value *vectorExpr(const tir::Expr &e);
  void vectorStmt(const tir::Stmt &s);
  void allocate(const tir::AllocateNode *op);
  void stmt(const tir::Stmt &s);
};

/// The emitter never takes an Allocate larger than this onto the stack (malloc/free instead).
constexpr int64_t kMaxStackAllocBytes = 64 * 1024;

} // namespace npuc::cpu::detail
