// Pipeline.cpp - the phase table and the loop that runs it (Pipeline.h).
#include "npu/pipeline/Pipeline.h"

#include "graph/Extract.h"
#include "support/Error.h"

#include <chrono>

namespace npuc::npu {

namespace {

struct PhaseEntry {
  Phase phase;
  PhaseResult (*run)(SegmentPlan &);
};
constexpr PhaseEntry kPhases[] = {
#define NPUC_PHASE(E, name, fn, what) {Phase::E, fn},
#include "npu/pipeline/Phases.def"
};

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Compiler bugs: a phase left the plan inconsistent.
void verifyAfter(const SegmentPlan &p, Phase phase, PhaseControl *c) {
  const auto start = std::chrono::steady_clock::now();
  const std::vector<std::string> problems = verifyPlan(p);
  if (c)
    c->verifySeconds += secondsSince(start);
  std::string text;
  for (const std::string &s : problems)
    text += "\n  " + s;
  NPUC_ASSERT(problems.empty(),
              fmt::format("the segment plan breaks its invariants after phase '{}':{}",
                          phaseName(phase), text));
}

} // namespace

void initSegmentPlan(SegmentPlan &p, const graph::Graph &g, const std::vector<int> &groupIds,
                     const isa::Target &t, const CompileOptions &opt) {
  p.g = &g;
  p.groupIds = groupIds;
  p.t = &t;
  p.opt = opt;
  if (std::string why = Hw::derive(t, p.hw); !why.empty())
    fail("target '{}': {}", t.name, why);
  if (p.hw.quantised() && !opt.quant)
    fail("target '{}': int8 operands need activation scales (a calibration run); compile the "
         "model with npuc compile, which calibrates",
         t.name);
  p.seg.groups = groupIds;
  p.index = opt.phases ? opt.phases->segments++ : 0;
}

CrashScope unitCrashScope(const SegmentPlan &p, const EmitUnit &u, const char *action) {
  return CrashScope(
      [&p, &u, action] {
        std::string batch = u.part >= 0 ? fmt::format(", part {} of run {}", u.part, u.run) : "";
        return fmt::format("{} group {} '{}' (NPU segment {}{})", action, u.grp->id, u.grp->name,
                           p.index, batch);
      },
      graph::reproduceGroups(*u.g, {u.grp->id}));
}

void debugCrashPoint(const SegmentPlan &p, Phase phase) {
  NPUC_ASSERT(p.opt.debugCrashAt != phase,
              fmt::format("crash requested by --debug-crash-at={}", phaseName(phase)));
}

std::optional<Reject> runPhases(SegmentPlan &p, Phase last) {
  PhaseControl *c = p.opt.phases.get();
  for (const PhaseEntry &e : kPhases) {
    if (p.reached(e.phase))
      continue;
    if (e.phase > last)
      break;
    CrashScope scope([&p, &e] {
      return fmt::format("running phase '{}' of NPU segment {}", phaseName(e.phase), p.index);
    });
    if (e.phase != Phase::Lower) // lower asks while its first group is lowered
      debugCrashPoint(p, e.phase);
    const auto start = std::chrono::steady_clock::now();
    PhaseResult r;
    try {
      r = e.run(p);
    } catch (const std::exception &ex) {
      reportIfInternal(ex); // while the scopes still say where
      throw;
    }
    if (c && c->time)
      c->seconds[static_cast<size_t>(e.phase)] += secondsSince(start);
    if (r)
      return r;
    p.done = e.phase;
    if (p.opt.verifyPhases)
      verifyAfter(p, e.phase, c);
    if (c && c->printAfter.count(e.phase) && c->out)
      printPlan(p, *c->out);
    if (c && c->stopAfter == e.phase) {
      c->stopped = true;
      break;
    }
  }
  return std::nullopt;
}

} // namespace npuc::npu
