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
// Kernel selection (KernelSelect.cpp) picks this kernel for a depthwise group when the target's
// vector unit has `mac` and the estimate is below the tensor-unit kernel's; both estimates go to
// the tiling text. The space (tile sizes, buffers, cost): npu/kernels/DepthwiseSpace.cpp.
#include "npu/kernels/Depthwise.h"

#include "support/Error.h"

#include <fmt/format.h>

namespace npuc::npu {

using namespace tir;

Kernel DepthwiseSpace::lower(const Schedule &s, Builder &b, const DramCtx &d) const {
  NPUC_ASSERT(legal(s), "lower() takes a legal point: " + s.str());
  const Hw &hw = b.hw();
  const isa::Target &t = *hw.t;
  const ConvParams &c = plan_.conv;
  const GroupPlan &p = p_;
  const GroupPlan &plan = plan_;
  const isa::ElemType act = hw.act;
  const int64_t eb = hw.actBytes(), C = c.C, taps = taps_, kh = kh_, Wp = Wp_;
  const bool useMac = useMac_;
  const int nb = static_cast<int>(s.get("buffers"));
  const int nres = nres_;
  const int64_t epi = epilogueOpsPerElement(p);
  const int64_t tapOps = useMac ? taps : 2 * taps - 1; // vector ops per tile for the taps
  Kernel k;
  std::vector<View> consts;
  std::vector<Stmt> prologue;
  // The space staged the same constants and weights in a scratch builder over the same window.
  k.reject = stageEpilogueConstants(p, b, d, consts, prologue);
  if (k.reject)
    return k;
  OnChip wbuf{"w_l1", hw.l1, taps * C * 4, 1};
  const bool placed = b.reserve(wbuf);
  NPUC_ASSERT(placed, "the space reserved the weights over the same window");
  {
    View wsrc{hw.dram, imm(d.addConst(weightBytes())), isa::ElemType::F32};
    wsrc.s1 = imm(C);
    View wdst{hw.l1, imm(wbuf.base), isa::ElemType::F32};
    wdst.s1 = imm(C);
    prologue.push_back(b.load(wsrc, wdst, Dims{imm(C), imm(taps), imm(1)}));
  }
  const double estimate = cost(s);
  auto rowsFor = [&](int64_t toh) { return (toh - 1) * c.SH + kh; };
  const int64_t tc = s.get("tc"), toh = s.get("toh"), CB = ceilDiv(C, tc), OHB = ceilDiv(c.OH, toh);
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
  body.push_back(b.vector(isa::VecOp::Mul, acc3, tapIn(imm(0), imm(0)), tapW(imm(0)), td));
  if (taps > 1 && useMac)
    body.push_back(
        forLoop(tap, imm(1), imm(taps - 1),
                b.vector(isa::VecOp::Mac, acc3, tapIn(floordiv(tap, c.KW), floormod(tap, c.KW)),
                         tapW(tap), td)));
  if (taps > 1 && !useMac) {
    View prod = acc3;
    prod.addr = imm(tbuf.base);
    body.push_back(
        forLoop(tap, imm(1), imm(taps - 1),
                seq({b.vector(isa::VecOp::Mul, prod,
                              tapIn(floordiv(tap, c.KW), floormod(tap, c.KW)), tapW(tap), td),
                     b.vector(isa::VecOp::Add, acc3, acc3, prod, td)})));
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
  k.dramBytes = numElements(g_.value(plan.input).shape) * eb + taps * C * 4 +
                outElems * eb * (1 + residualOperands(p)) + broadcastOperandBytes(p, eb);
  k.estCycles = estimate;
  k.tiling = fmt::format(
      "depthwise on the vector unit: tile = {} output rows x {} cols x {} channels; {} taps "
      "({}) + {} epilogue op(s) per element into fp32 '{}'; L1: input {}x{}x{} + fp32 "
      "weights {}x{}{}; {}; estimated {:.0f} cycles",
      toh, c.OW, tc, taps, useMac ? "mul, then mac" : "mul, then mul + add", epi,
      t.levels.at(static_cast<size_t>(hw.acc)).name, rowsMax, Wp, tc, taps, C,
      nres ? fmt::format(" + {} residual", nres) : "",
      nb == 2 ? "double-buffered" : "single-buffered", estimate);
  return k;
}

} // namespace npuc::npu
