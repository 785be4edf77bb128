// Aot.cpp - object/shared-library emission and the deployment plan (format in Aot.h).
#include "cpu_fallback/Aot.h"

#include "cpu_fallback/Lower.h"
#include "cpu_fallback/Optimize.h"
#include "graph/Reference.h"
#include "support/Error.h"
#include "support/Tensor.h"

#include <llvm/IR/LegacyPassManager.h>
#include <llvm/Support/raw_ostream.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

namespace npuc::cpu {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kParamAlign = 16; // elements: 64 bytes, a cache line and an AVX-512 vector

std::string emitObject(const std::vector<tir::PrimFunc> &funcs, bool pic) {
  std::unique_ptr<llvm::TargetMachine> tm = hostTargetMachine(pic);
  llvm::LLVMContext ctx;
  std::unique_ptr<llvm::Module> m = buildOptimizedModule(ctx, funcs, *tm);
  llvm::SmallVector<char, 0> buf;
  llvm::raw_svector_ostream os(buf);
  llvm::legacy::PassManager pm;
  NPUC_ASSERT(!tm->addPassesToEmitFile(pm, os, nullptr, llvm::CGFT_ObjectFile),
              "the host target machine emits object files");
  pm.run(*m);
  return std::string(buf.begin(), buf.end());
}

std::string readAll(const fs::path &p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Links an object into a shared library with the system compiler driver, in a private
/// temporary directory that is removed afterwards.
std::string linkShared(const std::string &object) {
  std::random_device rd;
  fs::path dir = fs::temp_directory_path() / ("npuc-aot-" + std::to_string(rd()));
  fs::create_directories(dir);
  struct Cleanup {
    fs::path d;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(d, ec);
    }
  } cleanup{dir};
  {
    std::ofstream o(dir / "model.o", std::ios::binary);
    o.write(object.data(), std::streamsize(object.size()));
    if (!o)
      fail("{}: cannot write the temporary object file", (dir / "model.o").string());
  }
  const char *cc = std::getenv("CC");
  std::string cmd = fmt::format("{} -shared -o '{}' '{}' -lm 2> '{}'", cc && *cc ? cc : "cc",
                                (dir / "model.so").string(), (dir / "model.o").string(),
                                (dir / "link.log").string());
  if (std::system(cmd.c_str()) != 0)
    fail("linking the shared library failed ({}): {}", cmd, readAll(dir / "link.log"));
  return readAll(dir / "model.so");
}

} // namespace

AotArtifacts buildAot(const graph::Graph &g, bool sharedLibrary, int threads) {
  std::vector<tir::PrimFunc> funcs;
  std::ostringstream calls;
  std::map<graph::ValueId, std::string> kinds; // every value the plan touches
  // Weights the kernels take pre-packed: one extra constant each, numbered after the graph's
  // values (the runtime treats plan value ids as opaque).
  struct Packed {
    std::vector<float> data;
    std::string name;
  };
  std::map<graph::ValueId, Packed> packedValues;
  graph::ValueId nextId = graph::ValueId(g.values.size());
  for (graph::ValueId v : g.inputs)
    kinds[v] = "input";
  for (const graph::FusedGroup &grp : g.groups) {
    if (grp.placement != graph::Placement::Cpu)
      fail("group '{}' is placed on the NPU: ahead-of-time deployment needs a model compiled "
           "with --target cpu",
           grp.name);
    CpuKernel k = lowerGroupForCpu(g, grp, /*prepack=*/true);
    for (const PackedParam &p : k.packed) {
      const graph::Value &val = g.value(k.params[p.param]);
      Packed pv{p.pack(graph::constantTensor(val).data), val.name + ".packed"};
      NPUC_ASSERT(int64_t(pv.data.size()) == p.elements, "packing yields the declared size");
      k.params[p.param] = nextId;
      packedValues[nextId++] = std::move(pv);
    }
    calls << "call " << k.func.name << " " << k.params.size();
    for (graph::ValueId v : k.params) {
      if (packedValues.count(v)) {
        calls << " " << v;
        continue;
      }
      calls << " " << v;
      if (!kinds.count(v))
        kinds[v] = g.value(v).isConstant() ? "const" : "temp";
    }
    calls << "\n";
    funcs.push_back(std::move(k.func));
  }
  for (graph::ValueId v : g.outputs)
    if (!kinds.count(v))
      kinds[v] = g.value(v).isConstant() ? "const" : "temp";

  AotArtifacts a;
  std::ostringstream plan;
  plan << "npuc-aot 1\nthreads " << threads << "\n";
  auto appendParam = [&](const std::vector<float> &data) {
    int64_t offset = int64_t(a.params.size() / sizeof(float));
    a.params.append(reinterpret_cast<const char *>(data.data()), data.size() * sizeof(float));
    a.params.resize((a.params.size() + kParamAlign * 4 - 1) / (kParamAlign * 4) *
                    (kParamAlign * 4));
    return offset;
  };
  for (const auto &[v, p] : packedValues)
    plan << "value " << v << " const " << p.data.size() << " " << appendParam(p.data) << " "
         << p.name << "\n";
  for (const auto &[v, kind] : kinds) {
    const graph::Value &val = g.value(v);
    int64_t offset = -1;
    if (kind == "const")
      offset = appendParam(graph::constantTensor(val).data);
    plan << "value " << v << " " << kind << " " << numElements(val.shape) << " " << offset << " "
         << val.name << "\n";
  }
  auto io = [&](const char *what, graph::ValueId v, const std::string &name) {
    const graph::Value &val = g.value(v);
    plan << what << " " << v << " " << val.shape.size();
    for (int64_t d : val.shape)
      plan << " " << d;
    plan << " " << name << "\n";
  };
  for (graph::ValueId v : g.inputs)
    io("input", v, g.value(v).name);
  for (size_t i = 0; i < g.outputs.size(); ++i)
    io("output", g.outputs[i], g.outputName(i)); // the declared name, whatever value computes it
  plan << calls.str();
  a.graph = plan.str();
  std::string object = funcs.empty() ? std::string() : emitObject(funcs, sharedLibrary);
  if (funcs.empty())
    fail("model '{}' has no operators to compile", g.name);
  a.library = sharedLibrary ? linkShared(object) : object;
  return a;
}

} // namespace npuc::cpu
