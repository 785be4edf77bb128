// Codegen.h - TIR PrimFuncs to LLVM IR, for the CPU fallback.
//
// Each PrimFunc becomes `extern "C" void <name>(void **args)`, where args[i] points to the data
// of params[i] (element type from the buffer dtype); it calls an always-inlined body whose buffer
// parameters are noalias (tensors never overlap). Loops become a header/body/latch CFG with a
// phi for the induction variable; loads and stores are GEPs on the flat buffer; Allocate is an
// entry-block alloca when small (<= 64 KiB) and malloc/free otherwise; Select is `select`;
// intrinsics map to llvm.* intrinsics (exp, log, sqrt, fabs, floor, ceil, pow, fmax/fmin as
// maxnum/minnum) or to libm calls (tanh, erf, ... with an `f` suffix for float32).
// Parallel loops are outlined into `void body(ptr closure, i64 begin, i64 end)` and run through
// the module's weak global `ptr npuc_parallel_for_hook` (the host's thread pool, contract in
// include/npuc/thread_pool.h), or serially when the host left it null. Unrolled loops with
// constant bounds are emitted once per iteration (the variable a constant: register tiles index
// their accumulators with constants, so SROA keeps them in registers); Pipelined loops are
// serial. A For wrapped in AttrStmt(kVectorizeAttr) with a constant extent (2..64) whose body is
// stores, sequences and unrolled loops becomes straight-line code on <extent x T> vectors:
// accesses at index v + rest are contiguous vector loads/stores, v-free values are splatted,
// anything else is computed lane by lane. FP adds and multiplies may contract into FMAs.
// NpuOp statements have no CPU meaning and are a compiler bug here.
#pragma once

#include "tir/IR.h"

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <memory>
#include <vector>

namespace npuc::cpu {

/// AttrStmt key marking the For under it as a vector loop (see above).
constexpr const char *kVectorizeAttr = "cpu.vectorize";

struct EmitOptions {
  /// NVPTX kernels instead of host functions: each PrimFunc becomes a `ptx_kernel` taking its
  /// buffers as pointer parameters (no args array), the integer intrinsics "tid.x", "ntid.x",
  /// "ctaid.x", "nctaid.x" read the thread/block registers, and float math calls libdevice's
  /// __nv_* functions (linked by Gpu.cpp).
  bool gpu = false;
};

std::unique_ptr<llvm::Module> emitLLVM(llvm::LLVMContext &ctx,
                                       const std::vector<tir::PrimFunc> &funcs,
                                       const EmitOptions &opt = {});

} // namespace npuc::cpu
