// TensorUnitSpace.cpp - the tensor-unit conv/matmul kernel's decisions, their constraints, its
// cost model and the default search (the lowering of a point: npu/kernels/LowerMatmul.cpp).
//
// L1 holds the input rows and the weight block of `tic` input channels; tic = icg unless that
// cannot fit, in which case the channels are blocked at L1 too (accumulating across blocks).
// With unit horizontal dilation, the KW taps of one kernel row read KW*tic consecutive elements
// of an input-tile row, so they can form one longer k dimension. That pays when tic is small
// (the stem's 3 channels would otherwise fill 3 of the array's rows per pass). Such a run of Kl
// values per kernel row (KWl == 1) also lets khg kernel rows share one k-chunk: their runs are
// gathered side by side into A, one mov per row, and their B rows are consecutive in the weight
// block. ResNet-50's 7x7x3 stem then needs ceil(6*21/16) + ceil(21/16) = 10 passes of a 16-row
// array instead of 7 * 2 = 14.
#include "npu/kernels/TensorUnit.h"

#include "npu/hw/Quant.h"
#include "npu/kernels/KernelSpaces.h"
#include "npu/kernels/SpaceSupport.h"
#include "support/Error.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace npuc::npu {

TensorUnitSpace::TensorUnitSpace(const GroupPlan &plan, const graph::Graph &g,
                                 const SpaceContext &ctx)
    : plan_(plan), p_(withBiasEpilogue(plan)), g_(g), ctx_(ctx) {
  const Hw &hw = *ctx.hw;
  const ConvParams &c = plan.conv;
  Wp_ = std::max(c.W + c.padL, (c.OW - 1) * c.SW + (c.KW - 1) * c.DW + 1);
  maxDim_ = hw.maxDim();
  maxStride_ = hw.onChipStrideMax();
  eb_ = hw.actBytes();
  // |int8 x int8| <= 128 * 128: a reduction over K terms stays inside int32 (no wrap-around) for
  // K < 2^31 / 2^14 = 131072.
  const int64_t Kred = c.icg() * c.KH * c.KW;
  if (hw.quantised() && Kred >= (int64_t(1) << 17)) {
    pre_ = kernelReject(RejectKind::Quantisation,
                        fmt::format("int8: a reduction over {} products could overflow the "
                                    "int32 accumulator (at most 131071)",
                                    Kred));
    return;
  }
  // Activations and weights in the tensor unit's operand dtype: fp16, or int8 on quantised
  // targets, where the weights are quantised per output channel and the epilogue dequantises
  // the int32 accumulator and requantises the result (withQuantEpilogue).
  if (hw.quantised()) {
    std::vector<float> dequant = quantiseWeights(c.weightsOCFirst(), c.OC, wq_);
    for (float &s : dequant)
      s *= plan.quant.in;
    p_ = withQuantEpilogue(p_, &dequant);
  }
  // The epilogue's constants come first in L1; the tiles get what they leave.
  Builder scratch(hw, ctx.fromTop, ctx.window);
  const DramCtx dry = dryDram(ctx);
  std::vector<View> consts;
  std::vector<tir::Stmt> prologue;
  if ((pre_ = stageEpilogueConstants(p_, scratch, dry, consts, prologue)))
    return;
  l1Free_ = scratch.freeBytes(hw.l1);
  nres_ = tensorOperands(p_);
}

int64_t TensorUnitSpace::al(int level, int64_t bytes) const {
  return alignUp(bytes, ctx_.hw->alignment(level));
}

TensorUnitSpace::Chan TensorUnitSpace::chanFor(int64_t tic) const {
  const ConvParams &c = plan_.conv;
  const Hw &hw = *ctx_.hw;
  // Folding pays when the taps that can share a chunk fill the array better as one k
  // dimension: the whole kernel's (then folding each row's columns is at least as good as not,
  // and rows can fold too), or one row's for the naive ablation, which never folds rows.
  int64_t rowsShared = ctx_.naiveTiling ? 1 : c.KH;
  bool fold = c.DW == 1 && c.KW > 1 &&
              ceilDiv(tic, hw.tensorRows) * c.KW * rowsShared >
                  ceilDiv(rowsShared * c.KW * tic, hw.tensorRows);
  return Chan{tic, ceilDiv(c.icg(), tic), fold ? 1 : c.KW, fold ? c.KW * tic : tic, fold};
}

// Per (output tile, channel block) with khg rows per chunk (khg > 1: one chunk per row group):
// matmuls, array passes over k (ceil(chunk k / rows) per chunk; a narrower last row group is
// counted as such) and movs (one A mov per kernel row of a group, one B mov).
TensorUnitSpace::KSplit TensorUnitSpace::ksplit(const Chan &ch, int64_t tk, int64_t khg) const {
  const ConvParams &c = plan_.conv;
  const int64_t rowsArr = ctx_.hw->tensorRows;
  auto passes = [&](int64_t k) { return ceilDiv(k, rowsArr); };
  if (khg == 1) {
    // A narrower last chunk of a run is counted as a full one: that prefers even chunk splits
    // (64 + 64 over 80 + 48) at no cost in passes.
    int64_t KC = ceilDiv(ch.Kl, tk), runs = c.KH * ch.KWl;
    return KSplit{runs * KC, runs * KC * passes(tk), 2 * runs * KC};
  }
  int64_t full = c.KH / khg, rest = c.KH % khg, groups = ceilDiv(c.KH, khg);
  int64_t p = full * passes(khg * ch.Kl) + (rest ? passes(rest * ch.Kl) : 0);
  return KSplit{groups, p, c.KH + groups};
}

bool TensorUnitSpace::fits(const Chan &ch, int nb, int64_t toc, int64_t tk, int64_t toh) const {
  const ConvParams &c = plan_.conv;
  const Hw &hw = *ctx_.hw;
  const int64_t maxDim = maxDim_, eb = eb_;
  int64_t M = toh * c.OW;
  int64_t rows = rowsFor(toh);
  if (M > maxDim || toh > maxDim || c.OW > maxDim || rows > maxDim || Wp_ > maxDim ||
      c.KH * c.KW > maxDim)
    return false;
  // The search skips tiles whose on-chip strides it cannot encode.
  for (int64_t stride : {toc * ch.tic, ch.tic * Wp_, ch.tic * c.SH * Wp_, tk * c.OW})
    if (stride > maxStride_)
      return false;
  if (al(hw.l0a, M * tk * eb) * nb > hw.capacity(hw.l0a))
    return false;
  if (al(hw.l0b, tk * toc * eb) * nb > hw.capacity(hw.l0b))
    return false;
  if (al(hw.acc, M * toc * 4) * nb > hw.capacity(hw.acc))
    return false;
  // A chunk-major input (chunkedInput: one row tile) rounds its channels up to whole chunks.
  int64_t xch = toh >= c.OH && chunkedInput(ch, tk, 1) ? ceilDiv(ch.tic, tk) * tk : ch.tic;
  int64_t l1 = nb * (al(hw.l1, rows * Wp_ * xch * eb) + al(hw.l1, c.KH * c.KW * ch.tic * toc * eb) +
                     al(hw.l1, M * toc * eb) * (1 + nres_));
  return l1 <= l1Free_;
}

// An input resident in L1 (Compile.cpp) with one channel block: the A gathers read it where it
// lives, and the copy into the tile buffer (a feed-engine `mov` ahead of the gathers, which holds
// them back) is skipped. With nothing to pad the tile would have the tensor's own layout
// ([rows][W][C]); otherwise each gather pads the taps that fall outside the image itself, which
// needs one kernel tap per gather (no folded columns or rows).
bool TensorUnitSpace::inputDirect(const Chan &ch, int64_t khg) const {
  const ConvParams &c = plan_.conv;
  const bool noPad =
      Wp_ == c.W && c.padL == 0 && c.padT == 0 && (c.OH - 1) * c.SH + (c.KH - 1) * c.DH + 1 <= c.H;
  return ctx_.level(plan_.input) != ctx_.hw->dram && c.G == 1 && ch.ICB == 1 &&
         (noPad || (!ch.fold && khg == 1));
}

// k-chunks outermost: with a chunked input loaded once, the output-channel blocks move inside the
// k loop, each accumulating in its own accumulator tile, and each block's weight rows for a chunk
// load just before their use. A is then gathered once per chunk instead of once per block, and
// input and weights stream in together, where the block-outer order leaves the tensor unit
// waiting for the input's chunks during the first block (MobileNetV2's 14x14 pointwise convs).
bool TensorUnitSpace::kOuterPossible(const Chan &ch, int nb, int64_t toc, int64_t tk, int64_t toh,
                                     int64_t khg) const {
  const ConvParams &c = plan_.conv;
  const Hw &hw = *ctx_.hw;
  const int64_t OCB = ceilDiv(c.ocg(), toc), OHB = ceilDiv(c.OH, toh), KC = ceilDiv(ch.Kl, tk);
  const bool chunked = OHB == 1 && !inputDirect(ch, khg) && chunkedInput(ch, tk, khg);
  if (!chunked || OCB == 1 || ctx_.naiveTiling)
    return false;
  const int64_t eb = hw.actBytes(), M = toh * c.OW;
  const int64_t chunkElems = rowsFor(toh) * Wp_ * tk;
  int64_t l1 =
      nb * (al(hw.l1, KC * chunkElems * eb) + al(hw.l1, OCB * c.KH * c.KW * ch.tic * toc * eb) +
            al(hw.l1, M * toc * eb) * (1 + nres_));
  return l1 <= l1Free_ && al(hw.acc, OCB * M * toc * 4) * nb <= hw.capacity(hw.acc);
}

// Images inside the output-channel blocks: a weight block (the group's, unblocked) is loaded
// once and every image's tiles use it. The naive ablation keeps the images outermost.
bool TensorUnitSpace::batchInnerPossible(const Chan &ch) const {
  return hasBatchDecision() && ch.ICB == 1 && ctx_.batchWeightReuse && !ctx_.naiveTiling;
}

bool TensorUnitSpace::rowOuterPossible(const Chan &ch, int64_t toc, int64_t toh, int64_t khg,
                                       bool nin) const {
  return ceilDiv(plan_.conv.OH, toh) > 1 && ceilDiv(plan_.conv.ocg(), toc) > 1 && ch.ICB == 1 &&
         !nin && !ctx_.naiveTiling && !inputDirect(ch, khg);
}

// One row tile and one channel block, images outermost: the input is loaded once per (image,
// group) and stays in L1 across the output-channel blocks; rows outermost, each row tile's
// once; otherwise it is reloaded per output tile.
double TensorUnitSpace::inputBytes(const Chan &ch, int64_t toc, int64_t toh, bool nin,
                                   bool rowOuter) const {
  const ConvParams &c = plan_.conv;
  int64_t OCB = ceilDiv(c.ocg(), toc), OHB = ceilDiv(c.OH, toh);
  double inLoads = OHB == 1 && ch.ICB == 1 && !nin ? 1.0
                   : rowOuter                      ? double(OHB)
                                                   : double(OCB * OHB);
  return double(c.N * c.G) * inLoads * rowsFor(toh) * Wp_ * c.icg() * ctx_.hw->actBytes();
}

double TensorUnitSpace::dramBytes(const Chan &ch, int64_t toc, int64_t toh, bool nin,
                                  bool rowOuter) const {
  const ConvParams &c = plan_.conv;
  // Weights per row tile when blocked or rows-outer; per image, or once with the images inside
  // the blocks.
  double wLoads = ch.ICB > 1 || rowOuter ? double(c.N * ceilDiv(c.OH, toh))
                  : nin                  ? 1.0
                                         : double(c.N);
  return inputBytes(ch, toc, toh, nin, rowOuter) + wLoads * double(c.weights->size()) * eb_ +
         double(c.N * c.OH * c.OW * c.OC) * eb_ * (1 + nres_);
}

double TensorUnitSpace::cost(const Chan &ch, int nb, int64_t toc, int64_t tk, int64_t toh,
                             int64_t khg, bool nin, bool rowOuter) const {
  const ConvParams &c = plan_.conv;
  const Hw &hw = *ctx_.hw;
  const isa::Target &t = *hw.t;
  const int64_t eb = hw.actBytes();
  const double dramBw = t.dram.bytesPerCycle;
  const double feedBw = t.engines.at(static_cast<size_t>(hw.mov->engine)).bytesPerCycle;
  int64_t OCB = ceilDiv(c.ocg(), toc), OHB = ceilDiv(c.OH, toh);
  double M = static_cast<double>(toh * c.OW);
  KSplit ks = ksplit(ch, tk, khg);
  double blocks = double(c.N * c.G * OCB * OHB * ch.ICB); // (output tile, channel block) pairs
  double tensor = blocks * (double(ks.matmuls) * t.tensor.fillLatency +
                            M * double(ks.passes * ceilDiv(toc, hw.tensorCols)));
  double inBytes = inputBytes(ch, toc, toh, nin, rowOuter);
  double dram = dramBytes(ch, toc, toh, nin, rowOuter);
  // Every k value of A and B is moved once per block, however k is chunked; each mov also costs
  // its fixed latency (row folding issues one A mov per kernel row).
  double kTot = double(c.KH * c.KW * ch.tic);
  double feed = blocks * ((M * kTot * eb + kTot * toc * eb) / feedBw +
                          double(ks.movs) * hw.mov->timing.latency);
  double vec = double(c.N * c.OH * c.OW * c.OC) * epilogueOpsPerElement(p_) / t.vector.lanes;
  double parts[4] = {tensor, dram / dramBw, feed, vec};
  double best = 0, sum = 0;
  for (double x : parts) {
    best = std::max(best, x);
    sum += x;
  }
  // Double-buffered, the T output tiles form a pipeline: the busiest resource sets the pace, and
  // the others' share of one tile is exposed once (the first tile's loads, the last tile's
  // epilogue and store). A layer that fits one tile therefore gains from splitting.
  double tiles = double(c.N * c.G * OCB * OHB);
  // Each tile is a chain of dependent instructions (its load from DRAM, a gather, a matmul, the
  // epilogue, the store to DRAM) whose fixed latencies no bandwidth hides: with nb buffers at
  // most nb tiles are in flight, so many tiny tiles (a depthwise conv's groups on the array) are
  // bound by the chains, not by any engine's throughput.
  const double chain = 2.0 * t.dram.latency + double(hw.ld->timing.latency) +
                       double(hw.st->timing.latency) + double(hw.mov->timing.latency) +
                       double(t.tensor.fillLatency) + double(hw.vop->timing.latency);
  if (nb == 1)
    return sum + tiles * chain;
  // An input loaded once precedes every tile, so it is exposed whole, or one k-chunk of it when
  // it is loaded chunk by chunk; rows outermost, the first row tile's input is (the next ones
  // load while the previous row's blocks compute).
  double exposedIn = 0;
  if (OHB == 1 && ch.ICB == 1 && !nin)
    exposedIn = inBytes / dramBw / double(chunkedInput(ch, tk, khg) ? ceilDiv(ch.Kl, tk) : 1);
  else if (rowOuter)
    exposedIn = inBytes / dramBw / double(OHB * c.N * c.G);
  return std::max(best + (sum - best) / tiles + exposedIn, tiles * chain / double(nb));
}

std::vector<int64_t> TensorUnitSpace::ticCandidates() const {
  // The whole depth, then blocks of array-row multiples, largest first.
  const int64_t icg = plan_.conv.icg(), rows = ctx_.hw->tensorRows;
  std::vector<int64_t> v = {icg};
  for (int64_t tic = (icg - 1) / rows * rows; tic > 0; tic -= rows)
    v.push_back(tic);
  return v;
}

std::vector<int64_t> TensorUnitSpace::tocCandidates() const {
  std::vector<int64_t> tocs; // multiples of the array's columns, and the whole group
  for (int64_t v = ctx_.hw->tensorCols; v < plan_.conv.ocg(); v += ctx_.hw->tensorCols)
    tocs.push_back(v);
  tocs.push_back(plan_.conv.ocg());
  return tocs;
}

// Candidate (khg, k-chunk) pairs: one kernel row's k split into array-row multiples, or (when
// each kernel row is one contiguous run) khg > 1 whole rows per chunk.
std::vector<std::pair<int64_t, int64_t>> TensorUnitSpace::kCandidates(const Chan &ch) const {
  std::vector<std::pair<int64_t, int64_t>> ks;
  for (int64_t v = ctx_.hw->tensorRows; v < ch.Kl; v += ctx_.hw->tensorRows)
    ks.push_back({1, v});
  ks.push_back({1, ch.Kl});
  if (ch.KWl == 1)
    for (int64_t khg = 2; khg <= plan_.conv.KH; ++khg)
      ks.push_back({khg, khg * ch.Kl});
  return ks;
}

TensorUnitSpace::Best TensorUnitSpace::search(const Chan &ch, int nb) const {
  const ConvParams &c = plan_.conv;
  const Hw &hw = *ctx_.hw;
  const int64_t maxDim = hw.maxDim();
  Best best;
  if (ctx_.naiveTiling) { // the ablation baseline: array-sized tiles, one output row per tile
    int64_t toc = std::min<int64_t>(hw.tensorCols, c.ocg());
    int64_t tk = std::min<int64_t>(hw.tensorRows, ch.Kl);
    if (fits(ch, nb, toc, tk, 1))
      best = {toc, tk, 1, 1, false, false, cost(ch, nb, toc, tk, 1, 1, false, false), 0};
    return best;
  }
  const std::vector<std::pair<int64_t, int64_t>> ks = kCandidates(ch);
  for (int64_t toc : tocCandidates()) {
    if (toc > maxDim)
      continue;
    for (auto [khg, tk] : ks) {
      if (tk > maxDim || !fits(ch, nb, toc, tk, 1))
        continue;
      int64_t lo = 1, hi = c.OH; // largest feasible toh (feasibility is monotone in toh)
      while (lo < hi) {
        int64_t mid = (lo + hi + 1) / 2;
        if (fits(ch, nb, toc, tk, mid))
          lo = mid;
        else
          hi = mid - 1;
      }
      for (bool nin : {false, true})
        for (bool rowOuter : {false, true}) {
          if ((nin && !batchInnerPossible(ch)) ||
              (rowOuter && !rowOuterPossible(ch, toc, lo, khg, nin)))
            continue;
          Best cand{toc,
                    tk,
                    lo,
                    khg,
                    nin,
                    rowOuter,
                    cost(ch, nb, toc, tk, lo, khg, nin, rowOuter),
                    dramBytes(ch, toc, lo, nin, rowOuter)};
          if (best.toc == 0 || cand.beats(best))
            best = cand;
        }
    }
  }
  return best;
}

std::vector<Decision> TensorUnitSpace::decisions() const {
  const ConvParams &c = plan_.conv;
  std::set<int64_t> tks;
  bool rowFold = false;
  for (int64_t tic : ticCandidates()) {
    Chan ch = chanFor(tic);
    rowFold = rowFold || ch.KWl == 1;
    for (auto [khg, tk] : kCandidates(ch))
      tks.insert(tk);
  }
  std::vector<int64_t> khgs = {1}, tohs, buffers = {1};
  if (rowFold)
    for (int64_t khg = 2; khg <= c.KH; ++khg)
      khgs.push_back(khg);
  for (int64_t toh = 1; toh <= c.OH; ++toh)
    tohs.push_back(toh);
  if (ctx_.doubleBuffer)
    buffers.push_back(2);
  std::vector<Decision> ds = {{"buffers", buffers},
                              {"tic", ticCandidates()},
                              {"toc", tocCandidates()},
                              {"khg", khgs},
                              {"tk", std::vector<int64_t>(tks.begin(), tks.end())},
                              {"toh", tohs},
                              {"kouter", {0, 1}}};
  if (hasBatchDecision())
    ds.push_back({"nin", {0, 1}});
  if (hasRowDecision())
    ds.push_back({"rowouter", {0, 1}});
  return ds;
}

std::optional<Reject> TensorUnitSpace::whyIllegal(const Schedule &s) const {
  if (pre_)
    return pre_;
  if (std::optional<Reject> r = checkShape(s))
    return r;
  const int nb = static_cast<int>(s.get("buffers"));
  const int64_t toc = s.get("toc"), tk = s.get("tk"), khg = s.get("khg"), toh = s.get("toh");
  const Chan ch = chanFor(s.get("tic"));
  const auto ks = kCandidates(ch);
  if (std::find(ks.begin(), ks.end(), std::pair<int64_t, int64_t>{khg, tk}) == ks.end()) {
    std::string pairs;
    for (auto [h, k] : ks)
      pairs += fmt::format("{}({}, {})", pairs.empty() ? "" : ", ", h, k);
    return kernelReject(RejectKind::Unsupported,
                        fmt::format("tensor-unit: (khg, tk) = ({}, {}) is not a k split of tic = "
                                    "{}; legal (khg, tk): {}",
                                    khg, tk, ch.tic, pairs));
  }
  if (toc > ctx_.hw->maxDim() || tk > ctx_.hw->maxDim() || !fits(ch, nb, toc, tk, toh))
    return kernelReject(RejectKind::Capacity,
                        fmt::format("tensor-unit: a tile of toh = {} rows x toc = {} channels, "
                                    "tk = {}, tic = {}, buffers = {} does not fit the on-chip "
                                    "buffers or the instruction fields",
                                    toh, toc, tk, ch.tic, nb));
  const bool nin = imagesInside(s);
  if (nin && !batchInnerPossible(ch)) {
    const std::string why =
        ch.ICB != 1
            ? fmt::format("needs one input-channel block (tic = {} makes {})", ch.tic, ch.ICB)
        : !ctx_.batchWeightReuse ? std::string("is off (--no-batch-weight-reuse)")
                                 : std::string("is not part of the naive tiling (ablation)");
    return kernelReject(RejectKind::Unsupported,
                        fmt::format("tensor-unit: nin = 1 (images inside the output-channel "
                                    "blocks) {}; legal nin: 0",
                                    why));
  }
  if (nin && s.get("kouter") == 1)
    return kernelReject(RejectKind::Unsupported,
                        "tensor-unit: kouter = 1 keeps an image's input chunks across the "
                        "output-channel blocks, which nin = 1 runs outside the images; legal "
                        "with nin = 1: kouter = 0");
  if (s.get("kouter") == 1 && !kOuterPossible(ch, nb, toc, tk, toh, khg))
    return kernelReject(RejectKind::Unsupported,
                        "tensor-unit: kouter = 1 needs an input loaded once in several k-chunks, "
                        "more than one output-channel block, and room for every block's weights "
                        "and accumulator tile; legal kouter: 0");
  if (rowsOutside(s) && !rowOuterPossible(ch, toc, toh, khg, nin))
    return kernelReject(RejectKind::Unsupported,
                        fmt::format("tensor-unit: rowouter = 1 needs more than one row tile (toh = "
                                    "{} of {} rows) and output-channel block (toc = {} of {}), "
                                    "one input-channel block (tic = {} makes {}), nin = 0, an "
                                    "input the tiles copy (not one resident and read in place) "
                                    "and not the naive tiling; legal rowouter: 0",
                                    toh, plan_.conv.OH, toc, plan_.conv.ocg(), ch.tic, ch.ICB));
  return std::nullopt;
}

std::vector<Schedule> TensorUnitSpace::enumerate(size_t limit) const {
  // The decisions' product is large (tk and toh alone can be 30 x 56); walk the structure
  // instead: per channel blocking its k splits, and toh only while the tile fits (monotone).
  std::vector<Schedule> all;
  if (pre_)
    return all;
  const std::vector<int64_t> buffers = decisions().front().values;
  for (int64_t nb : buffers)
    for (int64_t tic : ticCandidates()) {
      const Chan ch = chanFor(tic);
      for (int64_t toc : tocCandidates())
        for (auto [khg, tk] : kCandidates(ch))
          for (int64_t toh = 1; toh <= plan_.conv.OH; ++toh) {
            Schedule s;
            s.strategy = Strategy::TensorUnit;
            s.set("buffers", nb).set("tic", tic).set("toc", toc).set("khg", khg).set("tk", tk);
            s.set("toh", toh).set("kouter", 0);
            if (hasBatchDecision())
              s.set("nin", 0);
            if (hasRowDecision())
              s.set("rowouter", 0);
            if (whyIllegal(s))
              break;
            all.push_back(s);
            if (kOuterPossible(ch, static_cast<int>(nb), toc, tk, toh, khg))
              all.push_back(Schedule(s).set("kouter", 1));
            if (batchInnerPossible(ch))
              all.push_back(Schedule(s).set("nin", 1));
            if (rowOuterPossible(ch, toc, toh, khg, false))
              all.push_back(Schedule(s).set("rowouter", 1));
          }
    }
  return sample(std::move(all), limit);
}

Expected<Schedule, Reject> TensorUnitSpace::defaultPoint() const {
  if (pre_)
    return unexpected(*pre_);
  const ConvParams &c = plan_.conv;
  const int nb = ctx_.doubleBuffer ? 2 : 1;
  // Channel blocking at L1, largest block first, when the whole channel depth does not fit.
  Chan ch = chanFor(c.icg());
  Best best;
  for (int64_t tic : ticCandidates()) {
    ch = chanFor(tic);
    if ((best = search(ch, nb)).toc != 0)
      break;
  }
  if (best.toc == 0)
    return unexpected(kernelReject(
        RejectKind::Capacity, fmt::format("no tiling of {}x{} output rows of width {} ({} input "
                                          "channels per group) fits the on-chip buffers",
                                          c.OH, c.OC, c.OW, c.icg())));
  Schedule s;
  s.strategy = Strategy::TensorUnit;
  s.set("buffers", nb).set("tic", ch.tic).set("toc", best.toc).set("khg", best.khg);
  s.set("tk", best.tk).set("toh", best.toh);
  s.set("kouter",
        !best.nin && kOuterPossible(ch, nb, best.toc, best.tk, best.toh, best.khg) ? 1 : 0);
  if (hasBatchDecision())
    s.set("nin", best.nin ? 1 : 0);
  if (hasRowDecision())
    s.set("rowouter", best.rowOuter ? 1 : 0);
  return s;
}

double TensorUnitSpace::cost(const Schedule &s) const {
  NPUC_ASSERT(!pre_, "cost() of a point of a space without points");
  return cost(chanFor(s.get("tic")), static_cast<int>(s.get("buffers")), s.get("toc"), s.get("tk"),
              s.get("toh"), s.get("khg"), imagesInside(s), rowsOutside(s));
}

std::unique_ptr<KernelSpace> makeTensorUnitSpace(const GroupPlan &p, const graph::Graph &g,
                                                 const SpaceContext &ctx) {
  return std::make_unique<TensorUnitSpace>(p, g, ctx);
}

} // namespace npuc::npu
