// Optimize.h - what the JIT and the ahead-of-time compiler share: the host target machine, the
// per-function target attributes and LLVM's O3 pipeline, so that `npuc run --target cpu` and a
// deployed shared library execute the same machine code.
#pragma once

#include "tir/IR.h"

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <memory>
#include <vector>

namespace npuc::cpu {

/// Registers the native target with LLVM (idempotent).
void initNativeTarget();

/// A target machine for the host CPU with all of its features (O3 code generation). `pic` asks
/// for position-independent code (shared libraries).
std::unique_ptr<llvm::TargetMachine> hostTargetMachine(bool pic = false);

/// Emits the functions (Codegen.h), verifies the module, sets the data layout and triple of
/// `tm`, tags every function with its CPU and features and runs the O3 pipeline.
std::unique_ptr<llvm::Module> buildOptimizedModule(llvm::LLVMContext &ctx,
                                                   const std::vector<tir::PrimFunc> &funcs,
                                                   llvm::TargetMachine &tm);

} // namespace npuc::cpu
