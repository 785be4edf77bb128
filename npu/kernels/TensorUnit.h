// TensorUnit.h - the tensor-unit conv/matmul kernel's space, shared by its decisions and cost
// (npu/kernels/TensorUnitSpace.cpp) and its lowering to TIR (npu/kernels/LowerMatmul.cpp).
//
// A point: `buffers` copies of every buffer (2: loads of tile i+1 overlap compute on tile i);
// `tic` input channels per L1 block (the whole group's unless that cannot fit); `toc` output
// channels, `toh` output rows (x the full output width) per tile; `tk` the k-chunk of one matmul
// and `khg` kernel rows folded into one chunk (khg > 1: tk = khg x the row's run); `kouter` 1
// puts the k-chunks outside the output-channel blocks (a chunked input loaded once). Groups of
// more than one output row also choose `rowouter`: 1 puts the row tiles outside the output-channel
// blocks, so each row tile's input is loaded once and every block's weights stream past it (the
// weights are then loaded once per row tile instead of the input once per block: a transformer's
// MLP, whose input is wider than its weight blocks). Batched groups (N > 1) also choose `nin`: 1
// runs the images inside the output-channel blocks, so each weight block is loaded once for the
// whole batch instead of once per image, at the price of loading each image's input once per block
// (the cost model weighs the two).
#pragma once

#include "npu/schedule/Space.h"

#include <vector>

namespace npuc::npu {

class TensorUnitSpace : public KernelSpace {
public:
  TensorUnitSpace(const GroupPlan &plan, const graph::Graph &g, const SpaceContext &ctx);
  Strategy strategy() const override { return Strategy::TensorUnit; }
  std::vector<Decision> decisions() const override;
  std::optional<Reject> whyIllegal(const Schedule &s) const override;
  Expected<Schedule, Reject> defaultPoint() const override;
  double cost(const Schedule &s) const override;
  std::vector<Schedule> enumerate(size_t limit = 0) const override;
  Kernel lower(const Schedule &s, Builder &b, const DramCtx &d) const override;

  /// An input-channel blocking: tic channels per block, ICB blocks; with the KW taps of a
  /// kernel row folded into one k run (fold: KWl = 1, Kl = KW * tic) or not (KWl = KW, Kl = tic).
  struct Chan {
    int64_t tic, ICB, KWl, Kl;
    bool fold;
  };
  Chan chanFor(int64_t tic) const;
  /// Matmuls, array passes and movs per (output tile, channel block).
  struct KSplit {
    int64_t matmuls, passes, movs;
  };
  KSplit ksplit(const Chan &ch, int64_t tk, int64_t khg) const;
  /// A chunk-major input: loaded once with several unfolded k-chunks per tap.
  bool chunkedInput(const Chan &ch, int64_t tk, int64_t khg) const {
    return !ch.fold && khg == 1 && ch.ICB == 1 && ch.Kl > tk;
  }
  bool fits(const Chan &ch, int nb, int64_t toc, int64_t tk, int64_t toh) const;
  /// Whether the A gathers read a resident input where it lives (no L1 tile copy).
  bool inputDirect(const Chan &ch, int64_t khg) const;
  /// Whether k-outer order is possible for the point (it needs every block's weights and
  /// accumulator tile at once).
  bool kOuterPossible(const Chan &ch, int nb, int64_t toc, int64_t tk, int64_t toh,
                      int64_t khg) const;
  /// Whether the images may run inside the output-channel blocks (`nin` = 1): a batch, one
  /// channel block (blocked channels reload the weights per tile anyway), and not disabled.
  bool batchInnerPossible(const Chan &ch) const;
  /// Whether the space has the `nin` decision at all (batched groups only).
  bool hasBatchDecision() const { return plan_.conv.N > 1; }
  /// Whether point `s` runs the images inside the output-channel blocks.
  bool imagesInside(const Schedule &s) const { return hasBatchDecision() && s.get("nin") == 1; }
  /// Whether the space has the `rowouter` decision at all (more than one output row).
  bool hasRowDecision() const { return plan_.conv.OH > 1; }
  /// Whether point `s` runs the row tiles outside the output-channel blocks.
  bool rowsOutside(const Schedule &s) const { return hasRowDecision() && s.get("rowouter") == 1; }
  /// Whether rows-outer order can run the point and differs from the default order: several row
  /// tiles and several output-channel blocks, one input-channel block (blocked channels reload
  /// per tile anyway), the images outermost, an input the tiles copy (a resident one is read in
  /// place), not the ablation.
  bool rowOuterPossible(const Chan &ch, int64_t toc, int64_t toh, int64_t khg, bool nin) const;
  double cost(const Chan &ch, int nb, int64_t toc, int64_t tk, int64_t toh, int64_t khg, bool nin,
              bool rowOuter) const;

  const ConvParams &conv() const { return plan_.conv; }
  int64_t padWidth() const { return Wp_; }
  int64_t rowsFor(int64_t toh) const {
    const ConvParams &c = plan_.conv;
    return (toh - 1) * c.SH + (c.KH - 1) * c.DH + 1;
  }

private:
  // The default search over (toc, tk, khg) for one channel blocking: the largest feasible toh
  // for each, the cheapest (ties: the largest tile). toc == 0 when nothing fits.
  struct Best {
    int64_t toc = 0, tk = 0, toh = 0, khg = 1;
    bool nin = false, rowOuter = false;
    double cost = 0, dram = 0; // estimated cycles and DRAM bytes
    /// Fewer cycles (by 0.1%); within 0.5% of the cycles, 2% fewer DRAM bytes (a DRAM byte
    /// costs far more energy than the cycles, and the bandwidth is shared with the next
    /// group's prefetch); then the larger tile.
    bool beats(const Best &o) const {
      const bool close = cost >= o.cost * 0.995 && cost <= o.cost * 1.005;
      if (close && dram < o.dram * 0.98)
        return true;
      if (close && o.dram < dram * 0.98)
        return false;
      return cost < o.cost * 0.999 ||
             (cost <= o.cost * 1.001 && toc * tk * toh > o.toc * o.tk * o.toh);
    }
  };
  Best search(const Chan &ch, int nb) const;
  std::vector<int64_t> ticCandidates() const;
  std::vector<int64_t> tocCandidates() const;
  std::vector<std::pair<int64_t, int64_t>> kCandidates(const Chan &ch) const; // (khg, tk)
  double inputBytes(const Chan &ch, int64_t toc, int64_t toh, bool nin, bool rowOuter) const;
  double dramBytes(const Chan &ch, int64_t toc, int64_t toh, bool nin, bool rowOuter) const;
  int64_t al(int level, int64_t bytes) const;

  friend struct MatmulLowering;
  GroupPlan plan_; // the group's plan (output, input, levels)
  GroupPlan p_;    // with the bias (and int8: the requantising) epilogue
  const graph::Graph &g_;
  SpaceContext ctx_;
  std::vector<int8_t> wq_;    // int8 targets: the weights quantised per output channel
  std::optional<Reject> pre_; // no point at all (int8 overflow, no room for the constants)
  int64_t Wp_ = 0, l1Free_ = 0;
  // The instruction-field limits fits() checks every candidate against, looked up once: the
  // search asks fits() thousands of times per group, and each lookup walks field names.
  int64_t maxDim_ = 0, maxStride_ = 0;
  int64_t eb_ = 0; // bytes per activation element (hw.actBytes(), out of line)
  int nres_ = 0;
};

} // namespace npuc::npu
