// PassManager.h - the table of TIR passes and the manager that runs a pipeline of them.
//
// Every pass is a function PrimFunc -> PrimFunc in its own file under tir/transform/; passTable()
// (PassTable.cpp) is the ONE list of them, with name, summary and options - no registration by
// static initializers, so what exists is visible in one place. A pipeline is written
// `a,b{opt=v,opt2=w},c`; unknown passes and options are errors naming them. The manager
// verifies the function after every pass (a malformed result is a compiler bug), can print the
// IR after each pass, times each pass, and can stop after a named pass.
#pragma once

#include "tir/IR.h"

#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace npuc::tir {

using PassOptions = std::map<std::string, std::string>;
using PassFn = PrimFunc (*)(const PrimFunc &, const PassOptions &);

struct PassOption {
  const char *name, *defaultValue, *help;
};

struct PassInfo {
  const char *name, *summary;
  std::vector<PassOption> options;
  PassFn run;
};

const std::vector<PassInfo> &passTable();
/// The loop normalisation in front of PreProcess and instruction emission (a pipeline spec).
/// Conditions are decided by the interval/modular rules only (z3=0): Z3's answers depend on a
/// time limit, and `npuc inspect --loops`, the coverage report and their tests must not change
/// with the machine's load (on the coverage corpus the rules decide everything Z3 does).
extern const char *const kNormalisationPipeline;
/// Null when no pass has this name.
const PassInfo *findPass(const std::string &name);
/// An option's value from `opts`, or its default from the pass's table entry.
std::string passOption(const PassInfo &p, const PassOptions &opts, const std::string &name);
int64_t passOptionInt(const PassInfo &p, const PassOptions &opts, const std::string &name);

struct PipelineEntry {
  const PassInfo *pass = nullptr;
  PassOptions options;
};
/// Parses `a,b{opt=v},c`; errors (npuc::Error) name the unknown pass or option.
std::vector<PipelineEntry> parsePipeline(const std::string &spec);

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
  PassManager(std::vector<PipelineEntry> pipeline, PassManagerOptions o = {});
  /// Runs the pipeline; IR dumps for --print-after-all go to `log` (when not null).
  PrimFunc run(const PrimFunc &f, std::ostream *log = nullptr);
  /// Accumulated over every run() of this manager, in pipeline order.
  const std::vector<PassTiming> &timings() const { return timings_; }

private:
  std::vector<PipelineEntry> pipeline_;
  PassManagerOptions opts_;
  std::vector<PassTiming> timings_;
};

} // namespace npuc::tir
