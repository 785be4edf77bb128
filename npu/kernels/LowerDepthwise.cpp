// LowerDepthwise.cpp - depthwise convolutions (group == C == OC) on the vector unit.
//
// On the tensor unit a depthwise conv is a grouped conv with one channel per group: each matmul
// uses one of the array's columns and one of its rows, so it runs at 1/(rows*cols) of the peak.
// The vector unit does it at full lane rate instead: with the NHWC tile in L1 (channels
// innermost), one kernel tap over a whole tile is a single 3-D vector op over (channel, ox, oy)
// whose src1 is the input tile viewed at the tap's offset with strides (1, SW*tc, SH*Wp*tc) and
// whose src2 is the tap's per-channel weight vector broadcast with strides (1, 0, 0). The first
// tap multiplies into the fp32 accumulator (`mul`), the others accumulate (`mac`), then the fused
// epilogue (bias first) rounds to fp16 in L1 and the tile is stored.
//
// Data flow per tile (toh output rows x OW x tc channels): DRAM -> L1 (input rows with their
// halo; zero padding by the DMA) -> vector unit -> accumulator -> epilogue -> L1 -> DRAM. The
// fp32 weights [KH*KW][C] are loaded to L1 once. Input, accumulator, output and residual tiles
// have two copies when double buffering (indexed by the tile counter's parity).
//
// int8 targets: the input tile is int8 and the weights are the per-channel int8 weights
// dequantised to fp32 (what the quantised reference multiplies by), so the accumulator holds
// real values over the input's scale and the epilogue requantises (withQuantEpilogue). Without
// `mac` (npu-int8), each later tap is a `mul` into a scratch tile plus an `add`.
//
// lowerConvKernel picks this kernel for a depthwise group when the target's vector unit has
// `mac` and the estimate is below the tensor-unit kernel's; both estimates go to the tiling text.
#include "npu/hw/Quant.h"
#include "npu/kernels/Kernels.h"

#include "support/Error.h"

#include <algorithm>
#include <cstring>
#include <fmt/format.h>
#include <limits>

namespace npuc::npu {

using namespace tir;

namespace {

struct DwTile {
  int64_t tc = 0, toh = 0;
  double cost = 0;
};

} // namespace

Kernel lowerDepthwiseKernel(const GroupPlan &plan, const graph::Graph &g, Builder &b,
                            const DramCtx &d, const KernelOptions &o) {
  const Hw &hw = b.hw();
  const isa::Target &t = *hw.t;
  const ConvParams &c = plan.conv;
  Kernel k;
  NPUC_ASSERT(plan.depthwise && c.G == c.C && c.OC == c.C,
              "analyzeGroup marks only convs with one input and one output channel per group");
  // Later taps accumulate with `mac`, or on int8 targets without it with `mul` + `add`.
  const bool useMac = hw.vectorHas("mac");
  if (!hw.vectorHas("mul") || !(useMac || (hw.quantised() && hw.vectorHas("add")))) {
    k.reject = "the target's vector unit has no 'mac' (or 'mul') op";
    return k;
  }
  const isa::ElemType act = hw.act;
  const int64_t eb = hw.actBytes();
  GroupPlan p = withBiasEpilogue(plan);
  if (hw.quantised())
    p = withQuantEpilogue(p, nullptr);
  for (const EpilogueOp &e : p.epilogue)
    if (!hw.vectorHas(e.op)) {
      k.reject = "the target's vector unit has no '" + e.op + "' op for the epilogue";
      return k;
    }
  const int64_t C = c.C, taps = c.KH * c.KW;
  const int64_t kh = (c.KH - 1) * c.DH + 1, kw = (c.KW - 1) * c.DW + 1; // kernel extents
  const int64_t Wp = std::max(c.W + c.padL, (c.OW - 1) * c.SW + kw);
  const int64_t padB = std::max<int64_t>(0, (c.OH - 1) * c.SH + kh - c.H - c.padT);
  const int64_t maxDim = hw.maxDim();
  // The DMA pads a tile row by row: a pad wider than the kernel would leave a tile of pure
  // padding (the DMA requires pad_lo + pad_hi <= n), and pads must fit their fields.
  if (c.padT >= kh || padB >= kh || c.padL >= kw || Wp - c.W - c.padL >= kw ||
      c.padT > Hw::fieldMax(hw.ld, "pad2_lo") || padB > Hw::fieldMax(hw.ld, "pad2_hi") ||
      c.padL > Hw::fieldMax(hw.ld, "pad1_lo") ||
      Wp - c.W - c.padL > Hw::fieldMax(hw.ld, "pad1_hi")) {
    k.reject = "padding wider than the kernel or than the DMA's pad fields";
    return k;
  }
  if (C > maxDim || taps > maxDim || C > Hw::fieldMax(hw.ld, "dst_s1")) {
    k.reject =
        fmt::format("{} channels x {} taps of weights exceed the instruction fields", C, taps);
    return k;
  }

  std::vector<View> consts;
  std::vector<Stmt> prologue;
  k.reject = stageEpilogueConstants(p, b, d, consts, prologue);
  if (!k.reject.empty())
    return k;
  // Weights as fp32 [KH*KW][C] (the vector unit computes in fp32; no fp16 rounding of weights;
  // int8 targets: the per-channel int8 weights, dequantised).
  std::vector<float> wsrc = c.weights;
  if (hw.quantised()) {
    std::vector<int8_t> q;
    std::vector<float> sc = quantiseWeights(c.weights, C, q);
    for (size_t i = 0; i < wsrc.size(); ++i)
      wsrc[i] = dequantise(q[i], sc[i / static_cast<size_t>(taps)]);
  }
  std::vector<float> wv(static_cast<size_t>(taps * C));
  for (int64_t ch = 0; ch < C; ++ch)
    for (int64_t tp = 0; tp < taps; ++tp)
      wv[static_cast<size_t>(tp * C + ch)] = wsrc[static_cast<size_t>(ch * taps + tp)];
  std::vector<uint8_t> wbytes(wv.size() * 4);
  std::memcpy(wbytes.data(), wv.data(), wbytes.size());
  OnChip wbuf{"w_l1", hw.l1, taps * C * 4, 1};
  if (!b.reserve(wbuf)) {
    k.reject = "no room in L1 for the depthwise weights";
    return k;
  }
  {
    View wsrc{hw.dram, imm(d.addConst(wbytes)), isa::ElemType::F32};
    wsrc.s1 = imm(C);
    View wdst{hw.l1, imm(wbuf.base), isa::ElemType::F32};
    wdst.s1 = imm(C);
    prologue.push_back(b.load(wsrc, wdst, Dims{imm(C), imm(taps), imm(1)}));
  }

  const int nb = o.doubleBuffer ? 2 : 1;
  const int nres = tensorOperands(p);
  const int64_t epi = epilogueOpsPerElement(p);
  auto rowsFor = [&](int64_t toh) { return (toh - 1) * c.SH + kh; };
  auto al = [&](int level, int64_t bytes) { return alignUp(bytes, hw.alignment(level)); };
  // On-chip strides the tile views use: ld/st L1 side and the vector operands.
  int64_t ldStride = std::min(Hw::fieldMax(hw.ld, "dst_s1"), Hw::fieldMax(hw.ld, "dst_s2"));
  int64_t vStride = INT64_MAX;
  for (const char *f : {"dst_s1", "dst_s2", "src1_s1", "src1_s2"})
    vStride = std::min(vStride, Hw::fieldMax(hw.vop, f));
  const int64_t l1Free = b.freeBytes(hw.l1), accFree = b.freeBytes(hw.acc);
  auto fits = [&](int64_t tc, int64_t toh) {
    int64_t rows = rowsFor(toh), M = toh * c.OW;
    if (tc > maxDim || Wp > maxDim || rows > maxDim || c.OW > maxDim || toh > maxDim || M > maxDim)
      return false;
    if (tc * Wp > ldStride || tc * c.SH * Wp > vStride || tc * c.OW > vStride)
      return false;
    if (al(hw.acc, M * tc * 4) * (nb + (useMac ? 0 : 1)) > accFree) // + the products' scratch
      return false;
    return nb * (al(hw.l1, rows * Wp * tc * eb) + al(hw.l1, M * tc * eb) * (1 + nres)) <= l1Free;
  };
  // Estimated cycles: the tiles replayed through the simulator's formulas (docs/SIMULATOR.md,
  // without bank conflicts) as a small event simulation: a DMA holds its engine for its transfer,
  // queued first-come first-served on the one DRAM bandwidth, plus its fixed latency; the vector
  // unit runs the taps, then the epilogue, of each tile. A tile's input load waits for the taps
  // of the tile that used its buffer `nb` tiles earlier, its epilogue for the store of that
  // tile's output. Replaying matters: with one big and one small row tile per channel block a
  // big load cannot hide behind the small tile's compute, which a sum-of-work model misses.
  const double lanes = t.vector.lanes, bw = t.dram.bytesPerCycle;
  const double vLat = hw.vop->timing.latency;
  const double ldFixed = hw.ld->timing.latency + t.dram.latency;
  const double stFixed = hw.st->timing.latency + t.dram.latency;
  const int64_t tapOps = useMac ? taps : 2 * taps - 1; // vector ops per tile for the taps
  auto cost = [&](int64_t tc, int64_t toh) {
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
    double dramFree = double(taps * C * 4) / bw; // the weights, loaded first
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
        for (int r = 0; r < nres; ++r)
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
  };
  DwTile best;
  std::vector<int64_t> tcs = {C};
  for (int64_t v = t.vector.lanes; v < C; v += t.vector.lanes)
    tcs.push_back(v);
  for (int64_t tc : tcs)
    for (int64_t toh = 1; toh <= c.OH && fits(tc, toh); ++toh) {
      double cst = cost(tc, toh);
      if (best.tc == 0 || cst < best.cost * 0.999 ||
          (cst <= best.cost * 1.001 && tc * toh > best.tc * best.toh))
        best = {tc, toh, cst};
    }
  if (best.tc == 0) {
    k.reject =
        fmt::format("no depthwise tile of a {}-wide output row fits the on-chip buffers", c.OW);
    return k;
  }
  const int64_t tc = best.tc, toh = best.toh, CB = ceilDiv(C, tc), OHB = ceilDiv(c.OH, toh);
  const int64_t M = toh * c.OW, rowsMax = rowsFor(toh);
  OnChip xbuf{"x_l1", hw.l1, rowsMax * Wp * tc * eb, nb};
  OnChip obuf{"y_l1", hw.l1, M * tc * eb, nb};
  OnChip cbuf{"c_acc", hw.acc, M * tc * 4, nb};
  // The products of the later taps without `mac`: one copy (the vector unit runs in order).
  OnChip tbuf{"t_acc", hw.acc, M * tc * 4, 1};
  bool ok = b.reserve(xbuf) && b.reserve(obuf) && b.reserve(cbuf) && (useMac || b.reserve(tbuf));
  std::vector<OnChip> rbufs;
  for (int i = 0; i < nres; ++i) {
    rbufs.push_back(OnChip{fmt::format("r{}_l1", i), hw.l1, M * tc * eb, nb});
    ok = ok && b.reserve(rbufs.back());
  }
  NPUC_ASSERT(ok, "the chosen depthwise tile was checked to fit every level");

  Var n = Var::make("n"), cb = Var::make("cb"), hb = Var::make("ohb"), tap = Var::make("tap");
  Expr it = (Expr(n) * CB + cb) * OHB + hb; // tile counter: buffer parity
  Expr c0 = Expr(cb) * tc;                  // first channel of the tile
  Expr tcc = min(imm(tc), C - c0);
  Expr tohc = min(imm(toh), c.OH - Expr(hb) * toh);
  Expr ih0 = Expr(hb) * (toh * c.SH) - c.padT;
  Expr rows = (tohc - 1) * c.SH + kh;
  Pad pad;
  pad.lo[1] = imm(c.padL);
  pad.hi[1] = imm(Wp - c.W - c.padL);
  pad.lo[2] = max(imm(0), imm(0) - ih0);
  pad.hi[2] = max(imm(0), ih0 + rows - c.H);
  const int64_t xAddr = d.addrOf(plan.input), yAddr = d.addrOf(plan.output);
  View xsrc{d.level(plan.input, hw),
            imm(xAddr) + (((Expr(n) * c.H + max(ih0, 0)) * c.W) * C + c0) * eb, act};
  xsrc.s1 = imm(C);
  xsrc.s2 = imm(c.W * C);
  View xdst{hw.l1, xbuf.at(it), act};
  xdst.s1 = tcc;
  xdst.s2 = tcc * Wp;
  std::vector<Stmt> body = {b.load(xsrc, xdst, Dims{tcc, imm(Wp), rows}, pad)};

  // The taps: (channel, ox, oy) views of the input tile and the tap's weight vector.
  View acc3{hw.acc, cbuf.at(it), isa::ElemType::F32};
  acc3.s1 = tcc;
  acc3.s2 = tcc * c.OW;
  auto tapIn = [&](const Expr &th, const Expr &tw) {
    View v{hw.l1, xbuf.at(it) + ((th * (c.DH * Wp) + tw * c.DW) * tcc) * eb, act};
    v.s1 = tcc * c.SW;
    v.s2 = tcc * (c.SH * Wp);
    return v;
  };
  auto tapW = [&](const Expr &tp) {
    View v{hw.l1, imm(wbuf.base) + (tp * C + c0) * 4, isa::ElemType::F32};
    v.s0 = imm(1);
    v.s1 = imm(0);
    v.s2 = imm(0);
    return v;
  };
  Dims td{tcc, imm(c.OW), tohc};
  body.push_back(b.vector("mul", acc3, tapIn(imm(0), imm(0)), tapW(imm(0)), td));
  if (taps > 1 && useMac)
    body.push_back(forLoop(
        tap, imm(1), imm(taps - 1),
        b.vector("mac", acc3, tapIn(floordiv(tap, c.KW), floormod(tap, c.KW)), tapW(tap), td)));
  if (taps > 1 && !useMac) {
    View prod = acc3;
    prod.addr = imm(tbuf.base);
    body.push_back(forLoop(
        tap, imm(1), imm(taps - 1),
        seq({b.vector("mul", prod, tapIn(floordiv(tap, c.KW), floormod(tap, c.KW)), tapW(tap), td),
             b.vector("add", acc3, acc3, prod, td)})));
  }

  // Epilogue operands of this tile: per-channel constants at c0, residual tiles loaded.
  Expr Mc = tohc * c.OW;
  Expr elem0 = ((Expr(n) * c.OH + Expr(hb) * toh) * c.OW) * C + c0;
  // Constants and per-channel/scalar tensors staged once (Epilogue.cpp), offset to channel c0.
  std::vector<View> ops = operandsAtChannel(p, consts, c0);
  stageTensorOperands(p, b, d, rbufs, it, elem0, C, tcc, Mc, ops, body);
  View acc{hw.acc, cbuf.at(it), isa::ElemType::F32};
  acc.s1 = tcc;
  View out{hw.l1, obuf.at(it), act};
  out.s1 = tcc;
  Dims ed{tcc, Mc, imm(1)};
  View ydst{d.level(plan.output, hw), imm(yAddr) + elem0 * eb, act};
  ydst.s1 = imm(C);
  appendEpilogueAndStore(p, b, acc, acc, out, ydst, ops, ed, body);

  prologue.push_back(forLoop(
      n, imm(0), imm(c.N), forLoop(cb, imm(0), imm(CB), forLoop(hb, imm(0), imm(OHB), seq(body)))));
  k.body = b.wrapAllocations(seq(prologue));
  const int64_t outElems = c.N * c.OH * c.OW * C;
  k.macs = c.macs();
  k.vectorElems = outElems * (tapOps + epi);
  k.dramBytes = numElements(g.value(plan.input).shape) * eb + taps * C * 4 +
                outElems * eb * (1 + nres) + broadcastOperandBytes(p, eb);
  k.estCycles = best.cost;
  k.tiling = fmt::format(
      "depthwise on the vector unit: tile = {} output rows x {} cols x {} channels; {} taps "
      "({}) + {} epilogue op(s) per element into fp32 '{}'; L1: input {}x{}x{} + fp32 "
      "weights {}x{}{}; {}; estimated {:.0f} cycles",
      toh, c.OW, tc, taps, useMac ? "mul, then mac" : "mul, then mul + add", epi,
      t.levels.at(static_cast<size_t>(hw.acc)).name, rowsMax, Wp, tc, taps, C,
      nres ? fmt::format(" + {} residual", nres) : "",
      o.doubleBuffer ? "double-buffered" : "single-buffered", best.cost);
  return k;
}

Kernel lowerConvKernel(const GroupPlan &p, const graph::Graph &g, Builder &b, const DramCtx &d,
                       const KernelOptions &o) {
  // The vector unit needs `mac`, or on int8 targets `mul` + `add` (fp16 targets without `mac`
  // keep the tensor unit, as before).
  const Hw &hw = b.hw();
  if (!p.depthwise || !(hw.vectorHas("mac") || (hw.quantised() && hw.vectorHas("add"))))
    return lowerMatmulKernel(p, g, b, d, o);
  // Dry runs in scratch builders with no constants placed, to compare the two estimates.
  // They see the group's window of each level (Compile.cpp), as the chosen kernel will.
  DramCtx dry{d.addrOf, [](const std::vector<uint8_t> &) { return int64_t(0); }, d.levelOf};
  Builder bv(b.hw(), false, b.window()), bm(b.hw(), false, b.window());
  Kernel v = lowerDepthwiseKernel(p, g, bv, dry, o);
  Kernel m = lowerMatmulKernel(p, g, bm, dry, o);
  if (!v.reject.empty()) {
    Kernel k = lowerMatmulKernel(p, g, b, d, o);
    k.tiling += "; not on the vector unit: " + v.reject;
    return k;
  }
  if (m.reject.empty() && m.estCycles <= v.estCycles) {
    Kernel k = lowerMatmulKernel(p, g, b, d, o);
    k.tiling += fmt::format("; cheaper than the vector unit's depthwise kernel (estimated {:.0f} "
                            "cycles)",
                            v.estCycles);
    return k;
  }
  Kernel k = lowerDepthwiseKernel(p, g, b, d, o);
  k.tiling += m.reject.empty()
                  ? fmt::format(" (tensor-unit grouped conv: estimated {:.0f})", m.estCycles)
                  : " (tensor-unit grouped conv: " + m.reject + ")";
  return k;
}

} // namespace npuc::npu
