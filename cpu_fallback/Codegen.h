// Codegen.h - TIR PrimFuncs to LLVM IR, for the CPU fallback.
//
// Each PrimFunc becomes `extern "C" void <name>(void **args)`, where args[i] points to the data
// of params[i] (element type from the buffer dtype). Loops become a header/body/latch CFG with a
// phi for the induction variable; loads and stores are GEPs on the flat buffer; Allocate is an
// entry-block alloca when small (<= 64 KiB) and malloc/free otherwise; Select is `select`;
// intrinsics map to llvm.* intrinsics (exp, log, sqrt, fabs, floor, ceil, pow, fmax/fmin as
// maxnum/minnum) or to libm calls (tanh, erf, ... with an `f` suffix for float32).
// Parallel and Pipelined loops are emitted serially for now (correct, not yet multi-threaded).
// NpuOp statements have no CPU meaning and are a compiler bug here.
#pragma once

#include "tir/IR.h"

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <memory>
#include <vector>

namespace npuc::cpu {

std::unique_ptr<llvm::Module> emitLLVM(llvm::LLVMContext &ctx,
                                       const std::vector<tir::PrimFunc> &funcs);

} // namespace npuc::cpu
