// Resident.h - keeping intermediate tensors in L1 between consecutive groups of a segment.
//
// graph/Residency.cpp proposes the tensors that could stay on chip; planResidency() decides
// which the code generator actually keeps: it places them in L1 with the memory planner over
// their lifetimes (producer step .. last consumer step), gives every step the L1 window no live
// resident tensor occupies, and dry-lowers each group's kernel in its window. A tensor is
// dropped (it goes through DRAM as before) when the planner cannot place it, when a kernel
// cannot tile around it or cannot encode its on-chip copies of it, or when its groups, each
// emitted and simulated alone (timing only), take more cycles or move more DRAM bytes in their
// windows than with the whole of L1 and no residency (smaller tiles, weights reloaded). Each
// drop re-plans the rest, so a failing choice is retried without it instead of failing the
// compile.
#pragma once

#include "npu/kernels/Builder.h"
#include "npu/kernels/KernelSelect.h"
#include "npu/pipeline/Compile.h"

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace npuc::npu {

/// The segment as the segment compiler sees it when it decides residency.
struct ResidencyInput {
  const graph::Graph *g = nullptr;
  std::vector<int> groupIds;                            // in execution order: step i is groupIds[i]
  std::vector<GroupPlan> plans;                         // per step
  std::function<graph::ValueId(graph::ValueId)> rootOf; // a view's value -> the value it aliases
  std::map<graph::ValueId, std::pair<int64_t, int64_t>> life; // root -> live steps [first, end)
  std::set<graph::ValueId> pinned; // roots the host writes or reads: never resident
  /// Roots live across a batch-split run (npu/pipeline/BatchSplit.h): never resident at the whole
  /// batch (the run's sub-batches keep their own tensors in L1).
  std::set<graph::ValueId> splitPinned;
  KernelOptions ko;
  bool crossGroupPrefetch = true;
  /// Threads simulateSteps may use (CompileOptions::jobs); the result does not depend on it.
  int jobs = 1;
};

/// One step's kernel emitted and simulated alone (timing only).
struct StepCost {
  bool emitted = false; // false: it did not tile or encode (cycles and dram are 0)
  int64_t cycles = 0;
  int64_t dram = 0; // bytes read and written
  int64_t macs = 0, vectorElements = 0; // tensor-unit MACs, vector-op elements
};

struct ResidencyPlan {
  std::map<graph::ValueId, int64_t> l1Addr; // kept roots -> their L1 address
  std::vector<Window> window;               // per step: the L1 range free of live kept tensors
  std::vector<ResidencyEntry> entries;      // every proposed tensor, kept or dropped
  std::vector<StepCost> steps;              // per step, in its window with the kept tensors
};

ResidencyPlan planResidency(const ResidencyInput &in, const Hw &hw);

/// Each step's kernel with the whole of L1 and every tensor in DRAM, simulated alone (the
/// baseline planResidency compares with; batch splitting compares the whole batch with it).
/// The steps are independent: up to `in.jobs` threads take them, each with its own trials.
std::vector<StepCost> simulateSteps(const ResidencyInput &in, const Hw &hw);

} // namespace npuc::npu
