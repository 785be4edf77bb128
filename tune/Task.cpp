// Task.cpp - a compiled model's NPU groups as tuning tasks (see Task.h).
#include "tune/Task.h"

#include "support/Error.h"

#include <map>

namespace npuc::tune {

npu::Hw deriveHw(const isa::Target &t) {
  npu::Hw hw;
  if (std::string why = npu::Hw::derive(t, hw); !why.empty())
    fail("target '{}': {}", t.name, why);
  return hw;
}

npu::SpaceContext measuringContext(const npu::Hw &hw) {
  npu::SpaceContext c;
  c.hw = &hw;
  c.window = npu::Window{}; // the whole of every level: no neighbour holds any of it
  c.fromTop = false;        // a segment's first group places its buffers from the bottom
  c.levelOf = nullptr;      // every tensor in DRAM
  return c;
}

std::vector<npu::Strategy> sketchesFor(const npu::GroupPlan &p, const npu::Hw &hw) {
  std::vector<npu::Strategy> s = npu::strategiesFor(p, hw);
  // The loop-nest kernel runs any group a hand-written kernel runs, in fp16 only (KernelSelect's
  // forcedPoint allows the same).
  if (p.kind != npu::KernelKind::LoopNest && p.kind != npu::KernelKind::View && !hw.quantised())
    s.push_back(npu::Strategy::LoopNest);
  return s;
}

npu::GroupPlan planFor(npu::Strategy sketch, const npu::GroupPlan &p,
                       const graph::FusedGroup &grp) {
  if (sketch == npu::Strategy::LoopNest && p.kind != npu::KernelKind::LoopNest)
    return npu::loopNestPlan(grp, grp.name + ": the tuner's loop-nest sketch");
  return p;
}

namespace {

// Why a group has nothing to search ("" when it has): one sketch whose space has at most one
// value per decision.
std::string nothingToSearch(const driver::CompiledModel &m, const graph::FusedGroup &grp,
                            const npu::Hw &hw, const std::vector<npu::Strategy> &sketches) {
  if (sketches.size() > 1)
    return "";
  const npu::GroupPlan p = npu::planGroup(m.graph, grp, hw);
  const npu::GroupPlan sp = planFor(sketches[0], p, grp);
  std::unique_ptr<npu::KernelSpace> s =
      npu::makeSpace(sketches[0], sp, m.graph, measuringContext(hw));
  if (s)
    for (const npu::Decision &d : s->decisions())
      if (d.values.size() > 1)
        return "";
  return fmt::format("{}: one point, nothing to decide", npu::strategyName(sketches[0]));
}

} // namespace

TaskSet extractTasks(const driver::CompiledModel &m) {
  const npu::Hw hw = deriveHw(m.target);
  TaskSet out;
  std::map<npu::ScheduleKey, size_t> taskOf, untunableOf;
  for (const graph::FusedGroup &grp : m.graph.groups) {
    if (grp.placement != graph::Placement::Npu)
      continue;
    const npu::ScheduleKey key = npu::scheduleKey(m.graph, grp, m.target);
    if (auto it = taskOf.find(key); it != taskOf.end()) {
      out.tasks[it->second].groups.push_back(grp.id);
      continue;
    }
    if (auto it = untunableOf.find(key); it != untunableOf.end()) {
      ++out.untunable[it->second].weight;
      continue;
    }
    const npu::GroupPlan p = npu::planGroup(m.graph, grp, hw);
    NPUC_ASSERT(p.reject.empty(), "a group placed on the NPU has a plan");
    std::vector<npu::Strategy> sketches = sketchesFor(p, hw);
    if (std::string why = nothingToSearch(m, grp, hw, sketches); !why.empty()) {
      untunableOf[key] = out.untunable.size();
      out.untunable.push_back({key, grp.name, 1, why});
      continue;
    }
    taskOf[key] = out.tasks.size();
    out.tasks.push_back({key, grp.name, grp.id, {grp.id}, std::move(sketches)});
  }
  return out;
}

} // namespace npuc::tune
