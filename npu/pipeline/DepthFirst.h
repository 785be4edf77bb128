// DepthFirst.h - depth-first (layer-fused) execution of chains of groups: each band of a chain's
// output rows runs every group of the chain on just the rows it needs before the next band
// starts, so that the chain's intermediates, whole tensors too large for L1, stay in L1 at band
// size. At batch N > 1 every image runs its bands in turn (the groups batch splitting did not
// take), on kernels planned at one image; the weights then load once per band and image.
//
// Geometry. A chain is consecutive groups whose every node computes an output row from a window
// of input rows (Conv, MaxPool, AveragePool) or from the same row (elementwise maps, BatchNorm,
// Concat along channels) of NCHW tensors of one batch. Its rows propagate backwards from a band
// [lo, hi) of the chain's output: a windowed node with kernel k, stride s, dilation d and top pad
// p needs input rows [lo*s - p, (hi-1)*s - p + (k-1)*d + 1), clipped to the tensor; the part of
// the window past an edge becomes the band's own top or bottom pad, so that edge bands pad as
// the whole tensor does and inner bands do not pad at all. Rows a band needs of another band's
// rows (the halo) are recomputed (DeFiNES's "fully recompute" mode): bands never depend on each
// other. The chain reads its inputs from DRAM, each reader its own rows (a residual branch's
// Add reads the block input's band, the block's first conv that band plus its halo), and writes
// only its output. An intermediate computes the union of the rows its readers need; a reader
// that needs fewer (a residual Add after a block whose 3x3 conv reads the same tensor with its
// halo) reads a crop: a view of those rows at an offset inside the band, wherever it lives.
//
// Execution. A band's tensors are contiguous in the NHWC layout of one image (rows lo..hi of
// [1,H,W,C] are bytes [lo*W*C, hi*W*C) x element size), so a band reads and writes the segment's
// DRAM tensors at an offset: its inputs' rows with their halo, its output's rows, and any
// intermediate residency does not keep (recomputed rows are written again with equal values).
// Bands of equal geometry (inner bands, usually) share one variant of the chain's groups planned
// at band size (npu/pipeline/SplitRun.h) and replay its kernels; edge bands get their own.
//
// Decision. Chains of up to 8 groups whose intermediates would round-trip through DRAM (the
// residency analysis does not keep them at full size) are candidates. Each is estimated at every
// band height whose live intermediates fit half of L1 (in at most 64 bands): the spilled bytes
// saved, less the chain's weights loaded once more per band, the input rows read again for the
// halos, and the recomputed halo rows' MACs (at the array's peak, as DRAM bytes of as many
// cycles); the best height is the chain's. Rounds of a dynamic programme pick disjoint chains of
// largest total estimate and try each at its height, then at half of it; a chain is kept when its
// groups, each simulated alone (timing only, as residency's trials), move fewer DRAM bytes band
// by band than whole (less what whole-tensor residency would keep anyway, plus what it loses at
// the chain's boundaries) and take no more cycles; a failed chain leaves the candidates and the
// next round chooses again (at most 24 tries). The notes say why the others were not run.
#pragma once

#include "npu/pipeline/SplitRun.h"

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace npuc::npu {

/// What the segment pipeline knows when it decides depth-first runs (its depth-first phase).
struct DepthFirstInput {
  const graph::Graph *g = nullptr;
  std::vector<int> groupIds;                            // step i is groupIds[i]
  std::vector<GroupPlan> plans;                         // per step, on whole tensors
  std::function<graph::ValueId(graph::ValueId)> rootOf; // a view's value -> the value it aliases
  std::set<graph::ValueId> pinned; // roots the host writes or reads (segment inputs/outputs)
  KernelOptions ko;
  bool crossGroupPrefetch = true;
  /// Values stored in a layout chosen to cancel layout ops: their rows need not be contiguous.
  std::set<graph::ValueId> chosenLayout;
  std::set<size_t> taken; // steps of batch-split runs
  /// > 0: every chain (the longest ones: intermediates that fit L1 whole count too) runs in
  /// bands of this many output rows, whatever the simulation finds (CompileOptions).
  int64_t forceRows = 0;
  int jobs = 1; // threads for the per-group simulations
};

/// Rows [lo, hi) of a tensor's H axis.
struct RowRange {
  int64_t lo = 0, hi = 0;
  int64_t size() const { return hi - lo; }
  bool operator==(const RowRange &o) const { return lo == o.lo && hi == o.hi; }
};

/// One read of a chain input, or a crop of a chain value: node `node`'s operand `operand`.
struct ChainRead {
  graph::NodeId node = -1;
  size_t operand = 0;
  graph::ValueId value = graph::kNoValue;
  RowRange rows;
};

/// The rows one band computes of every tensor of a chain.
struct BandGeometry {
  std::map<graph::ValueId, RowRange> rows; // every value the chain's nodes produce
  std::map<graph::NodeId, std::pair<int64_t, int64_t>> pads; // windowed nodes: top, bottom pad
  std::vector<ChainRead> reads;                              // the chain's inputs, per read
  /// Reads of a chain value that need fewer rows than it computes (the union of its readers'
  /// rows): a residual Add reading the band of a tensor the next 3x3 conv reads with its halo.
  std::vector<ChainRead> crops;
};

/// "" when node `n` of `g` computes each output row from a window of rows of its batch-1 NCHW
/// operands (see the file comment), else why not.
std::string rowLocalReason(const graph::Graph &g, const graph::Node &n);

/// The rows each value of the chain `nodes` (topological order, every node row-local) takes for
/// rows `band` of the chain's output `out`: the union of the rows its readers need (those that
/// need fewer read a crop); the geometry, or why the chain cannot run by bands (a value not read
/// inside the chain, a window that reads no row).
Expected<BandGeometry, std::string> bandGeometry(const graph::Graph &g,
                                                 const std::vector<graph::NodeId> &nodes,
                                                 graph::ValueId out, RowRange band);

/// Per read of `geo.reads`, which copy of a chain input it reads: reads of the same value and
/// rows share one, numbered in the order of their first read.
std::vector<size_t> readCopies(const BandGeometry &geo);

/// A copy of `g` in which the groups `ids` compute one band of geometry `geo`: the chain's values
/// take the band's rows, windowed nodes its pads, each copy of a chain input (readCopies) is a
/// new value `<name>.rows<lo>_<hi>` holding the rows its reads read, numbered after g's values,
/// and each crop (cropCopies) a new value `<name>.crop<lo>_<hi>` after those.
std::unique_ptr<graph::Graph> bandGraph(const graph::Graph &g, const std::vector<int> &ids,
                                        const BandGeometry &geo);

/// Per crop of `geo.crops`, which crop value it reads (as readCopies).
std::vector<size_t> cropCopies(const BandGeometry &geo);

/// bandGraph's crop values: each one's id -> the chain value it views, and its first row within
/// that value's band.
std::map<graph::ValueId, std::pair<graph::ValueId, int64_t>> bandCrops(const graph::Graph &g,
                                                                       const BandGeometry &geo);

/// bandGraph's copies of chain inputs: each copy's value id -> the value it holds rows of, and
/// its first row.
std::map<graph::ValueId, std::pair<graph::ValueId, int64_t>> bandInputs(const graph::Graph &g,
                                                                        const BandGeometry &geo);

SplitPlan planDepthFirst(const DepthFirstInput &in, const Hw &hw);

} // namespace npuc::npu
