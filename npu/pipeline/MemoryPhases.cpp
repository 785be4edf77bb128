// MemoryPhases.cpp - where the segment's tensors live: lifetimes and aliases (liveness), runs
// executed sub-batch by sub-batch (batch-split), tensors kept in L1 between groups (residency),
// and the DRAM addresses of the rest (dram).
//
// The segment's DRAM image is [activations | constants]: every tensor the segment reads from
// the host or produces gets its own region, reused once it is dead (views alias their input),
// except the intermediates kept resident in L1 (npu/pipeline/Resident.h), which live only there;
// the kernels append their packed weights and constant vectors when they are lowered.
#include "npu/pipeline/DepthFirst.h"
#include "npu/pipeline/SegmentPlan.h"

#include "npu/memory/MemoryPlanner.h"
#include "support/Error.h"

#include <algorithm>
#include <thread>

namespace npuc::npu {

namespace {

constexpr int64_t kDramAlign = 64;

// The DRAM form of a segment input or output: its layout, and on int8 targets its scale (a
// view's output aliases its input's bytes, so it takes its root's scale).
DramTensor dramTensor(const SegmentPlan &p, graph::ValueId v) {
  const graph::Value &x = p.g->value(v);
  auto chosen = p.chosen.layout.find(v);
  DramTensor d{v,
               x.name,
               0,
               x.shape,
               chosen != p.chosen.layout.end() ? chosen->second : dramLayoutOf(x),
               p.hw.act,
               1.0f};
  if (p.hw.quantised())
    d.scale = p.opt.quant->of(p.rootOf(v));
  return d;
}

} // namespace

int64_t SegmentPlan::bytesOf(graph::ValueId v) const {
  return numElements(g->value(v).shape) * hw.actBytes();
}

PhaseResult phaseLiveness(SegmentPlan &p) {
  for (size_t i = 0; i < p.plans.size(); ++i)
    if (p.plans[i].kind == KernelKind::View)
      for (graph::ValueId v : p.group(i).outputs)
        p.aliasOf[v] = p.plans[i].input;
  p.live = computeLiveness(*p.g, p.groupIds, [&](graph::ValueId v) { return p.rootOf(v); });
  for (graph::ValueId v : p.live.inputs)
    p.seg.inputs.push_back(dramTensor(p, v));
  const int64_t steps = static_cast<int64_t>(p.groupIds.size());
  for (graph::ValueId v : p.live.escaping) {
    p.live.life.at(p.rootOf(v)) = {0, steps}; // the host reads it after the run
    p.seg.outputs.push_back(dramTensor(p, v));
  }
  for (const std::vector<DramTensor> *xs : {&p.seg.inputs, &p.seg.outputs})
    for (const DramTensor &x : *xs)
      p.hostRoots.insert(p.rootOf(x.value));
  return {};
}

namespace {

// A split run executes its steps once per part, so a DRAM tensor it touches must stay live over
// the whole run (a later step's tensor may not take its space: the next part's earlier steps
// still come).
void extendOverRuns(SegmentPlan &p) {
  for (auto &[root, span] : p.live.life)
    for (const SplitRun &run : p.split.runs)
      if (span.first < int64_t(run.end) && int64_t(run.first) < span.second) {
        span.first = std::min(span.first, int64_t(run.first));
        span.second = std::max(span.second, int64_t(run.end));
      }
}

} // namespace

PhaseResult phaseBatchSplit(SegmentPlan &p) {
  // It needs residency: without it a split only reloads weights.
  if (!p.opt.batchSplit || !p.opt.residency)
    return {};
  BatchSplitInput bi{p.g,
                     p.groupIds,
                     p.plans,
                     [&p](graph::ValueId v) { return p.rootOf(v); },
                     p.hostRoots,
                     segmentKernelOptions(p.opt),
                     p.opt.crossGroupPrefetch,
                     p.opt.batchSplitEvenIfSlower,
                     {}};
  for (const auto &[v, layout] : p.chosen.layout)
    bi.chosenLayout.insert(v);
  bi.jobs = p.opt.jobs > 0 ? p.opt.jobs : int(std::max(1u, std::thread::hardware_concurrency()));
  p.split = planBatchSplit(bi, p.hw);
  for (SplitRun &run : p.split.runs)
    p.seg.batchSplit.push_back(run.entry);
  p.seg.batchSplitNotes = p.split.notes;
  extendOverRuns(p);
  return {};
}

PhaseResult phaseDepthFirst(SegmentPlan &p) {
  if (p.opt.depthFirst && p.opt.residency) {
    DepthFirstInput di;
    di.g = p.g;
    di.groupIds = p.groupIds;
    di.plans = p.plans;
    di.rootOf = [&p](graph::ValueId v) { return p.rootOf(v); };
    di.pinned = p.hostRoots;
    di.ko = segmentKernelOptions(p.opt);
    di.crossGroupPrefetch = p.opt.crossGroupPrefetch;
    di.forceRows = p.opt.depthFirstRows;
    for (const auto &[v, layout] : p.chosen.layout)
      di.chosenLayout.insert(v);
    for (size_t i = 0; i < p.groupIds.size(); ++i)
      if (p.split.covers(i))
        di.taken.insert(i);
    di.jobs = p.opt.jobs > 0 ? p.opt.jobs : int(std::max(1u, std::thread::hardware_concurrency()));
    SplitPlan dp = planDepthFirst(di, p.hw);
    for (SplitRun &run : dp.runs) {
      p.seg.depthFirst.push_back(run.rows);
      p.split.runs.push_back(std::move(run));
    }
    p.split.residentRoots.insert(dp.residentRoots.begin(), dp.residentRoots.end());
    p.seg.depthFirstNotes = std::move(dp.notes);
    std::sort(p.split.runs.begin(), p.split.runs.end(),
              [](const SplitRun &a, const SplitRun &b) { return a.first < b.first; });
  }
  for (SplitRun &run : p.split.runs) {
    std::vector<std::vector<GroupPlan>> plans;
    for (const SplitVariant &v : run.variants) {
      plans.push_back(v.plans);
      p.seg.residency.insert(p.seg.residency.end(), v.rp.entries.begin(), v.rp.entries.end());
    }
    p.runPlans.push_back(std::move(plans));
  }
  extendOverRuns(p);
  return {};
}

PhaseResult phaseResidency(SegmentPlan &p) {
  p.rp = ResidencyPlan{};
  p.rp.window.resize(p.groupIds.size());
  if (!p.opt.residency)
    return {};
  ResidencyInput ri;
  ri.g = p.g;
  ri.groupIds = p.groupIds;
  ri.plans = p.plans;
  ri.rootOf = [&p](graph::ValueId v) { return p.rootOf(v); };
  ri.life = p.live.life;
  ri.pinned = p.hostRoots;
  // A split run's tensors are its own (planned at sub-batch size); nothing of the whole batch
  // stays in L1 across one, so that each run has the whole of L1.
  for (const auto &[root, span] : p.live.life)
    for (int64_t i = span.first; i < span.second; ++i)
      if (p.split.covers(size_t(i)))
        ri.splitPinned.insert(root);
  ri.ko = segmentKernelOptions(p.opt);
  ri.crossGroupPrefetch = p.opt.crossGroupPrefetch;
  p.rp = planResidency(ri, p.hw);
  p.seg.residency.insert(p.seg.residency.begin(), p.rp.entries.begin(), p.rp.entries.end());
  return {};
}

PhaseResult phaseDram(SegmentPlan &p) {
  std::vector<BufferReq> reqs;
  for (const auto &[v, span] : p.live.life) {
    if (p.rp.l1Addr.count(v) || p.split.residentRoots.count(v))
      continue;
    p.dramRoots.push_back(v);
    reqs.push_back({span.first, span.second, p.bytesOf(v), kDramAlign});
    p.seg.activationBytesNoReuse += alignUp(reqs.back().size, kDramAlign);
  }
  const isa::MemoryLevel &dram = p.t->levels.at(static_cast<size_t>(p.hw.dram));
  MemoryPlan mp = planMemory(reqs, dram.size);
  if (!mp.solved)
    return Reject{-1, RejectPhase::Dram, RejectKind::Capacity,
                  fmt::format("target '{}': the segment's activations need {} bytes of DRAM at "
                              "their peak, the target has {}",
                              p.t->name, mp.peak, dram.size)};
  for (size_t i = 0; i < p.dramRoots.size(); ++i)
    p.addr[p.dramRoots[i]] = mp.offsets[i];
  for (const auto &[root, at] : p.rp.l1Addr)
    p.addr[root] = at;
  for (const auto &alias : p.aliasOf)
    if (!p.split.residentRoots.count(p.rootOf(alias.first))) // a split run addresses those
      p.addr[alias.first] = p.addr.at(p.rootOf(alias.first));
  for (DramTensor &x : p.seg.inputs)
    x.addr = p.addr.at(x.value);
  for (DramTensor &x : p.seg.outputs)
    x.addr = p.addr.at(x.value);
  p.seg.activationBytes = mp.peak;
  p.seg.constBase = alignUp(mp.peak, kDramAlign);
  return {};
}

} // namespace npuc::npu
