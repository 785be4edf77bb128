// SegmentPlan.h - the data the segment pipeline builds up, phase by phase, for one segment.
//
// compileSegment (npu/pipeline/Compile.h) creates a SegmentPlan and passes it through the phases of
// Phases.def in order (Pipeline.cpp). Each member below says which phase writes it; a phase
// reads only what the phases before it wrote. The verifier (Verify.h) checks the invariants
// that tie the members together after every phase, and printPlan shows what is decided so far.
#pragma once

#include "npu/pipeline/BankAlloc.h"
#include "npu/pipeline/BatchSplit.h"
#include "npu/pipeline/Compile.h"
#include "npu/Reject.h"
#include "npu/pipeline/Resident.h"
#include "npu/pipeline/Liveness.h"
#include "npu/pipeline/Phase.h"
#include "simulator/Simulator.h"

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace npuc::npu {

/// Values stored in a layout other than dramLayoutOf's, so that a group of layout ops becomes a
/// view (ChooseLayouts.cpp).
struct ChosenLayouts {
  std::map<graph::ValueId, DramLayout> layout; // values not in dramLayoutOf's layout
  std::map<size_t, std::string> why;           // by step: who writes or reads which layout
};

/// One emission of a kernel: a step of the segment, or one part of a step of a split run (which
/// is emitted once per sub-batch or band at other DRAM addresses). The schedule phase lists
/// them in program order; lower, banks and emit fill in the rest.
struct EmitUnit {
  // schedule
  size_t step = 0;                 // the segment step (groupIds index)
  int run = -1;                    // index into SegmentPlan::split.runs, or -1 (the whole batch)
  int64_t part = -1;               // which part of the run (-1: whole tensors)
  const graph::Graph *g = nullptr; // the segment's graph, or the run's variant at part size
  const graph::FusedGroup *grp = nullptr;
  GroupPlan *plan = nullptr; // lowering may switch it to the loop-nest plan
  DramCtx dram;              // the addresses it reads and writes, and where constants go
  const Window *window = nullptr;
  bool fromTop = false; // its buffers from the top of each level (crossGroupPrefetch)
  std::function<bool(graph::ValueId)> resident; // its inputs/outputs that live in L1
  int64_t residentL1Bytes = 0;                  // resident tensors live beside its buffers
  /// The unit whose kernel this one re-emits (a split run's later parts of a variant: the same
  /// tiling and on-chip placement at other DRAM addresses), or -1: lowered here.
  int replayOf = -1;

  // lower (units with replayOf < 0), then banks
  PlacedKernel placed;      // kernel, instructions, and the placement lowered at
  KernelOptions used;       // the options the kernel was lowered with
  std::string tunedIgnored; // Selection::tunedIgnored, for Segment::warnings
  std::vector<std::pair<int64_t, size_t>> consts; // constants it placed: address, byte count
  int64_t dramNeed = 0; // DRAM bytes below its last constant (the simulator's size)
  BankReport bank;
};

/// The options every kernel of the segment lowers with: the ablations, the schedules the user
/// forced (`npuc compile --schedule`) and the tuned ones, which the residency and batch-split
/// dry runs must see too, so that they tile each group as the lowering will.
inline KernelOptions segmentKernelOptions(const CompileOptions &o) {
  KernelOptions ko;
  ko.doubleBuffer = o.doubleBuffer;
  ko.naiveTiling = o.naiveTiling;
  ko.batchWeightReuse = o.batchWeightReuse;
  ko.forced = o.schedules;
  ko.tuned = o.tuned;
  return ko;
}

struct SegmentPlan {
  SegmentPlan() = default;
  SegmentPlan(const SegmentPlan &) = delete; // units point into it
  SegmentPlan &operator=(const SegmentPlan &) = delete;

  // The request (compileSegment's arguments).
  const graph::Graph *g = nullptr;
  std::vector<int> groupIds; // step i is groupIds[i]
  const isa::Target *t = nullptr;
  CompileOptions opt;
  Hw hw;
  int index = 0;             // which segment compilation of the PhaseControl (printed plans)
  std::optional<Phase> done; // the last phase run

  // plan-groups, quantise (scales), choose-layouts (views)
  std::vector<GroupPlan> plans; // per step
  // choose-layouts
  ChosenLayouts chosen;
  // liveness: aliases, lifetimes, host-visible roots (Segment::inputs/outputs, unaddressed)
  std::map<graph::ValueId, graph::ValueId> aliasOf; // view output -> the value it aliases
  Liveness live;                      // over the segment; escaping values live to its end
  std::set<graph::ValueId> hostRoots; // roots the host writes or reads
  // batch-split
  SplitPlan split;
  /// Per run, per variant: its plans (lowering may change them).
  std::vector<std::vector<std::vector<GroupPlan>>> runPlans;
  // residency
  ResidencyPlan rp; // whole-batch residents; rp.window has one entry per step
  // dram
  std::map<graph::ValueId, int64_t> addr; // activations (and views) -> DRAM or L1 address
  std::vector<graph::ValueId> dramRoots;  // roots given DRAM space, in planning order
  // schedule, lower, banks, emit
  std::vector<EmitUnit> units;
  std::unique_ptr<sim::Memory> simMem; // sized for the bank-aware placement's simulations
  /// Per run: the constants its parts placed, by their bytes (later parts find them).
  std::vector<std::unordered_map<std::string, int64_t>> runConsts;
  DramCtx wholeBatch; // the DRAM view of the steps outside split runs
  // The result: inputs/outputs from liveness (addresses from dram), batch split and residency
  // reports, the constants from lower, program and group infos from emit, tokens, image.
  Segment seg;

  graph::ValueId rootOf(graph::ValueId v) const {
    for (auto it = aliasOf.find(v); it != aliasOf.end(); it = aliasOf.find(v))
      v = it->second;
    return v;
  }
  bool resident(graph::ValueId v) const { return rp.l1Addr.count(rootOf(v)) > 0; }
  int64_t bytesOf(graph::ValueId v) const;
  const graph::FusedGroup &group(size_t step) const {
    return g->groups.at(static_cast<size_t>(groupIds.at(step)));
  }
  bool reached(Phase p) const { return done && *done >= p; }
};

/// The phases, one function each (declared in the order of Phases.def). A phase returns a
/// Reject when the segment cannot be compiled as planned (a compiler decision, not an error).
using PhaseResult = std::optional<Reject>;
#define NPUC_PHASE(E, name, fn, what) PhaseResult fn(SegmentPlan &p);
#include "npu/pipeline/Phases.def"

} // namespace npuc::npu
