// Jit.h - compiles TIR PrimFuncs to host machine code with LLVM ORC (LLJIT) and runs them.
//
// add() lowers functions to LLVM IR (Codegen.h), verifies the module, optimises it with LLVM's
// O3 per-module pipeline for the host CPU (all of its features, JITTargetMachineBuilder::
// detectHost) and hands it to the JIT (Optimize.h). Parallel loops run on the process-wide
// thread pool (include/npuc/thread_pool.h), installed into each module's hook. libm/libc symbols
// (tanhf, malloc, ...) resolve against the current process. lookup() returns the entry point `void
// fn(void **args)`.
//
// Machine code can be kept and reused (issue 22: `npuc compile` stores it in the package, so that
// `npuc run` does not run LLVM again). A module's code is identified by a key: the SHA-256 of its
// bitcode before optimisation (which carries the host's triple, CPU and features as attributes),
// LLVM's version and kPipelineVersion. add() given a NativeCode of the same key links that
// object as it is; any other key (another CPU, another npuc or LLVM, other kernels) compiles the
// module anew, and add() says why.
#pragma once

#include "cpu_fallback/CodeCache.h"
#include "tir/IR.h"

#include <memory>
#include <string>
#include <vector>

namespace npuc::cpu {

/// The machine code of one module of CPU kernels.
struct NativeCode {
  std::string key;    // what the code was compiled from (see above), hex SHA-256
  std::string host;   // the CPU it was compiled for, for messages: "<triple> <cpu> (features <h>)"
  std::string object; // the relocatable object, as the JIT's code generator emitted it
};

class Jit {
public:
  Jit();
  ~Jit();
  Jit(const Jit &) = delete;
  Jit &operator=(const Jit &) = delete;

  struct Added {
    std::string key;     // the module's key
    bool reused = false; // linked from `prebuilt`, no LLVM optimisation or code generation
    bool fromCache = false; // linked from the code cache's entry for the key, likewise
    std::string whyNot;     // with a `prebuilt` that was not reused: the reason, for the user
    std::string symbol;     // one function of the module (materialises it on lookup)
  };
  /// Adds `funcs` (at least one) as one module; see the header comment for `prebuilt`. Where
  /// that is not reused, an object `cache` holds for the key is (CodeCache.h).
  Added add(const std::vector<tir::PrimFunc> &funcs, const NativeCode *prebuilt = nullptr,
            const CodeCache *cache = nullptr);
  /// The machine code of a module add() returned, compiled now if nothing looked it up yet.
  NativeCode nativeCode(const Added &module);
  using Fn = void (*)(void **);
  /// The compiled function; a name never added is a compiler bug.
  Fn lookup(const std::string &name);
  /// The host this process compiles for, as NativeCode::host names it.
  std::string host() const;
  /// Threads of the process-wide pool that runs parallel loops (1: serial). Threads the system
  /// refuses to create are an npuc::Error naming the count and the reason.
  static void setThreads(int threads);

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace npuc::cpu
