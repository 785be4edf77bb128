// PassManager.h - the table of graph passes and the manager that runs a pipeline of them
// (`npuc graph-opt`), the graph-level counterpart of tir/PassManager.h.
//
// passTable() (PassTable.cpp) is the ONE list of graph passes, with name, summary and options.
// A pipeline is written `a,b{opt=v},c` (support/PipelineSpec.h); unknown passes and options are
// errors naming them. The manager verifies the graph after every pass (Verify.h), can print it
// after each pass and stop after a named one. What a pass needs from a target (fusion's filter,
// placement's reject reasons and costs) comes in through the context, filled by the caller,
// since graph/ sees no target.
#pragma once

#include "graph/Passes.h"
#include "graph/Text.h"

#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace npuc::graph {

using RejectFn = std::function<std::string(const Graph &, const FusedGroup &)>;

struct PassContext {
  FusionFilter fusionFilter;          // fuse: empty accepts every merge the classes allow
  RejectFn reject;                    // place: why the NPU cannot run a group; unset: no target
  const DeviceCosts *costs = nullptr; // place: the cost model's figures, when given
  std::ostream *report = nullptr;     // analyses (residency) write their findings here
};

using PassOptions = std::map<std::string, std::string>;

struct PassOption {
  const char *name, *defaultValue, *help;
};

struct PassInfo {
  const char *name, *summary;
  std::vector<PassOption> options;
  void (*run)(Graph &, const PassOptions &, PassContext &);
};

const std::vector<PassInfo> &passTable();
/// Null when no pass has this name.
const PassInfo *findPass(const std::string &name);
/// An option's value as an integer (its default from the table when not given).
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
  TextOptions text;      // how printAfterAll prints
};

/// Runs `pipeline` on g in order. After each pass the graph is verified; a problem is an
/// npuc::Error naming the pass (a pipeline that rewrites nodes after `fuse` leaves groups naming
/// removed nodes). With printAfterAll, the graph text after each pass goes to `log`.
void runPipeline(Graph &g, const std::vector<PipelineEntry> &pipeline, PassContext &ctx,
                 const PassManagerOptions &o = {}, std::ostream *log = nullptr);

} // namespace npuc::graph
