// Jit.cpp - LLJIT setup, module addition (optimised by Optimize.cpp, or linked from stored
// machine code), the parallel hook and symbol lookup.
#include "cpu_fallback/Jit.h"

#include "cpu_fallback/Optimize.h"
#include "npuc/thread_pool.h"
#include "support/Error.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/ExecutionEngine/ObjectCache.h>
#include <llvm/ExecutionEngine/Orc/CompileUtils.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Support/SHA256.h>
#include <llvm/Target/TargetMachine.h>

#include <fmt/format.h>

#include <map>
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

// The JIT's code generator consults this before compiling a module and tells it every object it
// emits. Modules are named by their key, so a stored object stands in for compiling the module
// it came from, and a compiled one can be handed out (Jit::nativeCode).
class KeyedObjects : public llvm::ObjectCache {
public:
  std::map<std::string, std::string> objects; // module identifier (its key) -> object bytes

  void notifyObjectCompiled(const llvm::Module *m, llvm::MemoryBufferRef obj) override {
    objects[m->getModuleIdentifier()] = obj.getBuffer().str();
  }
  std::unique_ptr<llvm::MemoryBuffer> getObject(const llvm::Module *m) override {
    auto it = objects.find(m->getModuleIdentifier());
    if (it == objects.end())
      return nullptr;
    return llvm::MemoryBuffer::getMemBufferCopy(it->second, m->getModuleIdentifier());
  }
};

// The module's bitcode names its functions' code, target CPU and features; LLVM's version and
// our pipeline's name what turns it into machine code.
std::string moduleKey(const llvm::Module &m) {
  llvm::SmallVector<char, 0> bitcode;
  llvm::raw_svector_ostream os(bitcode);
  llvm::WriteBitcodeToFile(m, os);
  llvm::SHA256 h;
  h.update(llvm::StringRef(bitcode.data(), bitcode.size()));
  h.update(fmt::format("\nllvm {}\nnpuc pipeline {}\ncodegen O3\n", LLVM_VERSION_STRING,
                       kPipelineVersion));
  return llvm::toHex(h.final(), /*LowerCase=*/true);
}

bool parsesAsObject(const std::string &bytes) {
  auto obj = llvm::object::ObjectFile::createObjectFile(llvm::MemoryBufferRef(bytes, "stored"));
  if (!obj) {
    llvm::consumeError(obj.takeError());
    return false;
  }
  return true;
}

} // namespace

struct Jit::Impl {
  KeyedObjects objects; // outlives the JIT, which holds a pointer to it
  std::unique_ptr<llvm::TargetMachine> tm;
  std::unique_ptr<llvm::orc::LLJIT> jit;
};

Jit::Jit() : impl_(std::make_unique<Impl>()) {
  initNativeTarget();
  auto jtmb = unwrap(llvm::orc::JITTargetMachineBuilder::detectHost(), "detecting the host CPU");
  jtmb.setCodeGenOptLevel(llvm::CodeGenOpt::Aggressive);
  impl_->tm = hostTargetMachine();
  llvm::ObjectCache *cache = &impl_->objects;
  // LLJIT's own default compiler (single-threaded), with the keyed objects consulted.
  auto compiler = [cache](llvm::orc::JITTargetMachineBuilder b)
      -> llvm::Expected<std::unique_ptr<llvm::orc::IRCompileLayer::IRCompiler>> {
    auto tm = b.createTargetMachine();
    if (!tm)
      return tm.takeError();
    return std::make_unique<llvm::orc::TMOwningSimpleCompiler>(std::move(*tm), cache);
  };
  impl_->jit = unwrap(llvm::orc::LLJITBuilder()
                          .setJITTargetMachineBuilder(jtmb)
                          .setCompileFunctionCreator(compiler)
                          .create(),
                      "creating the LLJIT");
  // libm (tanhf, erff, expf after lowering) and malloc/free come from this process.
  auto gen = unwrap(llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
                        impl_->jit->getDataLayout().getGlobalPrefix()),
                    "creating the process symbol generator");
  impl_->jit->getMainJITDylib().addGenerator(std::move(gen));
}

Jit::~Jit() = default;

std::string Jit::host() const {
  const llvm::TargetMachine &tm = *impl_->tm;
  llvm::SHA256 h;
  h.update(tm.getTargetFeatureString());
  std::string features = llvm::toHex(h.final(), /*LowerCase=*/true).substr(0, 8);
  return fmt::format("{} {} (features {})", tm.getTargetTriple().str(), tm.getTargetCPU().str(),
                     features);
}

Jit::Added Jit::add(const std::vector<tir::PrimFunc> &funcs, const NativeCode *prebuilt,
                    const CodeCache *cache) {
  NPUC_ASSERT(!funcs.empty(), "a JIT module has at least one function");
  auto ctx = std::make_unique<llvm::LLVMContext>();
  std::unique_ptr<llvm::Module> m = buildHostModule(*ctx, funcs, *impl_->tm);
  Added a;
  a.key = moduleKey(*m);
  a.symbol = funcs.front().name;
  m->setModuleIdentifier(a.key);
  if (prebuilt) {
    if (prebuilt->key != a.key)
      a.whyNot = prebuilt->host != host()
                     ? fmt::format("it was compiled for {}; this CPU is {}", prebuilt->host, host())
                     : "it was compiled from other kernels (another npuc or LLVM version)";
    else if (!parsesAsObject(prebuilt->object))
      a.whyNot = "the stored object does not parse";
    else
      a.reused = true;
  }
  if (a.reused) {
    impl_->objects.objects[a.key] = prebuilt->object; // the code generator takes it as compiled
  } else if (std::optional<std::string> cached = cache ? cache->load(a.key) : std::nullopt;
             cached && parsesAsObject(*cached)) {
    a.fromCache = true;
    impl_->objects.objects[a.key] = std::move(*cached);
  } else {
    optimizeModule(*m, *impl_->tm);
  }
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
  return a;
}

NativeCode Jit::nativeCode(const Added &module) {
  lookup(module.symbol); // compiles the module if nothing has yet
  auto it = impl_->objects.objects.find(module.key);
  NPUC_ASSERT(it != impl_->objects.objects.end(),
              "the JIT's code generator reported the object of module " + module.key);
  return {module.key, host(), it->second};
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
