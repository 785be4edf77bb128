// Gpu.cpp - thread binding and NVPTX emission (see Gpu.h).
#include "cpu_fallback/Gpu.h"

#include "cpu_fallback/Codegen.h"
#include "lowering/LowerOps.h"
#include "support/Error.h"
#include "tir/Verify.h"

#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Linker/Linker.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Target/TargetMachine.h>

#include <filesystem>
#include <mutex>
#include <sstream>

extern "C" {
void LLVMInitializeNVPTXTargetInfo();
void LLVMInitializeNVPTXTarget();
void LLVMInitializeNVPTXTargetMC();
void LLVMInitializeNVPTXAsmPrinter();
}

namespace npuc::cpu {
namespace {

using namespace npuc::tir;

constexpr int64_t kMaxGrid = 65535;

Expr reg(const char *name) {
  return call(DataType::Int(32), name, {});
}

/// Distributes loop `op` over `count` workers whose index is `idx` (a 64-bit expression):
///   for it in [0, ceil(E/count)): if (idx + it*count < E) for var in [min + idx + it*count, +1)
Stmt distribute(const ForNode *op, int64_t extent, int64_t count, Expr idx, Stmt body) {
  Var it = Var::make(op->var.name() + "_it");
  Expr pos = idx + it * count;
  Stmt inner = ForNode::make(op->var, op->min + pos, imm(1), ForKind::Serial, body);
  return forLoop(it, imm(0), imm((extent + count - 1) / count),
                 IfThenElseNode::make(pos < imm(extent), inner));
}

int64_t constExtent(const ForNode *op) {
  const auto *e = op->extent.as<IntImmNode>();
  return e ? e->value : -1;
}

/// Binds one nest; returns the kernel's body and sets grid/block.
Stmt bindNest(const Stmt &s, int64_t maxBlock, int64_t &grid, int64_t &block) {
  std::vector<const ForNode *> prefix;
  Stmt cur = s;
  while (cur.kind() == NodeKind::For) {
    prefix.push_back(cur.as<ForNode>());
    cur = prefix.back()->body;
  }
  int bi = -1, ti = -1;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (constExtent(prefix[i]) <= 1)
      continue;
    if (bi < 0)
      bi = int(i);
    else if (ti < 0) {
      ti = int(i);
      break;
    }
  }
  grid = block = 1;
  Stmt body = cur;
  // Rebuild inside-out: loops after the thread loop stay as they were.
  for (size_t i = prefix.size(); i-- > 0;) {
    const ForNode *op = prefix[i];
    int64_t e = constExtent(op);
    if (int(i) == ti) {
      block = std::min(e, maxBlock);
      body = distribute(op, e, block, cast(DataType::Int(64), reg("tid.x")), body);
    } else if (int(i) == bi) {
      grid = std::min(e, kMaxGrid);
      body = distribute(op, e, grid, cast(DataType::Int(64), reg("ctaid.x")), body);
    } else {
      body = ForNode::make(op->var, op->min, op->extent, ForKind::Serial, body);
    }
  }
  return body;
}

std::string findLibdevice(const std::string &given) {
  if (!given.empty())
    return given;
  const char *p = "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc";
  return std::filesystem::exists(p) ? p : "";
}

} // namespace

std::vector<GpuKernel> bindThreads(const PrimFunc &f, int64_t maxBlock) {
  std::vector<Buffer> scratch;
  Stmt body = f.body;
  while (body.kind() == NodeKind::Allocate) {
    scratch.push_back(body.as<AllocateNode>()->buffer);
    body = body.as<AllocateNode>()->body;
  }
  std::vector<Stmt> stages =
      body.kind() == NodeKind::Seq ? body.as<SeqNode>()->stmts : std::vector<Stmt>{body};
  std::vector<GpuKernel> out;
  for (size_t i = 0; i < stages.size(); ++i) {
    GpuKernel k;
    k.func.name = f.name + "_k" + std::to_string(i);
    k.func.params = f.params;
    k.func.params.insert(k.func.params.end(), scratch.begin(), scratch.end());
    k.func.body = bindNest(stages[i], maxBlock, k.grid, k.block);
    verify(k.func);
    out.push_back(std::move(k));
  }
  return out;
}

std::string emitPtx(const std::vector<PrimFunc> &kernels, const std::string &arch,
                    const std::string &libdevice) {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
  const std::string triple = "nvptx64-nvidia-cuda";
  std::string err;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, err);
  NPUC_ASSERT(target, "LLVM was built with the NVPTX back end: " + err);
  std::unique_ptr<llvm::TargetMachine> tm(
      target->createTargetMachine(triple, arch, "", llvm::TargetOptions(), llvm::Reloc::Static,
                                  std::nullopt, llvm::CodeGenOpt::Aggressive));
  if (!tm)
    fail("--target gpu: LLVM's NVPTX back end does not know the architecture '{}'", arch);

  llvm::LLVMContext ctx;
  EmitOptions opt;
  opt.gpu = true;
  std::unique_ptr<llvm::Module> m = emitLLVM(ctx, kernels, opt);
  m->setDataLayout(tm->createDataLayout());
  m->setTargetTriple(triple);
  bool needsLibdevice = false;
  for (llvm::Function &fn : *m)
    needsLibdevice |= fn.isDeclaration() && fn.getName().startswith("__nv_");
  if (needsLibdevice) {
    std::string path = findLibdevice(libdevice);
    if (path.empty())
      fail("--target gpu: the model uses float math (exp, tanh, ...) that needs libdevice.10.bc "
           "from the CUDA toolkit, and /usr/local/cuda/nvvm/libdevice has none");
    auto buf = llvm::MemoryBuffer::getFile(path);
    if (!buf)
      fail("{}: cannot read libdevice: {}", path, buf.getError().message());
    auto lib = llvm::parseBitcodeFile(buf.get()->getMemBufferRef(), ctx);
    if (!lib)
      fail("{}: not LLVM bitcode: {}", path, llvm::toString(lib.takeError()));
    (*lib)->setDataLayout(m->getDataLayout());
    (*lib)->setTargetTriple(triple);
    if (llvm::Linker::linkModules(*m, std::move(*lib), llvm::Linker::LinkOnlyNeeded))
      fail("{}: linking libdevice failed", path);
  }
  llvm::raw_string_ostream vos(err);
  NPUC_ASSERT(!llvm::verifyModule(*m, &vos), "generated NVPTX IR is invalid: " + vos.str());

  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(tm.get());
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3).run(*m, mam);

  llvm::SmallVector<char, 0> ptx;
  llvm::raw_svector_ostream os(ptx);
  llvm::legacy::PassManager pm;
  NPUC_ASSERT(!tm->addPassesToEmitFile(pm, os, nullptr, llvm::CGFT_AssemblyFile),
              "the NVPTX target machine emits PTX");
  pm.run(*m);
  return std::string(ptx.begin(), ptx.end());
}

GpuArtifacts buildGpu(const graph::Graph &g, const std::string &arch) {
  std::vector<PrimFunc> funcs;
  std::ostringstream plan;
  for (const graph::FusedGroup &grp : g.groups) {
    std::vector<graph::ValueId> params;
    PrimFunc f = lowerGroup(g, grp, &params);
    f.name = "npuc_gpu_group_" + std::to_string(grp.id);
    for (GpuKernel &k : bindThreads(f)) {
      plan << "kernel " << k.func.name << " grid " << k.grid << " block " << k.block << " args";
      for (size_t i = 0; i < k.func.params.size(); ++i) {
        if (i < params.size())
          plan << " v" << params[i];
        else
          plan << " s" << k.func.params[i]->numElements();
      }
      plan << "\n";
      funcs.push_back(std::move(k.func));
    }
  }
  if (funcs.empty())
    fail("model '{}' has no operators to compile", g.name);
  return {emitPtx(funcs, arch), plan.str()};
}

} // namespace npuc::cpu
