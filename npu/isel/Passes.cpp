// Passes.cpp - `pre-process` and `emit-npu` as registry entries (Passes.h).
#include "npu/isel/Passes.h"

#include "npu/isel/EmitNpu.h"
#include "npu/isel/PreProcess.h"
#include "support/Error.h"

namespace npuc::tir {
namespace {

const isa::Target &targetOption(const char *pass, const PassOptions &o, PassContext &ctx) {
  std::string path = passOption(pass, o, "target");
  if (path.empty())
    npuc::fail("pass '{}': needs target=PATH (a target description, e.g. configs/npu-base.yaml)",
               pass);
  return ctx.state<LoadedTargets>().load(path);
}

} // namespace

const isa::Target &LoadedTargets::load(const std::string &path) {
  auto it = targets_.find(path);
  if (it == targets_.end())
    it = targets_.emplace(path, isa::loadTarget(path)).first;
  return it->second;
}

void registerIselPasses(PassRegistry &r) {
  r.add({"pre-process",
         "splits stored expressions into one unit operation per store, rewriting operations the "
         "target lacks into ones it has",
         {{"target", "", "target description (YAML) whose instructions decide what is direct"}},
         [](const PrimFunc &f, const PassOptions &o, PassContext &ctx) {
           return preProcess(f, targetOption("pre-process", o, ctx));
         }});
  r.add({"emit-npu",
         "replaces the innermost loops of each nest with the cheapest legal NPU instruction",
         {{"target", "", "target description (YAML) giving instruction forms, limits and timing"}},
         [](const PrimFunc &f, const PassOptions &o, PassContext &ctx) {
           return emitNpu(f, targetOption("emit-npu", o, ctx));
         }});
}

} // namespace npuc::tir
