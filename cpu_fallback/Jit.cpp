// Jit.cpp - LLJIT setup, the O3 pipeline and symbol lookup.
#include "cpu_fallback/Jit.h"

#include "cpu_fallback/Codegen.h"
#include "support/Error.h"

#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Target/TargetMachine.h>

#include <mutex>

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

void initNativeTarget() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
  });
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
  impl_->tm = unwrap(jtmb.createTargetMachine(), "creating the host target machine");
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
  std::unique_ptr<llvm::Module> m = emitLLVM(*ctx, funcs);
  m->setDataLayout(impl_->jit->getDataLayout());
  m->setTargetTriple(impl_->tm->getTargetTriple().str());
  std::string err;
  llvm::raw_string_ostream os(err);
  NPUC_ASSERT(!llvm::verifyModule(*m, &os), "generated LLVM IR is invalid: " + os.str());

  // Host CPU attributes on every function, so that O3 vectorises for the real vector width.
  for (llvm::Function &f : *m) {
    if (f.isDeclaration())
      continue;
    f.addFnAttr("target-cpu", impl_->tm->getTargetCPU());
    f.addFnAttr("target-features", impl_->tm->getTargetFeatureString());
  }

  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(impl_->tm.get());
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(*m, mam);

  if (auto e = impl_->jit->addIRModule(llvm::orc::ThreadSafeModule(std::move(m), std::move(ctx))))
    NPUC_ASSERT(false, "adding a module to the JIT: " + errorText(std::move(e)));
}

Jit::Fn Jit::lookup(const std::string &name) {
  auto addr = impl_->jit->lookup(name);
  if (!addr)
    NPUC_ASSERT(false, "JIT lookup of " + name + ": " + errorText(addr.takeError()));
  return addr->toPtr<Fn>();
}

} // namespace npuc::cpu
