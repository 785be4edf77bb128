// Optimize.cpp - host target machine and the O3 pipeline (see Optimize.h).
#include "cpu_fallback/Optimize.h"

#include "cpu_fallback/Codegen.h"
#include "support/Error.h"

#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/TargetSelect.h>

#include <mutex>

namespace npuc::cpu {

void initNativeTarget() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
  });
}

std::unique_ptr<llvm::TargetMachine> hostTargetMachine(bool pic) {
  initNativeTarget();
  auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!jtmb)
    NPUC_ASSERT(false, "detecting the host CPU: " + llvm::toString(jtmb.takeError()));
  jtmb->setCodeGenOptLevel(llvm::CodeGenOpt::Aggressive);
  if (pic)
    jtmb->setRelocationModel(llvm::Reloc::PIC_);
  auto tm = jtmb->createTargetMachine();
  if (!tm)
    NPUC_ASSERT(false, "creating the host target machine: " + llvm::toString(tm.takeError()));
  return std::move(*tm);
}

std::unique_ptr<llvm::Module> buildHostModule(llvm::LLVMContext &ctx,
                                              const std::vector<tir::PrimFunc> &funcs,
                                              llvm::TargetMachine &tm) {
  std::unique_ptr<llvm::Module> m = emitLLVM(ctx, funcs);
  m->setDataLayout(tm.createDataLayout());
  m->setTargetTriple(tm.getTargetTriple().str());
  std::string err;
  llvm::raw_string_ostream os(err);
  NPUC_ASSERT(!llvm::verifyModule(*m, &os), "generated LLVM IR is invalid: " + os.str());

  // Host CPU attributes on every function, so that O3 vectorises for the real vector width.
  // With AVX-512 the schedules' tiles are sized for 32 zmm registers (Schedule.h), so 512-bit
  // vectors stay legal instead of being split in two (some CPUs' tuning prefers 256 bits).
  bool avx512 = tm.getTargetFeatureString().contains("+avx512f");
  for (llvm::Function &f : *m) {
    if (f.isDeclaration())
      continue;
    f.addFnAttr("target-cpu", tm.getTargetCPU());
    f.addFnAttr("target-features", tm.getTargetFeatureString());
    if (avx512) {
      f.addFnAttr("prefer-vector-width", "512");
      f.addFnAttr("min-legal-vector-width", "512");
    }
  }
  return m;
}

void optimizeModule(llvm::Module &m, llvm::TargetMachine &tm) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(&tm);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(m, mam);
}

std::unique_ptr<llvm::Module> buildOptimizedModule(llvm::LLVMContext &ctx,
                                                   const std::vector<tir::PrimFunc> &funcs,
                                                   llvm::TargetMachine &tm) {
  std::unique_ptr<llvm::Module> m = buildHostModule(ctx, funcs, tm);
  optimizeModule(*m, tm);
  return m;
}

} // namespace npuc::cpu
