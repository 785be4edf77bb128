// Passes.h - instruction selection's passes in a TIR pass registry: `pre-process` and `emit-npu`,
// each reading the target its `target=PATH` option names.
//
// The targets are loaded through the PassContext the pipeline runs under (LoadedTargets, one per
// context, each path loaded once), so that a caller running many functions, like `npuc opt` over
// a file of them, parses a target description once, and nothing outlives the caller.
#pragma once

#include "isa/Target.h"
#include "tir/PassManager.h"

#include <map>
#include <string>

namespace npuc::tir {

/// The target descriptions a PassContext has loaded, by path as the option names it.
class LoadedTargets {
public:
  /// The target at `path`, loaded on first use (errors name the file, as isa::loadTarget's do).
  const isa::Target &load(const std::string &path);
  size_t size() const { return targets_.size(); }

private:
  std::map<std::string, isa::Target> targets_;
};

/// Adds `pre-process` and `emit-npu` (after the core's passes in `npuc opt --list-passes`).
void registerIselPasses(PassRegistry &r);

} // namespace npuc::tir
