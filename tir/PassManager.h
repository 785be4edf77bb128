// PassManager.h - the registry of TIR passes, the context they run in, and the manager that runs
// a pipeline of them.
//
// Every pass is a function PrimFunc -> PrimFunc in its own file. The passes a pipeline may name
// are composed in a PassRegistry by whoever owns them, each owner adding its list in one place
// (no registration by static initializers, so what exists is visible): the core's loop passes
// (tir/transform/, registered by registerCorePasses in PassTable.cpp) and instruction selection's
// `pre-process` and `emit-npu` (npu/isel/IselPasses.h). A pipeline is written
// `a,b{opt=v,opt2=w},c`; unknown passes and options are errors naming them. What passes keep
// between functions and runs (the prover's answers, loaded targets) lives in a PassContext that
// the caller owns, not in statics. The manager verifies the function after every pass (a
// malformed result is a compiler bug), can print the IR after each pass, times each pass, and
// can stop after a named pass.
#pragma once

#include "tir/IR.h"
#include "tir/Prover.h"

#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <typeindex>
#include <vector>

namespace npuc::tir {

/// What passes keep across the functions and runs of one caller (`npuc opt`, a kernel's
/// lowering), owned by that caller so that nothing outlives it in a static: the prover's Z3
/// answers (ProverCache), and the state of passes registered outside the core, one object per
/// type, created on first use (npu/isel keeps its loaded targets there). Not thread-safe except
/// for the prover cache: one context per thread of pass runs.
class PassContext {
public:
  ProverCache &proverCache() { return prover_; }

  /// The context's T, default-constructed on first use.
  template <class T> T &state() {
    std::shared_ptr<void> &slot = states_[std::type_index(typeid(T))];
    if (!slot)
      slot = std::make_shared<T>();
    return *static_cast<T *>(slot.get());
  }

private:
  ProverCache prover_;
  std::map<std::type_index, std::shared_ptr<void>> states_;
};

using PassOptions = std::map<std::string, std::string>;
using PassFn = PrimFunc (*)(const PrimFunc &, const PassOptions &, PassContext &);

struct PassOption {
  const char *name, *defaultValue, *help;
};

struct PassInfo {
  const char *name, *summary;
  std::vector<PassOption> options;
  PassFn run;
};

/// The passes a pipeline can name, in the order they were added (`npuc opt --list-passes`).
class PassRegistry {
public:
  /// A second pass of the same name is a compiler bug (NPUC_ASSERT).
  void add(PassInfo p);
  /// Null when no pass has this name.
  const PassInfo *find(const std::string &name) const;
  const std::vector<PassInfo> &passes() const { return passes_; }

private:
  std::vector<PassInfo> passes_;
};

/// Adds the target-independent passes (tir/transform/, PassTable.cpp).
void registerCorePasses(PassRegistry &r);

/// The loop normalisation in front of PreProcess and instruction emission (a pipeline spec).
/// Conditions are decided by the interval/modular rules only (z3=0): Z3's answers depend on a
/// time limit, and `npuc inspect --loops`, the coverage report and their tests must not change
/// with the machine's load (on the coverage corpus the rules decide everything Z3 does).
extern const char *const kNormalisationPipeline;
/// An option's value as the pass receives it: parsePipeline fills in the default of every option
/// the pipeline does not set, so each declared option is present (`pass` names it in messages).
std::string passOption(const char *pass, const PassOptions &opts, const std::string &name);
int64_t passOptionInt(const char *pass, const PassOptions &opts, const std::string &name);

/// One pass of a pipeline: a copy of its registry entry (so the pipeline does not borrow the
/// registry) and its options, every declared one present.
struct PipelineEntry {
  PassInfo pass;
  PassOptions options;
};
/// Parses `a,b{opt=v},c` against the registry; errors (npuc::Error) name the unknown pass or
/// option.
std::vector<PipelineEntry> parsePipeline(const PassRegistry &r, const std::string &spec);

struct PassManagerOptions {
  bool printAfterAll = false;
  std::string stopAfter; // empty: run the whole pipeline
};

struct PassTiming {
  std::string pass;
  double ms = 0;
};

class PassManager {
public:
  /// `ctx` is the caller's and must outlive the manager.
  PassManager(std::vector<PipelineEntry> pipeline, PassContext &ctx, PassManagerOptions o = {});
  /// Runs the pipeline; IR dumps for --print-after-all go to `log` (when not null).
  PrimFunc run(const PrimFunc &f, std::ostream *log = nullptr);
  /// Accumulated over every run() of this manager, in pipeline order.
  const std::vector<PassTiming> &timings() const { return timings_; }

private:
  std::vector<PipelineEntry> pipeline_;
  PassContext &ctx_;
  PassManagerOptions opts_;
  std::vector<PassTiming> timings_;
};

} // namespace npuc::tir
