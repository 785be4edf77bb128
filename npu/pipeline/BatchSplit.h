// BatchSplit.h - graph scheduling for batch > 1: runs of consecutive groups executed one
// sub-batch at a time, so that each sub-batch's intermediates stay resident in L1.
//
// With batch N every group runs on the whole batch, so an early layer's activation is N times
// its per-image size and rarely fits L1: it round-trips through DRAM. Executing a run of groups
// sub-batch by sub-batch (b images: every group of the run on images [0, b), then on [b, 2b),
// ...) lets each sub-batch's intermediates stay in L1 between the run's groups
// (npu/pipeline/Resident.h at sub-batch size), at the price of loading the run's weights once per
// sub-batch instead of once. Later layers, whose weights are large next to their activations, keep
// the whole batch: each weight tile is loaded once and the tensor unit gets the larger M.
//
// The decision (planBatchSplit) is a cost model over DRAM bytes: for every candidate run (every
// group of it computes each image independently along axis 0) and sub-batch size b dividing N,
// the traffic of the intermediates the residency analysis (graph/Residency.cpp) would keep at
// b images, minus what it keeps at N anyway, minus what the run's kernels move more when run
// N/b times at b images than once at N (each simulated alone: mostly weights loaded once per
// sub-batch); a dynamic programme picks the disjoint runs of largest total gain. Each chosen
// run is then planned for real: its groups re-planned at b images (a copy of the graph with the
// batch dim set to b), the residency planner deciding what stays in L1, and both schedules
// simulated group by group (timing only, as residency's trials): a run that moves no fewer DRAM
// bytes, or takes more cycles (unless CompileOptions::batchSplitEvenIfSlower), is not split,
// and the notes say why.
//
// Mechanics: in the NPU layout (NHWC, or row-major) image i of a tensor is one contiguous byte
// range at addr + i * bytesPerImage, so the run is lowered at b images and emitted N/b times
// with its DRAM addresses offset per sub-batch (the kernels take them from DramCtx), its L1
// residents at the same addresses each time, and its constants placed once. The token pass
// orders the sub-batches like any other groups (they reuse the same L1 bytes).
#pragma once

#include "npu/pipeline/SplitRun.h"

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace npuc::npu {

/// What the segment pipeline knows when it decides batch splitting (its batch-split phase).
struct BatchSplitInput {
  const graph::Graph *g = nullptr;
  std::vector<int> groupIds;                            // step i is groupIds[i]
  std::vector<GroupPlan> plans;                         // per step, at the whole batch
  std::function<graph::ValueId(graph::ValueId)> rootOf; // a view's value -> the value it aliases
  std::set<graph::ValueId> pinned; // roots the host writes or reads (segment inputs/outputs)
  KernelOptions ko;
  bool crossGroupPrefetch = true;
  bool evenIfSlower = false; // CompileOptions::batchSplitEvenIfSlower
  /// Values stored in a layout chosen to cancel layout ops (the choose-layouts phase): a run
  /// re-planned at sub-batch size would store them in their default layout while their views
  /// still read the chosen one (and a chosen order need not keep image i contiguous), so no run
  /// touching them is split.
  std::set<graph::ValueId> chosenLayout;
  int jobs = 1; // threads for the per-group simulations (CompileOptions::jobs, resolved)
};

SplitPlan planBatchSplit(const BatchSplitInput &in, const Hw &hw);

} // namespace npuc::npu
