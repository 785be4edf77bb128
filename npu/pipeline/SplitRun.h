// SplitRun.h - a run of consecutive groups executed part by part: sub-batches of images
// (npu/pipeline/BatchSplit.h) or bands of output rows, depth-first (npu/pipeline/DepthFirst.h).
//
// Both plan the run's groups again at part size on a copy of the segment's graph (a variant),
// decide residency within one part there, and emit every step once per part with the part's DRAM
// addresses; parts of one variant replay the first one's kernels. What a part reads and writes in
// DRAM lies inside the segment's tensors at an offset (image i of an NHWC or row-major tensor is
// one contiguous range, and so is a band of rows of a one-image NHWC tensor), so the segment's
// DRAM plan serves every part.
#pragma once

#include "npu/pipeline/BankAlloc.h"
#include "npu/pipeline/Liveness.h"
#include "npu/pipeline/Resident.h"

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace npuc::npu {

/// How a split run divides its steps' work into parts.
enum class SplitKind {
  Batch, // sub-batches of images (npu/pipeline/BatchSplit.h)
  Rows,  // bands of output rows, depth-first through the run (npu/pipeline/DepthFirst.h)
};

/// One shape of a split run's parts: the graph its groups are planned on (a copy of the segment's
/// with the run's tensors at part size), their plans, and what stays in L1 within one part. Parts
/// of one variant emit the same kernels at other DRAM addresses.
struct SplitVariant {
  std::unique_ptr<graph::Graph> g;
  std::vector<GroupPlan> plans;         // per step of the run, planned on *g
  ResidencyPlan rp;                     // residency within a part, steps relative to the run's
  std::vector<int64_t> residentL1Bytes; // per step of the run: its residents live at that step
  /// Values of *g that view the bytes of another at a byte offset (a band's crop of a tensor a
  /// reader needs fewer rows of than another), wherever that tensor lives: value -> (the value
  /// viewed, byte offset). They alias it for liveness and residency.
  std::map<graph::ValueId, std::pair<graph::ValueId, int64_t>> views;
};

/// One part of a split run: a sub-batch, or a band of the run's output rows.
struct SplitPart {
  size_t variant = 0;
  int64_t lo = 0, hi = 0; // images [lo, hi) of the batch, or rows [lo, hi) of the run's output
  int64_t image = 0;      // SplitKind::Rows: which image the band is of
  /// Where the DRAM bytes of each value of the variant's graph that the part reads or writes
  /// lie: in the DRAM tensor of which segment value, at which byte offset (a band's input rows
  /// with their halo, a sub-batch's images).
  std::map<graph::ValueId, std::pair<graph::ValueId, int64_t>> dram;
};

/// One run to split, planned at part size.
struct SplitRun {
  SplitKind kind = SplitKind::Batch;
  size_t first = 0, end = 0;       // steps [first, end) of the segment
  int64_t batch = 1, subBatch = 1; // SplitKind::Batch
  std::vector<SplitVariant> variants;
  std::vector<SplitPart> parts;                         // in execution order
  std::function<graph::ValueId(graph::ValueId)> rootOf; // as BatchSplitInput's
  bool crossGroupPrefetch = true;
  BatchSplitEntry entry; // what the report shows (SplitKind::Batch)
  DepthFirstEntry rows;  // (SplitKind::Rows)
  /// Roots every variant keeps in L1: they get no DRAM space.
  std::set<graph::ValueId> residentRoots() const;
  /// The root of `v` in variant `var`: a view's value, after rootOf.
  graph::ValueId rootIn(const SplitVariant &var, graph::ValueId v) const;
};

/// The split runs of a segment: batch splitting's and depth-first's.
struct SplitPlan {
  std::vector<SplitRun> runs;     // disjoint, in step order
  std::vector<std::string> notes; // the planner's: what it did not split, and why
  /// Roots kept in L1 by some run: they get no DRAM space.
  std::set<graph::ValueId> residentRoots;
  /// The run starting at `step`, or null.
  const SplitRun *startingAt(size_t step) const;
  /// Whether a step belongs to a split run.
  bool covers(size_t step) const;
};

/// The DRAM view of part `j` of a split run: a tensor's DRAM address `dramAddr(v)` (the segment
/// tensor's) offset to the part's bytes (SplitPart::dram), the part's L1 residents where they
/// live, and constants placed through `addConst` by the first lowering of their bytes (recorded
/// in `placed`, where later lowerings find them: constants are read-only, so any copy of equal
/// bytes serves). The segment pipeline's schedule phase gives each part of each step of the run
/// one emission unit with this view.
DramCtx partDram(const SplitRun &run, const Hw &hw, size_t j,
                 std::function<int64_t(graph::ValueId)> dramAddr,
                 std::function<int64_t(const ConstBytes &)> addConst,
                 std::unordered_map<std::string, int64_t> &placed);

/// A copy of `g` with every activation's leading batch dim N set to b, and the shape operands of
/// the groups `ids`' Reshapes rewritten to match (the graph a sub-batch, or one image's bands,
/// are planned on).
std::unique_ptr<graph::Graph> withSubBatch(const graph::Graph &g, const std::vector<int> &ids,
                                           int64_t N, int64_t b);

/// Every non-constant value the groups of `ids` in `g` read or write, each mapped to itself at
/// byte offset `offset(v)` (SplitPart::dram for parts that keep the segment's value ids).
std::map<graph::ValueId, std::pair<graph::ValueId, int64_t>>
groupValuesAt(const graph::Graph &g, const std::vector<int> &ids,
              const std::function<int64_t(graph::ValueId)> &offset);

/// The run's groups `ids` planned on `v.g`: "" when each plans the kernel `whole` has (its plan
/// on the segment's graph; else the reason), with the whole tensors' scales (int8): a value of
/// the variant that stands for a segment value (`standsFor`) takes that value's residual scale.
std::string planVariantKernels(SplitVariant &v, const std::vector<int> &ids,
                               const std::vector<GroupPlan> &whole, const Hw &hw,
                               const std::function<graph::ValueId(graph::ValueId)> &standsFor);

/// Residency within one part of `v`: the groups `ids`' lifetimes over the variant's graph, the
/// values the run reads before it and those read after it pinned (segment DRAM tensors), and
/// the segment's pinned roots. Fills v.rp and v.residentL1Bytes.
/// (base.rootOf is the segment's; v.views alias too.)
void planVariantResidency(SplitVariant &v, const std::vector<int> &ids, const ResidencyInput &base,
                          const std::set<graph::ValueId> &segmentPinned, const Hw &hw);

} // namespace npuc::npu
