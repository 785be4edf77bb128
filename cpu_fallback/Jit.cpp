// Jit.cpp - LLJIT setup, module addition (optimised by Optimize.cpp), the parallel hook and
// symbol lookup.
#include "cpu_fallback/Jit.h"

#include "cpu_fallback/Optimize.h"
#include "npuc/thread_pool.h"
#include "support/Error.h"

#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/Target/TargetMachine.h>

#include <system_error>

namespace npuc::cpu {
namespace {

std::string errorText(llvm::Error e) {
  return llvm::toString(std::move(e));
}

template <typename T> T unwrap(llvm::Expected<T> v, const char *what) {
  if (!v)
    NPUC_ASSERT(false, std::string(what) + ": " + errorText(v.takeError()));
  return std::move(*v);
}

} // namespace

struct Jit::Impl {
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::unique_ptr<llvm::TargetMachine> tm;
};

Jit::Jit() : impl_(std::make_unique<Impl>()) {
  initNativeTarget();
  auto jtmb = unwrap(llvm::orc::JITTargetMachineBuilder::detectHost(), "detecting the host CPU");
  jtmb.setCodeGenOptLevel(llvm::CodeGenOpt::Aggressive);
  impl_->tm = hostTargetMachine();
  impl_->jit = unwrap(llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(jtmb).create(),
                      "creating the LLJIT");
  // libm (tanhf, erff, expf after lowering) and malloc/free come from this process.
  auto gen = unwrap(llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
                        impl_->jit->getDataLayout().getGlobalPrefix()),
                    "creating the process symbol generator");
  impl_->jit->getMainJITDylib().addGenerator(std::move(gen));
}

Jit::~Jit() = default;

void Jit::add(const std::vector<tir::PrimFunc> &funcs) {
  auto ctx = std::make_unique<llvm::LLVMContext>();
  std::unique_ptr<llvm::Module> m = buildOptimizedModule(*ctx, funcs, *impl_->tm);
  bool parallel = m->getNamedGlobal("npuc_parallel_for_hook") != nullptr;
  if (auto e = impl_->jit->addIRModule(llvm::orc::ThreadSafeModule(std::move(m), std::move(ctx))))
    NPUC_ASSERT(false, "adding a module to the JIT: " + errorText(std::move(e)));
  // Parallel loops reach the process thread pool through the module's hook (Codegen.h).
  if (parallel) {
    auto addr = impl_->jit->lookup("npuc_parallel_for_hook");
    if (!addr)
      NPUC_ASSERT(false, "JIT lookup of the parallel hook: " + errorText(addr.takeError()));
    *addr->toPtr<rt::ParallelForFn *>() = &rt::ThreadPool::parallelFor;
  }
}

void Jit::setThreads(int threads) {
  try {
    rt::ThreadPool::setThreads(threads);
  } catch (const std::system_error &e) {
    fail("cannot start a pool of {} CPU threads: {} (ask for fewer threads)", threads,
         e.code().message());
  }
}

Jit::Fn Jit::lookup(const std::string &name) {
  auto addr = impl_->jit->lookup(name);
  if (!addr)
    NPUC_ASSERT(false, "JIT lookup of " + name + ": " + errorText(addr.takeError()));
  return addr->toPtr<Fn>();
}

} // namespace npuc::cpu
