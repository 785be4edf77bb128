// DepthwiseSpace.cpp - the depthwise conv kernel's decisions, constraints, cost model and default
// search (the lowering of a point: npu/kernels/LowerDepthwise.cpp).
#include "npu/kernels/Depthwise.h"

#include "npu/hw/Quant.h"
#include "npu/kernels/KernelSpaces.h"
#include "npu/kernels/SpaceSupport.h"
#include "support/Error.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace npuc::npu {

DepthwiseSpace::DepthwiseSpace(const GroupPlan &plan, const graph::Graph &g,
                               const SpaceContext &ctx)
    : plan_(plan), p_(withBiasEpilogue(plan)), g_(g), ctx_(ctx) {
  const Hw &hw = *ctx.hw;
  const ConvParams &c = plan.conv;
  NPUC_ASSERT(plan.depthwise && c.G == c.C && c.OC == c.C,
              "analyzeGroup marks only convs with one input and one output channel per group");
  // Later taps accumulate with `mac`, or on int8 targets without it with `mul` + `add`.
  useMac_ = hw.vectorHas(isa::VecOp::Mac);
  taps_ = c.KH * c.KW;
  kh_ = (c.KH - 1) * c.DH + 1, kw_ = (c.KW - 1) * c.DW + 1; // kernel extents
  Wp_ = std::max(c.W + c.padL, (c.OW - 1) * c.SW + kw_);
  if (!hw.vectorHas(isa::VecOp::Mul) || !(useMac_ || (hw.quantised() && hw.vectorHas(isa::VecOp::Add)))) {
    pre_ = kernelReject(RejectKind::Unsupported,
                        "the target's vector unit has no 'mac' (or 'mul') op");
    return;
  }
  if (hw.quantised())
    p_ = withQuantEpilogue(p_, nullptr);
  for (const EpilogueOp &e : p_.epilogue)
    if (!hw.vectorHas(e.op)) {
      pre_ = kernelReject(RejectKind::Unsupported,
                          std::string("the target's vector unit has no '") + isa::vecOpName(e.op) + "' op for the epilogue");
      return;
    }
  const int64_t padB = std::max<int64_t>(0, (c.OH - 1) * c.SH + kh_ - c.H - c.padT);
  // The DMA pads a tile row by row: a pad wider than the kernel would leave a tile of pure
  // padding (the DMA requires pad_lo + pad_hi <= n), and pads must fit their fields.
  if (c.padT >= kh_ || padB >= kh_ || c.padL >= kw_ || Wp_ - c.W - c.padL >= kw_ ||
      c.padT > Hw::fieldMax(hw.ld, "pad2_lo") || padB > Hw::fieldMax(hw.ld, "pad2_hi") ||
      c.padL > Hw::fieldMax(hw.ld, "pad1_lo") ||
      Wp_ - c.W - c.padL > Hw::fieldMax(hw.ld, "pad1_hi")) {
    pre_ = kernelReject(RejectKind::Encoding,
                        "padding wider than the kernel or than the DMA's pad fields");
    return;
  }
  if (c.C > hw.maxDim() || taps_ > hw.maxDim() || c.C > Hw::fieldMax(hw.ld, "dst_s1")) {
    pre_ = kernelReject(
        RejectKind::Encoding,
        fmt::format("{} channels x {} taps of weights exceed the instruction fields", c.C, taps_));
    return;
  }
  // The epilogue's constants and the weights come first in L1; the tiles get what they leave.
  Builder scratch(hw, ctx.fromTop, ctx.window);
  const DramCtx dry = dryDram(ctx);
  std::vector<View> consts;
  std::vector<tir::Stmt> prologue;
  if ((pre_ = stageEpilogueConstants(p_, scratch, dry, consts, prologue)))
    return;
  OnChip wbuf{"w_l1", hw.l1, taps_ * c.C * 4, 1};
  if (!scratch.reserve(wbuf)) {
    pre_ = kernelReject(RejectKind::Capacity, "no room in L1 for the depthwise weights");
    return;
  }
  l1Free_ = scratch.freeBytes(hw.l1);
  accFree_ = scratch.freeBytes(hw.acc);
  nres_ = tensorOperands(p_);
}

std::vector<uint8_t> DepthwiseSpace::weightBytes() const {
  // Weights as fp32 [KH*KW][C] (the vector unit computes in fp32; no fp16 rounding of weights;
  // int8 targets: the per-channel int8 weights, dequantised).
  const ConvParams &c = plan_.conv;
  NPUC_ASSERT(!c.weightsCOC, "a depthwise conv's weights are [C][1][KH][KW]");
  std::vector<float> wsrc = *c.weights;
  if (ctx_.hw->quantised()) {
    std::vector<int8_t> q;
    std::vector<float> sc = quantiseWeights(*c.weights, c.C, q);
    for (size_t i = 0; i < wsrc.size(); ++i)
      wsrc[i] = dequantise(q[i], sc[i / static_cast<size_t>(taps_)]);
  }
  std::vector<float> wv(static_cast<size_t>(taps_ * c.C));
  for (int64_t ch = 0; ch < c.C; ++ch)
    for (int64_t tp = 0; tp < taps_; ++tp)
      wv[static_cast<size_t>(tp * c.C + ch)] = wsrc[static_cast<size_t>(ch * taps_ + tp)];
  std::vector<uint8_t> wbytes(wv.size() * 4);
  std::memcpy(wbytes.data(), wv.data(), wbytes.size());
  return wbytes;
}

bool DepthwiseSpace::fits(int nb, int64_t tc, int64_t toh) const {
  const ConvParams &c = plan_.conv;
  const Hw &hw = *ctx_.hw;
  const int64_t maxDim = hw.maxDim(), eb = hw.actBytes();
  auto al = [&](int level, int64_t bytes) { return alignUp(bytes, hw.alignment(level)); };
  // On-chip strides the tile views use: ld/st L1 side and the vector operands.
  int64_t ldStride = std::min(Hw::fieldMax(hw.ld, "dst_s1"), Hw::fieldMax(hw.ld, "dst_s2"));
  int64_t vStride = INT64_MAX;
  for (const char *f : {"dst_s1", "dst_s2", "src1_s1", "src1_s2"})
    vStride = std::min(vStride, Hw::fieldMax(hw.vop, f));
  int64_t rows = rowsFor(toh), M = toh * c.OW;
  if (tc > maxDim || Wp_ > maxDim || rows > maxDim || c.OW > maxDim || toh > maxDim || M > maxDim)
    return false;
  if (tc * Wp_ > ldStride || tc * c.SH * Wp_ > vStride || tc * c.OW > vStride)
    return false;
  if (al(hw.acc, M * tc * 4) * (nb + (useMac_ ? 0 : 1)) > accFree_) // + the products' scratch
    return false;
  return nb * (al(hw.l1, rows * Wp_ * tc * eb) + al(hw.l1, M * tc * eb) * (1 + nres_)) <= l1Free_;
}

// Estimated cycles: the tiles replayed through the simulator's formulas (docs/SIMULATOR.md,
// without bank conflicts) as a small event simulation: a DMA holds its engine for its transfer,
// queued first-come first-served on the one DRAM bandwidth, plus its fixed latency; the vector
// unit runs the taps, then the epilogue, of each tile. A tile's input load waits for the taps of
// the tile that used its buffer `nb` tiles earlier, its epilogue for the store of that tile's
// output. Replaying matters: with one big and one small row tile per channel block a big load
// cannot hide behind the small tile's compute, which a sum-of-work model misses.
double DepthwiseSpace::cost(int nb, int64_t tc, int64_t toh) const {
  const ConvParams &c = plan_.conv;
  const Hw &hw = *ctx_.hw;
  const isa::Target &t = *hw.t;
  const int64_t C = c.C, eb = hw.actBytes(), epi = epilogueOpsPerElement(p_);
  const double lanes = t.vector.lanes, bw = t.dram.bytesPerCycle;
  const double vLat = hw.vop->timing.latency;
  const double ldFixed = hw.ld->timing.latency + t.dram.latency;
  const double stFixed = hw.st->timing.latency + t.dram.latency;
  const int64_t tapOps = useMac_ ? taps_ : 2 * taps_ - 1; // vector ops per tile for the taps
  const int64_t CB = ceilDiv(C, tc), OHB = ceilDiv(c.OH, toh), T = CB * OHB;
  std::vector<double> inB, elems;
  for (int64_t cbi = 0; cbi < CB; ++cbi)
    for (int64_t hbi = 0; hbi < OHB; ++hbi) {
      const int64_t tcc = std::min(tc, C - cbi * tc), tohc = std::min(toh, c.OH - hbi * toh);
      const int64_t ih0 = hbi * toh * c.SH - c.padT;
      const int64_t rows = std::min(ih0 + rowsFor(tohc), c.H) - std::max<int64_t>(ih0, 0);
      inB.push_back(double(rows * c.W * tcc * eb));
      elems.push_back(double(tcc * tohc * c.OW));
    }
  double dramFree = double(taps_ * C * 4) / bw; // the weights, loaded first
  double ldFree = dramFree + ldFixed, vecFree = 0, stFree = 0;
  auto dma = [&](double start, double bytes, double fixed) {
    dramFree = std::max(start, dramFree) + bytes / bw;
    return dramFree + fixed;
  };
  const size_t nT = static_cast<size_t>(T);
  std::vector<double> ldEnd(nT), tapsEnd(nT), epiEnd(nT), stEnd(nT);
  int64_t li = 0, vi = 0, si = 0; // next load, vector step (2 per tile: taps, epilogue), store
  while (si < T) {
    const double inf = std::numeric_limits<double>::infinity();
    double ldReady = inf, vReady = inf, stReady = inf;
    if (li < T && (li < nb || vi > 2 * (li - nb)))
      ldReady = std::max(ldFree, li < nb ? 0.0 : tapsEnd[size_t(li - nb)]);
    const int64_t vt = vi / 2;
    if (vi < 2 * T && vi % 2 == 0 && li > vt)
      vReady = std::max(vecFree, ldEnd[size_t(vt)]);
    if (vi < 2 * T && vi % 2 == 1 && (vt < nb || si > vt - nb))
      vReady = std::max(tapsEnd[size_t(vt)], vt < nb ? 0.0 : stEnd[size_t(vt - nb)]);
    if (si < vi / 2)
      stReady = std::max(stFree, epiEnd[size_t(si)]);
    NPUC_ASSERT(ldReady < inf || vReady < inf || stReady < inf,
                "some engine can always proceed: the buffers are freed in tile order");
    const double op = vReady < inf ? vLat + std::ceil(elems[size_t(vt)] / lanes) : 0;
    if (ldReady <= vReady && ldReady <= stReady) {
      double end = dma(ldReady, inB[size_t(li)], ldFixed);
      for (int r = 0; r < nres_; ++r)
        end = dma(end, elems[size_t(li)] * eb, ldFixed);
      ldEnd[size_t(li++)] = ldFree = end;
    } else if (vReady <= stReady) {
      vecFree = vReady + double(vi % 2 == 0 ? tapOps : epi) * op;
      (vi % 2 == 0 ? tapsEnd : epiEnd)[size_t(vt)] = vecFree;
      ++vi;
    } else {
      stEnd[size_t(si)] = stFree = dma(stReady, elems[size_t(si)] * eb, stFixed);
      ++si;
    }
  }
  return double(c.N) * stFree;
}

std::vector<int64_t> DepthwiseSpace::tcCandidates() const {
  // All channels first, then multiples of the vector lanes.
  std::vector<int64_t> tcs = {plan_.conv.C};
  for (int64_t v = ctx_.hw->t->vector.lanes; v < plan_.conv.C; v += ctx_.hw->t->vector.lanes)
    tcs.push_back(v);
  return tcs;
}

std::vector<Decision> DepthwiseSpace::decisions() const {
  std::vector<int64_t> tohs, buffers = {1};
  for (int64_t toh = 1; toh <= plan_.conv.OH; ++toh)
    tohs.push_back(toh);
  if (ctx_.doubleBuffer)
    buffers.push_back(2);
  return {{"buffers", buffers}, {"tc", tcCandidates()}, {"toh", tohs}};
}

std::optional<Reject> DepthwiseSpace::whyIllegal(const Schedule &s) const {
  if (pre_)
    return pre_;
  if (std::optional<Reject> r = checkShape(s))
    return r;
  if (!fits(static_cast<int>(s.get("buffers")), s.get("tc"), s.get("toh")))
    return kernelReject(RejectKind::Capacity,
                        fmt::format("depthwise-vector: a tile of toh = {} rows x tc = {} "
                                    "channels, buffers = {} does not fit the on-chip buffers or "
                                    "the instruction fields",
                                    s.get("toh"), s.get("tc"), s.get("buffers")));
  return std::nullopt;
}

Expected<Schedule, Reject> DepthwiseSpace::defaultPoint() const {
  if (pre_)
    return unexpected(*pre_);
  const int nb = ctx_.doubleBuffer ? 2 : 1;
  int64_t bestTc = 0, bestToh = 0;
  double bestCost = 0;
  for (int64_t tc : tcCandidates())
    for (int64_t toh = 1; toh <= plan_.conv.OH && fits(nb, tc, toh); ++toh) {
      double cst = cost(nb, tc, toh);
      if (bestTc == 0 || cst < bestCost * 0.999 ||
          (cst <= bestCost * 1.001 && tc * toh > bestTc * bestToh))
        bestTc = tc, bestToh = toh, bestCost = cst;
    }
  if (bestTc == 0)
    return unexpected(kernelReject(
        RejectKind::Capacity,
        fmt::format("no depthwise tile of a {}-wide output row fits the on-chip buffers",
                    plan_.conv.OW)));
  Schedule s;
  s.strategy = Strategy::DepthwiseVector;
  s.set("buffers", nb).set("tc", bestTc).set("toh", bestToh);
  return s;
}

double DepthwiseSpace::cost(const Schedule &s) const {
  NPUC_ASSERT(!pre_, "cost() of a point of a space without points");
  return cost(static_cast<int>(s.get("buffers")), s.get("tc"), s.get("toh"));
}

std::unique_ptr<KernelSpace> makeDepthwiseSpace(const GroupPlan &p, const graph::Graph &g,
                                                const SpaceContext &ctx) {
  return std::make_unique<DepthwiseSpace>(p, g, ctx);
}

} // namespace npuc::npu
