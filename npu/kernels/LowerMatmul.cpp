// LowerMatmul.cpp - Conv/Gemm/MatMul groups as tiled implicit GEMM on the tensor unit.
//
// Data flow per output tile (toh output rows x OW columns x toc output channels of one conv
// group): DRAM -> L1 (input rows with their halo and zero padding, loaded by the DMA's padding
// support; the weight block of toc channels stays in L1 across the row tiles) -> L0A/L0B (one
// A = [pixels x k-chunk] slice per kernel tap, per kernel row with the columns folded, or per
// group of kernel rows with rows folded too, gathered with strided on-chip DMAs, and the
// matching B = [k-chunk x toc] weight slice) -> tensor unit, accumulating fp32 in the accumulator
// -> vector unit (bias, fused epilogue, rounding to fp16 into L1) -> DRAM. On int8 targets the
// operands are int8 (weights per output channel), the accumulator int32, and the epilogue
// dequantises it and requantises the result to int8 (withQuantEpilogue in Epilogue.cpp). Every
// buffer has two copies when double buffering, indexed by the parity of its tile counter.
#include "npu/kernels/Kernels.h"

#include "npu/hw/Quant.h"
#include "support/Error.h"
#include "support/Half.h"
#include "tir/Substitute.h"

#include <fmt/format.h>

namespace npuc::npu {

using namespace tir;

namespace {

struct Tile {
  int64_t toc = 0, tk = 0, toh = 0;
  int64_t khg = 1; // kernel rows folded into one k-chunk (tk = khg * Kl when > 1)
  double cost = 0;
};

struct Geometry {
  const ConvParams &c;
  int64_t Wp, icg, ocg;
  int64_t rowsFor(int64_t toh) const { return (toh - 1) * c.SH + (c.KH - 1) * c.DH + 1; }
};

} // namespace

Kernel lowerMatmulKernel(const GroupPlan &plan, const graph::Graph &g, Builder &b, const DramCtx &d,
                         const KernelOptions &o) {
  const Hw &hw = b.hw();
  const isa::Target &t = *hw.t;
  const ConvParams &c = plan.conv;
  Kernel k;
  // Activations and weights in the tensor unit's operand dtype: fp16, or int8 on quantised
  // targets, where the weights are quantised per output channel and the epilogue dequantises
  // the int32 accumulator and requantises the result (withQuantEpilogue).
  const isa::ElemType act = hw.act;
  const int64_t eb = hw.actBytes();
  std::vector<int8_t> wq;
  GroupPlan p = withBiasEpilogue(plan);
  // |int8 x int8| <= 128 * 128: a reduction over K terms stays inside int32 (no wrap-around) for
  // K < 2^31 / 2^14 = 131072.
  const int64_t Kred = c.icg() * c.KH * c.KW;
  if (hw.quantised() && Kred >= (int64_t(1) << 17)) {
    k.reject = fmt::format("int8: a reduction over {} products could overflow the int32 "
                           "accumulator (at most 131071)",
                           Kred);
    return k;
  }
  if (hw.quantised()) {
    std::vector<float> dequant = quantiseWeights(c.weights, c.OC, wq);
    for (float &s : dequant)
      s *= plan.quant.in;
    p = withQuantEpilogue(p, &dequant);
  }
  std::vector<View> consts;
  std::vector<Stmt> prologue;
  k.reject = stageEpilogueConstants(p, b, d, consts, prologue);
  if (!k.reject.empty())
    return k;
  const int nb = o.doubleBuffer ? 2 : 1;
  const int nres = tensorOperands(p);
  Geometry geo{c, std::max(c.W + c.padL, (c.OW - 1) * c.SW + (c.KW - 1) * c.DW + 1), c.icg(),
               c.ocg()};
  const int64_t maxDim = hw.maxDim();
  const int64_t maxStride = hw.onChipStrideMax(); // the search skips tiles it cannot encode
  auto al = [&](int level, int64_t bytes) { return alignUp(bytes, hw.alignment(level)); };
  const int64_t l1Free = b.freeBytes(hw.l1);
  const double dramBw = t.dram.bytesPerCycle;
  const double feedBw = t.engines.at(static_cast<size_t>(hw.mov->engine)).bytesPerCycle;
  const int64_t fill = t.tensor.fillLatency;
  const double movLat = hw.mov->timing.latency;
  const int64_t opsPerElem = epilogueOpsPerElement(p);

  // L1 holds the input rows and the weight block of `tic` input channels; tic = icg unless that
  // cannot fit, in which case the channels are blocked at L1 too (accumulating across blocks).
  // With unit horizontal dilation, the KW taps of one kernel row read KW*tic consecutive
  // elements of an input-tile row, so they can form one longer k dimension. That pays when tic is
  // small (the stem's 3 channels would otherwise fill 3 of the array's rows per pass). Such a
  // run of Kl values per kernel row (KWl == 1) also lets khg kernel rows share one k-chunk
  // (the search picks khg): their runs are gathered side by side into A, one mov per row, and
  // their B rows are consecutive in the weight block. ResNet-50's 7x7x3 stem then needs
  // ceil(6*21/16) + ceil(21/16) = 10 passes of a 16-row array instead of 7 * 2 = 14.
  struct Chan {
    int64_t tic, ICB, KWl, Kl;
    bool fold;
  };
  auto chanFor = [&](int64_t tic) {
    // Folding pays when the taps that can share a chunk fill the array better as one k
    // dimension: the whole kernel's (then folding each row's columns is at least as good as not,
    // and rows can fold too), or one row's for the naive ablation, which never folds rows.
    int64_t rowsShared = o.naiveTiling ? 1 : c.KH;
    bool fold = c.DW == 1 && c.KW > 1 &&
                ceilDiv(tic, hw.tensorRows) * c.KW * rowsShared >
                    ceilDiv(rowsShared * c.KW * tic, hw.tensorRows);
    return Chan{tic, ceilDiv(geo.icg, tic), fold ? 1 : c.KW, fold ? c.KW * tic : tic, fold};
  };
  // Per (output tile, channel block) with khg rows per chunk (khg > 1: one chunk per row group):
  // matmuls, array passes over k (ceil(chunk k / rows) per chunk; a narrower last row group is
  // counted as such) and movs (one A mov per kernel row of a group, one B mov).
  struct KSplit {
    int64_t matmuls, passes, movs;
  };
  auto ksplit = [&](const Chan &ch, int64_t tk, int64_t khg) {
    auto passes = [&](int64_t k) { return ceilDiv(k, hw.tensorRows); };
    if (khg == 1) {
      // A narrower last chunk of a run is counted as a full one: that prefers even chunk splits
      // (64 + 64 over 80 + 48) at no cost in passes.
      int64_t KC = ceilDiv(ch.Kl, tk), runs = c.KH * ch.KWl;
      return KSplit{runs * KC, runs * KC * passes(tk), 2 * runs * KC};
    }
    int64_t full = c.KH / khg, rest = c.KH % khg, groups = ceilDiv(c.KH, khg);
    int64_t p = full * passes(khg * ch.Kl) + (rest ? passes(rest * ch.Kl) : 0);
    return KSplit{groups, p, c.KH + groups};
  };
  // An input loaded once (one row tile, one channel block) with several unfolded k-chunks per
  // tap is laid out chunk-major in L1, [KC][rows][Wp][tk], and loaded by one DMA per chunk: the
  // first matmuls then wait for the first chunk only, where one channel-innermost layout would
  // make every gather depend on the whole load (the token pass orders bounding boxes).
  auto chunkedInput = [&](const Chan &ch, int64_t tk, int64_t khg) {
    return !ch.fold && khg == 1 && ch.ICB == 1 && ch.Kl > tk;
  };
  auto fits = [&](const Chan &ch, int64_t toc, int64_t tk, int64_t toh) {
    int64_t M = toh * c.OW;
    int64_t rows = geo.rowsFor(toh);
    if (M > maxDim || toh > maxDim || c.OW > maxDim || rows > maxDim || geo.Wp > maxDim ||
        c.KH * c.KW > maxDim)
      return false;
    for (int64_t stride : {toc * ch.tic, ch.tic * geo.Wp, ch.tic * c.SH * geo.Wp, tk * c.OW})
      if (stride > maxStride)
        return false;
    if (al(hw.l0a, M * tk * eb) * nb > hw.capacity(hw.l0a))
      return false;
    if (al(hw.l0b, tk * toc * eb) * nb > hw.capacity(hw.l0b))
      return false;
    if (al(hw.acc, M * toc * 4) * nb > hw.capacity(hw.acc))
      return false;
    // A chunk-major input (chunkedInput: one row tile) rounds its channels up to whole chunks.
    int64_t xch = toh >= c.OH && chunkedInput(ch, tk, 1) ? ceilDiv(ch.tic, tk) * tk : ch.tic;
    int64_t l1 =
        nb * (al(hw.l1, rows * geo.Wp * xch * eb) + al(hw.l1, c.KH * c.KW * ch.tic * toc * eb) +
              al(hw.l1, M * toc * eb) * (1 + nres));
    return l1 <= l1Free;
  };
  // One row tile and one channel block: the input is loaded once per (image, group) and stays
  // in L1 across the output-channel blocks; otherwise it is reloaded per output tile.
  auto inputBytes = [&](const Chan &ch, int64_t toc, int64_t toh) {
    int64_t OCB = ceilDiv(geo.ocg, toc), OHB = ceilDiv(c.OH, toh);
    double inLoads = OHB == 1 && ch.ICB == 1 ? 1.0 : double(OCB * OHB);
    return double(c.N * c.G) * inLoads * geo.rowsFor(toh) * geo.Wp * geo.icg * eb;
  };
  auto dramBytes = [&](const Chan &ch, int64_t toc, int64_t toh) {
    double wLoads = ch.ICB > 1 ? double(ceilDiv(c.OH, toh)) : 1.0; // per row tile when blocked
    return inputBytes(ch, toc, toh) + double(c.N) * wLoads * c.weights.size() * eb +
           double(c.N * c.OH * c.OW * c.OC) * eb * (1 + nres);
  };
  auto cost = [&](const Chan &ch, int64_t toc, int64_t tk, int64_t toh, int64_t khg) {
    int64_t OCB = ceilDiv(geo.ocg, toc), OHB = ceilDiv(c.OH, toh);
    double M = static_cast<double>(toh * c.OW);
    KSplit ks = ksplit(ch, tk, khg);
    double blocks = double(c.N * c.G * OCB * OHB * ch.ICB); // (output tile, channel block) pairs
    double tensor =
        blocks * (double(ks.matmuls) * fill + M * double(ks.passes * ceilDiv(toc, hw.tensorCols)));
    double inBytes = inputBytes(ch, toc, toh);
    double dram = dramBytes(ch, toc, toh);
    // Every k value of A and B is moved once per block, however k is chunked; each mov also
    // costs its fixed latency (row folding issues one A mov per kernel row).
    double kTot = double(c.KH * c.KW * ch.tic);
    double feed = blocks * ((M * kTot * eb + kTot * toc * eb) / feedBw + double(ks.movs) * movLat);
    double vec = double(c.N * c.OH * c.OW * c.OC) * opsPerElem / t.vector.lanes;
    double parts[4] = {tensor, dram / dramBw, feed, vec};
    double best = 0, sum = 0;
    for (double x : parts) {
      best = std::max(best, x);
      sum += x;
    }
    // Double-buffered, the T output tiles form a pipeline: the busiest resource sets the pace,
    // and the others' share of one tile is exposed once (the first tile's loads, the last
    // tile's epilogue and store). A layer that fits one tile therefore gains from splitting.
    double tiles = double(c.N * c.G * OCB * OHB);
    if (!o.doubleBuffer)
      return sum;
    // An input loaded once precedes every tile, so it is exposed whole, or one k-chunk of it
    // when it is loaded chunk by chunk (see chunkedInput below).
    double exposedIn = 0;
    if (OHB == 1 && ch.ICB == 1)
      exposedIn = inBytes / dramBw / double(chunkedInput(ch, tk, khg) ? ceilDiv(ch.Kl, tk) : 1);
    return best + (sum - best) / tiles + exposedIn;
  };
  // The best (toc, tk, toh) for a channel blocking, or a Tile with toc == 0 when nothing fits.
  auto search = [&](const Chan &ch) {
    Tile best;
    if (o.naiveTiling) { // the ablation baseline: array-sized tiles, one output row per tile
      int64_t toc = std::min<int64_t>(hw.tensorCols, geo.ocg);
      int64_t tk = std::min<int64_t>(hw.tensorRows, ch.Kl);
      if (fits(ch, toc, tk, 1))
        best = {toc, tk, 1, 1, cost(ch, toc, tk, 1, 1)};
      return best;
    }
    std::vector<int64_t> tocs; // candidate channel tiles
    for (int64_t v = hw.tensorCols; v < geo.ocg; v += hw.tensorCols)
      tocs.push_back(v);
    tocs.push_back(geo.ocg);
    // Candidate (khg, k-chunk) pairs: one kernel row's k split into array-row multiples, or (when
    // each kernel row is one contiguous run) khg > 1 whole rows per chunk.
    std::vector<std::pair<int64_t, int64_t>> ks;
    for (int64_t v = hw.tensorRows; v < ch.Kl; v += hw.tensorRows)
      ks.push_back({1, v});
    ks.push_back({1, ch.Kl});
    if (ch.KWl == 1)
      for (int64_t khg = 2; khg <= c.KH; ++khg)
        ks.push_back({khg, khg * ch.Kl});
    for (int64_t toc : tocs) {
      if (toc > maxDim)
        continue;
      for (auto [khg, tk] : ks) {
        if (tk > maxDim || !fits(ch, toc, tk, 1))
          continue;
        int64_t lo = 1, hi = c.OH; // largest feasible toh (feasibility is monotone in toh)
        while (lo < hi) {
          int64_t mid = (lo + hi + 1) / 2;
          if (fits(ch, toc, tk, mid))
            lo = mid;
          else
            hi = mid - 1;
        }
        double cst = cost(ch, toc, tk, lo, khg);
        if (best.toc == 0 || cst < best.cost * 0.999 ||
            (cst <= best.cost * 1.001 && toc * tk * lo > best.toc * best.tk * best.toh))
          best = {toc, tk, lo, khg, cst};
      }
    }
    return best;
  };
  Chan ch = chanFor(geo.icg);
  Tile best = search(ch);
  // Channel blocking at L1, largest block first, when the whole channel depth does not fit.
  for (int64_t tic = (geo.icg - 1) / hw.tensorRows * hw.tensorRows; best.toc == 0 && tic > 0;
       tic -= hw.tensorRows) {
    ch = chanFor(tic);
    best = search(ch);
  }
  if (best.toc == 0) {
    k.reject = fmt::format("no tiling of {}x{} output rows of width {} ({} input channels per "
                           "group) fits the on-chip buffers",
                           c.OH, c.OC, c.OW, geo.icg);
    return k;
  }
  const int64_t toc = best.toc, tk = best.tk, toh = best.toh, tic = ch.tic, ICB = ch.ICB;
  const int64_t khg = best.khg, KHG = ceilDiv(c.KH, khg); // row groups per channel block
  const int64_t OCB = ceilDiv(geo.ocg, toc), OHB = ceilDiv(c.OH, toh), KC = ceilDiv(ch.Kl, tk);
  NPUC_ASSERT(khg == 1 || (ch.KWl == 1 && KC == 1),
              "rows fold only when each kernel row is one contiguous k run, whole rows per chunk");
  const int64_t M = toh * c.OW, rowsMax = geo.rowsFor(toh);
  // An input resident in L1 (Compile.cpp) with one channel block: the A gathers read it where it
  // lives, and the copy into the tile buffer (a feed-engine `mov` ahead of the gathers, which
  // holds them back) is skipped. With nothing to pad the tile would have the tensor's own layout
  // ([rows][W][C]); otherwise each gather pads the taps that fall outside the image itself
  // (xPadded), which needs one kernel tap per gather (no folded columns or rows).
  const bool noPad = geo.Wp == c.W && c.padL == 0 && c.padT == 0 &&
                     (c.OH - 1) * c.SH + (c.KH - 1) * c.DH + 1 <= c.H;
  const bool xDirect = d.level(plan.input, hw) != hw.dram && c.G == 1 && ICB == 1 &&
                       (noPad || (!ch.fold && khg == 1));
  const bool xPadded = xDirect && !noPad;
  const bool chunked = OHB == 1 && !xDirect && chunkedInput(ch, tk, khg);
  const int64_t chunkElems = rowsMax * geo.Wp * tk; // one k-chunk of a chunk-major input
  // k-chunks outermost: with a chunked input loaded once, the output-channel blocks move inside
  // the k loop, each accumulating in its own accumulator tile, and each block's weight rows for
  // a chunk load just before their use. A is then gathered once per chunk instead of once per
  // block, and input and weights stream in together, where the block-outer order leaves the
  // tensor unit waiting for the input's chunks during the first block (MobileNetV2's 14x14
  // pointwise convs). It needs every block's weights in L1 and accumulator tile at once.
  const bool kOuter = [&] {
    if (!chunked || OCB == 1 || o.naiveTiling)
      return false;
    int64_t l1 =
        nb * (al(hw.l1, KC * chunkElems * eb) + al(hw.l1, OCB * c.KH * c.KW * tic * toc * eb) +
              al(hw.l1, M * toc * eb) * (1 + nres));
    return l1 <= l1Free && al(hw.acc, OCB * M * toc * 4) * nb <= hw.capacity(hw.acc);
  }();

  // Weights, block-major: [G][OCB][ICB][KH][KW][tic_b][toc_b] in the operand dtype, each block at a
  // full-block stride (the last channel blocks are narrower).
  const int64_t blockElems = c.KH * c.KW * tic * toc;
  std::vector<uint8_t> wbytes(static_cast<size_t>(c.G * OCB * ICB * blockElems * eb), 0);
  for (int64_t gi = 0; gi < c.G; ++gi)
    for (int64_t ob = 0; ob < OCB; ++ob)
      for (int64_t ib = 0; ib < ICB; ++ib) {
        int64_t tocb = std::min(toc, geo.ocg - ob * toc), ticb = std::min(tic, geo.icg - ib * tic);
        int64_t base = ((gi * OCB + ob) * ICB + ib) * blockElems;
        for (int64_t kh = 0; kh < c.KH; ++kh)
          for (int64_t kw = 0; kw < c.KW; ++kw)
            for (int64_t i = 0; i < ticb; ++i)
              for (int64_t j = 0; j < tocb; ++j) {
                int64_t oc = gi * geo.ocg + ob * toc + j, ic = ib * tic + i;
                size_t src = static_cast<size_t>(((oc * geo.icg + ic) * c.KH + kh) * c.KW + kw);
                size_t at =
                    static_cast<size_t>(eb * (base + ((kh * c.KW + kw) * ticb + i) * tocb + j));
                if (hw.quantised()) {
                  wbytes[at] = static_cast<uint8_t>(wq[src]);
                  continue;
                }
                uint16_t h = floatToHalf(c.weights[src]);
                wbytes[at] = static_cast<uint8_t>(h & 0xff);
                wbytes[at + 1] = static_cast<uint8_t>(h >> 8);
              }
      }
  const int64_t wAddr = d.addConst(wbytes);

  OnChip xbuf{"x_l1", hw.l1, chunked ? KC * chunkElems * eb : rowsMax * geo.Wp * tic * eb, nb};
  OnChip wbuf{"w_l1", hw.l1, (kOuter ? OCB : 1) * blockElems * eb, nb};
  OnChip obuf{"y_l1", hw.l1, M * toc * eb, nb};
  OnChip abuf{"a_l0a", hw.l0a, M * tk * eb, nb};
  OnChip bbuf{"b_l0b", hw.l0b, tk * toc * eb, nb};
  OnChip cbuf{"c_acc", hw.acc, (kOuter ? OCB : 1) * M * toc * 4, nb};
  std::vector<OnChip> rbufs(static_cast<size_t>(nres));
  bool ok = b.reserve(xbuf) && b.reserve(wbuf) && b.reserve(obuf) && b.reserve(abuf) &&
            b.reserve(bbuf) && b.reserve(cbuf);
  for (int i = 0; i < nres; ++i) {
    rbufs[static_cast<size_t>(i)] = OnChip{fmt::format("r{}_l1", i), hw.l1, M * toc * eb, nb};
    ok = ok && b.reserve(rbufs[static_cast<size_t>(i)]);
  }
  NPUC_ASSERT(ok, "the chosen tiling was checked to fit every level");

  const int64_t xAddr = d.addrOf(plan.input), yAddr = d.addrOf(plan.output);
  Var n = Var::make("n"), gi = Var::make("g"), ob = Var::make("ocb"), hb = Var::make("ohb");
  Var ib = Var::make("icb"), hg = Var::make("khg"), kr = Var::make("kr"), kw = Var::make("kw"),
      kc = Var::make("kc");
  Expr itO = (Expr(n) * c.G + gi) * OCB + ob; // output-channel-block counter
  Expr it = itO * OHB + hb;                   // output-tile counter
  Expr itx = it * ICB + ib;                   // input-block counter
  // A single row tile and channel block: the input tile is the same for every output-channel
  // block, so it is loaded once per (image, group), before the ob loop (the cost model counts
  // it so), and its buffer counter skips ob.
  const bool inputOnce = OHB == 1 && ICB == 1;
  Expr itIn = inputOnce ? Expr(n) * c.G + gi : itx;
  Expr wpar = ICB == 1 ? itO : itx; // weight-block counter
  Expr tocb = min(imm(toc), geo.ocg - Expr(ob) * toc);
  Expr ticb = min(imm(tic), geo.icg - Expr(ib) * tic);
  Expr tohc = min(imm(toh), c.OH - Expr(hb) * toh);
  Expr Mc = tohc * c.OW;
  Expr oc0 = Expr(gi) * geo.ocg + Expr(ob) * toc; // first output channel of the tile
  // Where block ob's weights and accumulator tile live: k-outer keeps every block's per image.
  Expr img = Expr(n) * c.G + gi;
  Expr wslot = kOuter ? wbuf.at(img) + Expr(ob) * (blockElems * eb) : wbuf.at(wpar);
  Expr cslot = kOuter ? cbuf.at(img) + Expr(ob) * (M * toc * 4) : cbuf.at(it);

  // Weight block -> L1: once per output-channel block when the channels are not blocked (it then
  // stays across the row tiles), else per (row tile, channel block).
  auto weightLoad = [&](const Expr &icb) {
    Expr ticbW = min(imm(tic), geo.icg - icb * tic);
    View wsrc{hw.dram, imm(wAddr) + (((Expr(gi) * OCB + ob) * ICB + icb) * blockElems) * eb, act};
    wsrc.s1 = tocb;
    wsrc.s2 = tocb * ticbW;
    View wdst{hw.l1, wslot, act};
    wdst.s1 = wsrc.s1;
    wdst.s2 = wsrc.s2;
    return b.load(wsrc, wdst, Dims{tocb, ticbW, imm(c.KH * c.KW)});
  };

  // Input rows (with halo) of one channel block -> L1, zero padding by the DMA.
  Expr ih0 = Expr(hb) * (toh * c.SH) - c.padT;
  Expr rows = (tohc - 1) * c.SH + (c.KH - 1) * c.DH + 1;
  Pad pad;
  pad.lo[1] = imm(c.padL);
  pad.hi[1] = imm(geo.Wp - c.W - c.padL);
  pad.lo[2] = max(imm(0), imm(0) - ih0);
  pad.hi[2] = max(imm(0), ih0 + rows - c.H);
  View xsrc{
      d.level(plan.input, hw),
      imm(xAddr) +
          (((Expr(n) * c.H + max(ih0, 0)) * c.W) * c.C + Expr(gi) * geo.icg + Expr(ib) * tic) * eb,
      act};
  xsrc.s1 = imm(c.C);
  xsrc.s2 = imm(c.W * c.C);
  View xdst{hw.l1, xbuf.at(itIn), act};
  xdst.s1 = ticb;
  xdst.s2 = ticb * geo.Wp;
  std::vector<Stmt> blockBody;
  if (ICB > 1)
    blockBody.push_back(weightLoad(ib));
  // Bound inside hb/ib loops of one iteration when hoisted (OHB == ICB == 1).
  Stmt inputLoad = b.load(xsrc, xdst, Dims{ticb, imm(geo.Wp), rows}, pad);
  // Chunked: one DMA per k-chunk into its own [rows][Wp][tk] region, issued in the k loop just
  // before the chunk's first gather (below). Issued back to back instead, KC loads each pushing
  // a token to the feed engine would fill the token queue and the load engine's dispatch queue
  // before the program reaches any mov that pops them: a deadlock once KC exceeds those depths.
  Stmt chunkLoad;
  if (chunked) {
    Expr tkl = min(imm(tk), ticb - Expr(kc) * tk);
    View csrc = xsrc;
    csrc.addr = xsrc.addr + Expr(kc) * (tk * eb);
    View cdst{hw.l1, xbuf.at(itIn) + Expr(kc) * (chunkElems * eb), act};
    cdst.s1 = tkl;
    cdst.s2 = tkl * geo.Wp;
    chunkLoad = b.load(csrc, cdst, Dims{tkl, imm(geo.Wp), rows}, pad);
  }
  if (!inputOnce && !xDirect)
    blockBody.push_back(inputLoad);

  // Residual tiles -> L1, and the epilogue operand views of this tile.
  std::vector<Stmt> tileBody;
  Expr pix0 = (Expr(n) * c.OH + Expr(hb) * toh) * c.OW; // first output pixel of the tile
  std::vector<View> ops = operandsAtChannel(p, consts, oc0);
  int r = 0;
  for (size_t i = 0; i < p.epilogue.size(); ++i) {
    const EpilogueOp &e = p.epilogue[i];
    if (e.operand == EpilogueOp::Operand::Tensor) {
      const OnChip &rb = rbufs[static_cast<size_t>(r++)];
      View rsrc{d.level(e.tensor, hw), imm(d.addrOf(e.tensor)) + (pix0 * c.OC + oc0) * eb, act};
      rsrc.s1 = imm(c.OC);
      View rdst{hw.l1, rb.at(it), act};
      rdst.s1 = tocb;
      if (inPlace(hw, rsrc)) { // resident in L1: the epilogue reads it there
        ops[i] = rsrc;
        continue;
      }
      tileBody.push_back(b.load(rsrc, rdst, Dims{tocb, Mc, imm(1)}));
      ops[i] = rdst;
    }
  }

  // The k loop: gather A, slice B, multiply-accumulate. A chunk past the end of a narrower last
  // channel block has k = 0 and emits nothing; the first chunk of block 0 is never empty, so the
  // accumulator is always initialised by an overwriting matmul. Row group hg holds kernel rows
  // hg*khg .. +gcur (the last group is narrower when khg does not divide KH); with khg == 1 it is
  // kernel row hg. Its A chunk is [pixels x gcur*klen]: row kr's klen values at column kr*klen,
  // one mov per kernel row (a mov's three dimensions are already the row's run, the output
  // columns and the output rows); B's rows are consecutive in the weight block, one mov.
  Expr step = (((itx * KHG + hg) * ch.KWl + kw) * KC + kc); // L0 buffer counter
  // k-outer: one A per chunk for all blocks, one B per (chunk, block).
  Expr stepA = kOuter ? (((img * KHG + hg) * ch.KWl + kw) * KC + kc) : step;
  Expr stepB = kOuter ? stepA * OCB + ob : step;
  Expr gcur = min(imm(khg), c.KH - Expr(hg) * khg);
  Expr klen = ch.fold ? ticb * c.KW : ticb;
  Expr kcur = khg == 1 ? max(min(imm(tk), klen - Expr(kc) * tk), 0) : gcur * klen;
  Expr kh = Expr(hg) * khg + kr;                          // the kernel row an A mov gathers
  const Expr xTile = xDirect ? xsrc.addr : xbuf.at(itIn); // the tile's rows, or the tensor's
  View asrc{xDirect ? xsrc.level : hw.l1,
            xTile + (((kh * c.DH) * geo.Wp + Expr(kw) * c.DW) * ticb + Expr(kc) * tk) * eb, act};
  asrc.s1 = ticb * c.SW;
  asrc.s2 = ticb * (c.SH * geo.Wp);
  if (chunked) { // chunk kc's region holds kcur channels per input pixel
    asrc.addr = xbuf.at(itIn) +
                (Expr(kc) * chunkElems + ((kh * c.DH) * geo.Wp + Expr(kw) * c.DW) * kcur) * eb;
    asrc.s1 = kcur * c.SW;
    asrc.s2 = kcur * (c.SH * geo.Wp);
  }
  View adst{hw.l0a, abuf.at(stepA) + Expr(kr) * klen * eb, act};
  adst.s1 = kcur;
  adst.s2 = kcur * c.OW;
  View bsrc{hw.l1, wslot + (((Expr(hg) * khg * c.KW + kw) * ticb + Expr(kc) * tk) * tocb) * eb,
            act};
  bsrc.s1 = tocb;
  View bdst{hw.l0b, bbuf.at(stepB), act};
  bdst.s1 = tocb;
  Expr first = min((((Expr(ib) * KHG + hg) * ch.KWl + kw) * KC + kc), 1); // 0: overwrite
  Stmt amove = b.move(asrc, adst, Dims{khg == 1 ? kcur : klen, imm(c.OW), tohc});
  if (xPadded) {
    // Box (channel, output column, output row of the tile) of tap (kh, kw): output column ow
    // reads input column iw0 + ow*SW, output row oh input row ih0 + oh*SH. Leading and trailing
    // outputs whose input lies outside the image are padding; the first valid one is read.
    auto ceilDivE = [](const Expr &a, int64_t by) { return floordiv(a + (by - 1), by); };
    const Expr iw0 = Expr(kw) * c.DW - c.padL;
    const Expr ih0 = Expr(hb) * (toh * c.SH) + kh * c.DH - c.padT;
    Pad gp;
    gp.lo[1] = min(max(ceilDivE(imm(0) - iw0, c.SW), 0), imm(c.OW));
    gp.hi[1] = min(max(imm(c.OW) - ceilDivE(imm(c.W) - iw0, c.SW), 0), imm(c.OW) - gp.lo[1]);
    gp.lo[2] = min(max(ceilDivE(imm(0) - ih0, c.SH), 0), tohc);
    gp.hi[2] = min(max(tohc - ceilDivE(imm(c.H) - ih0, c.SH), 0), tohc - gp.lo[2]);
    // Clamped into the image: a box with no valid element reads nothing, but its address is
    // still encoded.
    const Expr iw = min(max(iw0 + gp.lo[1] * c.SW, 0), imm(c.W - 1));
    const Expr ih = min(max(ih0 + gp.lo[2] * c.SH, 0), imm(c.H - 1));
    View src{xsrc.level,
             imm(xAddr) + (((Expr(n) * c.H + ih) * c.W + iw) * c.C + Expr(kc) * tk) * eb, act};
    src.s1 = imm(c.C * c.SW);
    src.s2 = imm(c.C * c.SH * c.W);
    amove = b.load(src, adst, Dims{kcur, imm(c.OW), tohc}, gp);
  }
  Stmt bmove = b.move(bsrc, bdst, Dims{tocb, kcur, imm(1)});
  Stmt mm = b.matmul(abuf.at(stepA), bbuf.at(stepB), cslot, Mc, kcur, tocb, first);
  std::vector<Stmt> kstmts;
  if (chunked) // the chunk's first use: output-channel block 0 (any, k-outer), kernel tap (0, 0)
    kstmts.push_back(
        IfThenElse::make(eq(kOuter ? Expr(hg) + kw : Expr(ob) + hg + kw, imm(0)), chunkLoad));
  kstmts.push_back(forLoop(kr, imm(0), khg == 1 ? imm(1) : gcur, amove));
  if (kOuter) {
    // Each block's weight rows for this (tap, chunk) load just before their B slice: consecutive
    // in the block-major layout in DRAM and in L1 alike, so the weights stream in with the input's
    // chunks instead of all arriving ahead of the first chunk's matmuls.
    Expr rowsAt = ((Expr(hg) * c.KW + kw) * ticb + Expr(kc) * tk) * tocb; // elements into the block
    View wsrc{hw.dram, imm(wAddr) + ((Expr(gi) * OCB + ob) * blockElems + rowsAt) * eb, act};
    wsrc.s1 = tocb;
    View wdst{hw.l1, wslot + rowsAt * eb, act};
    wdst.s1 = tocb;
    Stmt wrows = b.load(wsrc, wdst, Dims{tocb, kcur, imm(1)});
    kstmts.push_back(forLoop(ob, imm(0), imm(OCB), seq({wrows, bmove, mm})));
  } else
    kstmts.insert(kstmts.end(), {bmove, mm});
  Stmt kbody = seq(kstmts);
  Stmt kloop = forLoop(hg, imm(0), imm(KHG),
                       forLoop(kw, imm(0), imm(ch.KWl), forLoop(kc, imm(0), imm(KC), kbody)));
  blockBody.push_back(kloop);
  const size_t nresLoads = tileBody.size(); // residual loads come first in a tile
  tileBody.push_back(forLoop(ib, imm(0), imm(ICB), seq(blockBody)));

  // Epilogue on the accumulator tile, then the store.
  View acc{hw.acc, cslot, isa::ElemType::F32};
  acc.s1 = tocb;
  View accIn = acc; // what the matmuls wrote: fp32, or int32 on quantised targets
  accIn.dtype = t.tensor.accType;
  View out{hw.l1, obuf.at(it), act};
  out.s1 = tocb;
  Dims ed{tocb, Mc, imm(1)};
  View ydst{d.level(plan.output, hw), imm(yAddr) + (pix0 * c.OC + oc0) * eb, act};
  ydst.s1 = imm(c.OC);
  appendEpilogueAndStore(p, b, accIn, acc, out, ydst, ops, ed, tileBody);

  std::vector<Stmt> blockLoop;
  if (ICB == 1)
    blockLoop.push_back(weightLoad(imm(0)));
  // The input loaded once comes after the first weight block in the load engine's queue: it
  // waits for the previous group's output, and the weights (constants) need not wait behind it,
  // so they load while the previous group still computes (CompileOptions::crossGroupPrefetch).
  if (inputOnce && !chunked && !xDirect)
    blockLoop.push_back(IfThenElse::make(
        eq(ob, imm(0)), forLoop(hb, imm(0), imm(1), forLoop(ib, imm(0), imm(1), inputLoad))));
  blockLoop.push_back(forLoop(hb, imm(0), imm(OHB), seq(tileBody)));
  Stmt obLoop = forLoop(ob, imm(0), imm(OCB), seq(blockLoop));
  if (kOuter) {
    // The k loop (blocks inside), then per block its residual loads, epilogue and store: a
    // block's epilogue starts once its last matmul is done, while the others still multiply.
    // The tail binds its own block variable (a variable is bound by one loop only).
    std::vector<Stmt> tail = tileBody;
    tail.erase(tail.begin() + static_cast<std::ptrdiff_t>(nresLoads)); // the ib loop
    Var ob2 = Var::make("ocb");
    Stmt tailLoop =
        forLoop(ob2, imm(0), imm(OCB), substitute(seq(tail), VarMap{{ob.node(), Expr(ob2)}}));
    obLoop = forLoop(hb, imm(0), imm(1), forLoop(ib, imm(0), imm(1), seq({kloop, tailLoop})));
  }
  Stmt body = forLoop(n, imm(0), imm(c.N), forLoop(gi, imm(0), imm(c.G), obLoop));
  prologue.push_back(body);
  k.body = b.wrapAllocations(seq(prologue));
  k.macs = c.macs();
  k.estCycles = best.cost;
  k.vectorElems = c.N * c.OH * c.OW * c.OC * opsPerElem;
  k.dramBytes = numElements(g.value(plan.input).shape) * eb +
                static_cast<int64_t>(c.weights.size()) * eb +
                c.N * c.OH * c.OW * c.OC * eb * (1 + nres) + broadcastOperandBytes(p, eb);
  std::string foldText; // " (kernel columns folded into k, kernel rows folded by khg)"
  if (ch.fold)
    foldText = "kernel columns folded into k";
  if (khg > 1)
    foldText += fmt::format("{}kernel rows folded by {}", ch.fold ? ", " : "", khg);
  if (!foldText.empty())
    foldText = " (" + foldText + ")";
  k.tiling = fmt::format(
      "implicit GEMM{}: tile = {} output rows x {} cols x {} channels (M={}), k-chunk {} of {}{}; "
      "L1: input {}x{}x{} + weights {}x{}x{}x{} + output{}; {}{}; estimated {:.0f} cycles",
      foldText, toh, c.OW, toc, M, tk, khg > 1 ? c.KH * ch.Kl : ch.Kl,
      ICB > 1   ? fmt::format(", input channels blocked by {} at L1", tic)
      : chunked ? fmt::format(
                      ", input loaded once in {} k-chunks{}", KC,
                      kOuter ? fmt::format(", k-chunks outermost over {} channel blocks", OCB) : "")
                : "",
      rowsMax, geo.Wp, tic, c.KH, c.KW, tic, toc, nres ? fmt::format(" + {} residual", nres) : "",
      o.doubleBuffer ? "double-buffered at L1, L0 and the accumulator" : "single-buffered",
      o.naiveTiling ? "; naive tiling (ablation)" : "", best.cost);
  return k;
}

} // namespace npuc::npu
