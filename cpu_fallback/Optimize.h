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
/// `tm` and tags every function with its CPU and features: the module before optimisation,
/// which is what identifies a module's machine code (NativeCode.h keys on it).
std::unique_ptr<llvm::Module> buildHostModule(llvm::LLVMContext &ctx,
                                              const std::vector<tir::PrimFunc> &funcs,
                                              llvm::TargetMachine &tm);

/// Runs LLVM's O3 per-module pipeline for `tm` on a module from buildHostModule.
void optimizeModule(llvm::Module &m, llvm::TargetMachine &tm);

/// buildHostModule, then optimizeModule.
std::unique_ptr<llvm::Module> buildOptimizedModule(llvm::LLVMContext &ctx,
                                                   const std::vector<tir::PrimFunc> &funcs,
                                                   llvm::TargetMachine &tm);

/// Bumped whenever buildHostModule's attributes or optimizeModule's pipeline change, so that
/// machine code stored in packages by an older npuc is not taken for this one's.
constexpr int kPipelineVersion = 1;

} // namespace npuc::cpu
