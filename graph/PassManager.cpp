// PassManager.cpp - pipeline parsing, option lookup and the pass-running loop of graph passes.
#include "graph/PassManager.h"

#include "graph/Text.h"
#include "graph/Verify.h"
#include "support/Error.h"
#include "support/PipelineSpec.h"

#include <cstdlib>

namespace npuc::graph {

const PassInfo *findPass(const std::string &name) {
  for (const PassInfo &p : passTable())
    if (name == p.name)
      return &p;
  return nullptr;
}

int64_t passOptionInt(const PassInfo &p, const PassOptions &opts, const std::string &name) {
  std::string v;
  auto it = opts.find(name);
  if (it != opts.end()) {
    v = it->second;
  } else {
    bool found = false;
    for (const PassOption &o : p.options)
      if (name == o.name)
        v = o.defaultValue, found = true;
    NPUC_ASSERT(found, std::string("pass ") + p.name + " has no option " + name);
  }
  char *end = nullptr;
  long long n = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0')
    npuc::fail("pass '{}': option '{}' must be an integer, not '{}'", p.name, name, v);
  return n;
}

std::vector<PipelineEntry> parsePipeline(const std::string &spec) {
  std::vector<PipelineEntry> out;
  for (PassSpec &s : splitPipelineSpec(spec)) {
    const PassInfo *p = findPass(s.name);
    if (!p) {
      std::string known;
      for (const PassInfo &q : passTable())
        known += (known.empty() ? "" : ", ") + std::string(q.name);
      npuc::fail("pipeline '{}': unknown pass '{}' (known: {})", spec, s.name, known);
    }
    for (const std::string &key : s.optionOrder) {
      bool known = false;
      for (const PassOption &o : p->options)
        known = known || key == o.name;
      if (!known)
        npuc::fail("pipeline '{}': pass '{}' has no option '{}'", spec, s.name, key);
    }
    out.push_back({p, std::move(s.options)});
  }
  return out;
}

void runPipeline(Graph &g, const std::vector<PipelineEntry> &pipeline, PassContext &ctx,
                 const PassManagerOptions &o, std::ostream *log) {
  if (!o.stopAfter.empty()) {
    bool found = false;
    for (const PipelineEntry &e : pipeline)
      found = found || o.stopAfter == e.pass->name;
    if (!found)
      npuc::fail("--stop-after={}: no such pass in the pipeline", o.stopAfter);
  }
  for (const PipelineEntry &e : pipeline) {
    e.pass->run(g, e.options, ctx);
    std::vector<std::string> problems = verifyGraph(g);
    if (!problems.empty())
      npuc::fail("after pass '{}': {}{}", e.pass->name, problems.front(),
                 problems.size() > 1 ? fmt::format(" (and {} more problems)", problems.size() - 1)
                                     : "");
    if (o.printAfterAll && log)
      *log << "// *** graph after " << e.pass->name << " ***\n" << printGraphText(g, o.text);
    if (o.stopAfter == e.pass->name)
      break;
  }
}

} // namespace npuc::graph
