// Jit.h - compiles TIR PrimFuncs to host machine code with LLVM ORC (LLJIT) and runs them.
//
// add() lowers functions to LLVM IR (Codegen.h), verifies the module, optimises it with LLVM's
// O3 per-module pipeline for the host CPU (all of its features, JITTargetMachineBuilder::
// detectHost) and hands it to the JIT (Optimize.h). Parallel loops run on the process-wide
// thread pool (include/npuc/thread_pool.h), installed into each module's hook. libm/libc symbols
// (tanhf, malloc, ...) resolve against the current process. lookup() returns the entry point `void
// fn(void **args)`.
#pragma once

#include "tir/IR.h"

#include <memory>
#include <string>
#include <vector>

namespace npuc::cpu {

class Jit {
public:
  Jit();
  ~Jit();
  Jit(const Jit &) = delete;
  Jit &operator=(const Jit &) = delete;

  void add(const std::vector<tir::PrimFunc> &funcs);
  using Fn = void (*)(void **);
  /// The compiled function; a name never added is a compiler bug.
  Fn lookup(const std::string &name);
  /// Threads of the process-wide pool that runs parallel loops (1: serial). Threads the system
  /// refuses to create are an npuc::Error naming the count and the reason.
  static void setThreads(int threads);

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace npuc::cpu
