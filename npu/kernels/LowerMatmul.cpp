// LowerMatmul.cpp - Conv/Gemm/MatMul groups as tiled implicit GEMM on the tensor unit: the
// lowering of one point of the kernel's space (npu/kernels/TensorUnit.h; its decisions, cost
// model and default search: npu/kernels/TensorUnitSpace.cpp).
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
#include "npu/kernels/TensorUnit.h"

#include "support/Error.h"
#include "support/Half.h"
#include "tir/Substitute.h"

#include <fmt/format.h>

namespace npuc::npu {

using namespace tir;

// One lowering of a point: the point's sizes, the buffers, the loop variables and the counters
// every part of the loop nest shares.
struct MatmulLowering {
  const TensorUnitSpace &sp;
  Builder &b;
  const DramCtx &d;
  const Hw &hw;
  const ConvParams &c;
  const GroupPlan &p; // with the bias/requantising epilogue
  const isa::ElemType act;
  const int64_t eb, icg, ocg, Wp;
  const int nb, nres;
  const TensorUnitSpace::Chan ch;
  const int64_t toc, tk, toh, tic, ICB, khg, KHG, OCB, OHB, KC, M, rowsMax;
  const bool naive;
  const bool nInner;   // the images inside the output-channel blocks (TensorUnit.h `nin`)
  const bool rowOuter; // the row tiles outside the output-channel blocks (`rowouter`)
  bool xDirect = false, xPadded = false, chunked = false, kOuter = false, inputOnce = false;
  int64_t chunkElems = 0, blockElems = 0, wAddr = 0, xAddr = 0, yAddr = 0;
  OnChip xbuf, wbuf, obuf, abuf, bbuf, cbuf;
  std::vector<OnChip> rbufs;
  Var n, gi, ob, hb, ib, hg, kr, kw, kc;
  Expr itO, it, itx, itIn, wpar, tocb, ticb, tohc, Mc, oc0, img, wslot, cslot, rows;
  View xsrc;
  Pad pad;

  MatmulLowering(const TensorUnitSpace &s, const Schedule &pt, Builder &b, const DramCtx &d)
      : sp(s), b(b), d(d), hw(b.hw()), c(s.plan_.conv), p(s.p_), act(hw.act), eb(hw.actBytes()),
        icg(c.icg()), ocg(c.ocg()), Wp(s.Wp_), nb(static_cast<int>(pt.get("buffers"))),
        nres(s.nres_), ch(s.chanFor(pt.get("tic"))), toc(pt.get("toc")), tk(pt.get("tk")),
        toh(pt.get("toh")), tic(ch.tic), ICB(ch.ICB), khg(pt.get("khg")), KHG(ceilDiv(c.KH, khg)),
        OCB(ceilDiv(ocg, toc)), OHB(ceilDiv(c.OH, toh)), KC(ceilDiv(ch.Kl, tk)), M(toh * c.OW),
        rowsMax(s.rowsFor(toh)), naive(s.ctx_.naiveTiling), nInner(s.imagesInside(pt)),
        rowOuter(s.rowsOutside(pt)) {
    NPUC_ASSERT(khg == 1 || (ch.KWl == 1 && KC == 1),
                "rows fold only when each kernel row is one contiguous k run, whole rows per "
                "chunk");
    xDirect = d.level(s.plan_.input, hw) != hw.dram && sp.inputDirect(ch, khg);
    const bool noPad =
        Wp == c.W && c.padL == 0 && c.padT == 0 && (c.OH - 1) * c.SH + (c.KH - 1) * c.DH + 1 <= c.H;
    xPadded = xDirect && !noPad; // each gather pads the taps outside the image itself
    // Images inside the blocks: an image's input serves one block, so it is neither hoisted
    // out of the block loop nor kept in chunks across blocks.
    chunked = OHB == 1 && !xDirect && !nInner && sp.chunkedInput(ch, tk, khg);
    chunkElems = rowsMax * Wp * tk; // one k-chunk of a chunk-major input
    kOuter = pt.get("kouter") == 1;
    blockElems = c.KH * c.KW * tic * toc;
    // A single row tile and channel block: the input tile is the same for every output-channel
    // block, so it is loaded once per (image, group), before the ob loop (the cost model counts
    // it so), and its buffer counter skips ob.
    inputOnce = OHB == 1 && ICB == 1 && !nInner;
  }

  size_t weightBytes() const { return static_cast<size_t>(c.G * OCB * ICB * blockElems * eb); }
  std::vector<uint8_t> packWeights() const;
  void reserveBuffers();
  void counters();
  Stmt weightLoad(const Expr &icb) const;
  View inputSource();
  Stmt chunkLoad() const;
  std::vector<Stmt> residualLoads(std::vector<View> &ops) const;
  Stmt paddedGather(const View &adst, const Expr &kh, const Expr &kcur) const;
  Stmt kLoop(const Expr &stepA, const Expr &stepB) const;
  Stmt loopNest(const std::vector<View> &consts);
  std::string tilingText(double cost) const;
};

// Weights, block-major: [G][OCB][ICB][KH][KW][tic_b][toc_b] in the operand dtype, each block at a
// full-block stride (the last channel blocks are narrower).
std::vector<uint8_t> MatmulLowering::packWeights() const {
  std::vector<uint8_t> wbytes(weightBytes(), 0);
  for (int64_t gi = 0; gi < c.G; ++gi)
    for (int64_t ob = 0; ob < OCB; ++ob)
      for (int64_t ib = 0; ib < ICB; ++ib) {
        int64_t tocb = std::min(toc, ocg - ob * toc), ticb = std::min(tic, icg - ib * tic);
        int64_t base = ((gi * OCB + ob) * ICB + ib) * blockElems;
        for (int64_t kh = 0; kh < c.KH; ++kh)
          for (int64_t kw = 0; kw < c.KW; ++kw)
            for (int64_t i = 0; i < ticb; ++i)
              for (int64_t j = 0; j < tocb; ++j) {
                int64_t oc = gi * ocg + ob * toc + j, ic = ib * tic + i;
                size_t src = static_cast<size_t>(((oc * icg + ic) * c.KH + kh) * c.KW + kw);
                size_t at =
                    static_cast<size_t>(eb * (base + ((kh * c.KW + kw) * ticb + i) * tocb + j));
                if (hw.quantised()) {
                  wbytes[at] = static_cast<uint8_t>(sp.wq_[src]);
                  continue;
                }
                uint16_t h = floatToHalf(c.weight(oc, ic, kh, kw));
                wbytes[at] = static_cast<uint8_t>(h & 0xff);
                wbytes[at + 1] = static_cast<uint8_t>(h >> 8);
              }
      }
  return wbytes;
}

void MatmulLowering::reserveBuffers() {
  xbuf = OnChip{"x_l1", hw.l1, chunked ? KC * chunkElems * eb : rowsMax * Wp * tic * eb, nb};
  wbuf = OnChip{"w_l1", hw.l1, (kOuter ? OCB : 1) * blockElems * eb, nb};
  obuf = OnChip{"y_l1", hw.l1, M * toc * eb, nb};
  abuf = OnChip{"a_l0a", hw.l0a, M * tk * eb, nb};
  bbuf = OnChip{"b_l0b", hw.l0b, tk * toc * eb, nb};
  cbuf = OnChip{"c_acc", hw.acc, (kOuter ? OCB : 1) * M * toc * 4, nb};
  rbufs.assign(static_cast<size_t>(nres), OnChip{});
  bool ok = b.reserve(xbuf) && b.reserve(wbuf) && b.reserve(obuf) && b.reserve(abuf) &&
            b.reserve(bbuf) && b.reserve(cbuf);
  for (int i = 0; i < nres; ++i) {
    rbufs[static_cast<size_t>(i)] = OnChip{fmt::format("r{}_l1", i), hw.l1, M * toc * eb, nb};
    ok = ok && b.reserve(rbufs[static_cast<size_t>(i)]);
  }
  NPUC_ASSERT(ok, "the chosen tiling was checked to fit every level");
}

// The loop variables, the buffer counters and the tile's extents.
void MatmulLowering::counters() {
  xAddr = d.addrOf(sp.plan_.input);
  yAddr = d.addrOf(sp.plan_.output);
  n = Var::make("n"), gi = Var::make("g"), ob = Var::make("ocb"), hb = Var::make("ohb");
  ib = Var::make("icb"), hg = Var::make("khg"), kr = Var::make("kr"), kw = Var::make("kw"),
  kc = Var::make("kc");
  // The counters number the iterations in execution order, so that double-buffered slots
  // alternate: images outermost (n, g, ob, hb), inside the blocks (g, ob, n, hb), or rows
  // outside the blocks (n, g, hb, ob: a weight block and an output tile per iteration, an input
  // tile per row tile).
  itO = nInner ? Expr(gi) * OCB + ob : (Expr(n) * c.G + gi) * OCB + ob; // channel-block counter
  it = (nInner ? itO * c.N + n : itO) * OHB + hb;                       // output-tile counter
  const Expr rowTile = (Expr(n) * c.G + gi) * OHB + hb;
  if (rowOuter) {
    it = rowTile * OCB + ob;
    itO = it;
  }
  itx = it * ICB + ib; // input-block counter
  itIn = inputOnce ? Expr(n) * c.G + gi : rowOuter ? rowTile : itx;
  wpar = ICB == 1 ? itO : itx; // weight-block counter
  tocb = min(imm(toc), ocg - Expr(ob) * toc);
  ticb = min(imm(tic), icg - Expr(ib) * tic);
  tohc = min(imm(toh), c.OH - Expr(hb) * toh);
  Mc = tohc * c.OW;
  oc0 = Expr(gi) * ocg + Expr(ob) * toc; // first output channel of the tile
  // Where block ob's weights and accumulator tile live: k-outer keeps every block's per image.
  img = Expr(n) * c.G + gi;
  wslot = kOuter ? wbuf.at(img) + Expr(ob) * (blockElems * eb) : wbuf.at(wpar);
  cslot = kOuter ? cbuf.at(img) + Expr(ob) * (M * toc * 4) : cbuf.at(it);
}

// Weight block -> L1: once per output-channel block when the channels are not blocked (it then
// stays across the row tiles), else per (row tile, channel block).
Stmt MatmulLowering::weightLoad(const Expr &icb) const {
  Expr ticbW = min(imm(tic), icg - icb * tic);
  View wsrc{hw.dram, imm(wAddr) + (((Expr(gi) * OCB + ob) * ICB + icb) * blockElems) * eb, act};
  wsrc.s1 = tocb;
  wsrc.s2 = tocb * ticbW;
  View wdst{hw.l1, wslot, act};
  wdst.s1 = wsrc.s1;
  wdst.s2 = wsrc.s2;
  return b.load(wsrc, wdst, Dims{tocb, ticbW, imm(c.KH * c.KW)});
}

// Input rows (with halo) of one channel block in the input's home, and their zero padding.
View MatmulLowering::inputSource() {
  Expr ih0 = Expr(hb) * (toh * c.SH) - c.padT;
  rows = (tohc - 1) * c.SH + (c.KH - 1) * c.DH + 1;
  pad.lo[1] = imm(c.padL);
  pad.hi[1] = imm(Wp - c.W - c.padL);
  pad.lo[2] = max(imm(0), imm(0) - ih0);
  pad.hi[2] = max(imm(0), ih0 + rows - c.H);
  Expr ih = max(ih0, 0);
  // A pad as wide as the dilated kernel (legal ONNX; the output there is the bias) leaves row
  // tiles wholly in the padding, whose pads would exceed the box (the DMA requires pad_lo +
  // pad_hi <= n): clamp them to the box, and the source row into the image (nothing is read).
  // Narrower pads never engage the clamps, so their expressions stay as they were.
  const int64_t effKH = (c.KH - 1) * c.DH + 1;
  const int64_t padB = (c.OH - 1) * c.SH + effKH - c.H - c.padT;
  if (c.padT >= effKH || padB >= effKH) {
    pad.lo[2] = min(pad.lo[2], rows);
    pad.hi[2] = min(pad.hi[2], rows - pad.lo[2]);
    ih = min(ih, imm(c.H - 1));
  }
  View x{d.level(sp.plan_.input, hw),
         imm(xAddr) + (((Expr(n) * c.H + ih) * c.W) * c.C + Expr(gi) * icg + Expr(ib) * tic) * eb,
         act};
  x.s1 = imm(c.C);
  x.s2 = imm(c.W * c.C);
  return x;
}

// Chunked: one DMA per k-chunk into its own [rows][Wp][tk] region, issued in the k loop just
// before the chunk's first gather. Issued back to back instead, KC loads each pushing a token to
// the feed engine would fill the token queue and the load engine's dispatch queue before the
// program reaches any mov that pops them: a deadlock once KC exceeds those depths.
Stmt MatmulLowering::chunkLoad() const {
  Expr tkl = min(imm(tk), ticb - Expr(kc) * tk);
  View csrc = xsrc;
  csrc.addr = xsrc.addr + Expr(kc) * (tk * eb);
  View cdst{hw.l1, xbuf.at(itIn) + Expr(kc) * (chunkElems * eb), act};
  cdst.s1 = tkl;
  cdst.s2 = tkl * Wp;
  return b.load(csrc, cdst, Dims{tkl, imm(Wp), rows}, pad);
}

// Residual tiles -> L1, and the epilogue operand views of this tile.
std::vector<Stmt> MatmulLowering::residualLoads(std::vector<View> &ops) const {
  std::vector<Stmt> loads;
  Expr pix0 = (Expr(n) * c.OH + Expr(hb) * toh) * c.OW; // first output pixel of the tile
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
      loads.push_back(b.load(rsrc, rdst, Dims{tocb, Mc, imm(1)}));
      ops[i] = rdst;
    }
  }
  savedOperands(p, rbufs, it, tocb, act, ops);
  return loads;
}

// A gather from a resident input that pads itself. Box (channel, output column, output row of
// the tile) of tap (kh, kw): output column ow reads input column iw0 + ow*SW, output row oh input
// row ih0 + oh*SH. Leading and trailing outputs whose input lies outside the image are padding;
// the first valid one is read.
Stmt MatmulLowering::paddedGather(const View &adst, const Expr &kh, const Expr &kcur) const {
  auto ceilDivE = [](const Expr &a, int64_t by) { return floordiv(a + (by - 1), by); };
  const Expr iw0 = Expr(kw) * c.DW - c.padL;
  const Expr ih0 = Expr(hb) * (toh * c.SH) + kh * c.DH - c.padT;
  Pad gp;
  gp.lo[1] = min(max(ceilDivE(imm(0) - iw0, c.SW), 0), imm(c.OW));
  gp.hi[1] = min(max(imm(c.OW) - ceilDivE(imm(c.W) - iw0, c.SW), 0), imm(c.OW) - gp.lo[1]);
  gp.lo[2] = min(max(ceilDivE(imm(0) - ih0, c.SH), 0), tohc);
  gp.hi[2] = min(max(tohc - ceilDivE(imm(c.H) - ih0, c.SH), 0), tohc - gp.lo[2]);
  // Clamped into the image: a box with no valid element reads nothing, but its address is still
  // encoded.
  const Expr iw = min(max(iw0 + gp.lo[1] * c.SW, 0), imm(c.W - 1));
  const Expr ih = min(max(ih0 + gp.lo[2] * c.SH, 0), imm(c.H - 1));
  View src{xsrc.level, imm(xAddr) + (((Expr(n) * c.H + ih) * c.W + iw) * c.C + Expr(kc) * tk) * eb,
           act};
  src.s1 = imm(c.C * c.SW);
  src.s2 = imm(c.C * c.SH * c.W);
  return b.load(src, adst, Dims{kcur, imm(c.OW), tohc}, gp);
}

// The k loop: gather A, slice B, multiply-accumulate. A chunk past the end of a narrower last
// channel block has k = 0 and emits nothing; the first chunk of block 0 is never empty, so the
// accumulator is always initialised by an overwriting matmul. Row group hg holds kernel rows
// hg*khg .. +gcur (the last group is narrower when khg does not divide KH); with khg == 1 it is
// kernel row hg. Its A chunk is [pixels x gcur*klen]: row kr's klen values at column kr*klen, one
// mov per kernel row (a mov's three dimensions are already the row's run, the output columns and
// the output rows); B's rows are consecutive in the weight block, one mov.
Stmt MatmulLowering::kLoop(const Expr &stepA, const Expr &stepB) const {
  Expr gcur = min(imm(khg), c.KH - Expr(hg) * khg);
  Expr klen = ch.fold ? ticb * c.KW : ticb;
  Expr kcur = khg == 1 ? max(min(imm(tk), klen - Expr(kc) * tk), 0) : gcur * klen;
  Expr kh = Expr(hg) * khg + kr;                          // the kernel row an A mov gathers
  const Expr xTile = xDirect ? xsrc.addr : xbuf.at(itIn); // the tile's rows, or the tensor's
  View asrc{xDirect ? xsrc.level : hw.l1,
            xTile + (((kh * c.DH) * Wp + Expr(kw) * c.DW) * ticb + Expr(kc) * tk) * eb, act};
  asrc.s1 = ticb * c.SW;
  asrc.s2 = ticb * (c.SH * Wp);
  if (chunked) { // chunk kc's region holds kcur channels per input pixel
    asrc.addr =
        xbuf.at(itIn) + (Expr(kc) * chunkElems + ((kh * c.DH) * Wp + Expr(kw) * c.DW) * kcur) * eb;
    asrc.s1 = kcur * c.SW;
    asrc.s2 = kcur * (c.SH * Wp);
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
  Stmt amove = xPadded ? paddedGather(adst, kh, kcur)
                       : b.move(asrc, adst, Dims{khg == 1 ? kcur : klen, imm(c.OW), tohc});
  Stmt bmove = b.move(bsrc, bdst, Dims{tocb, kcur, imm(1)});
  Stmt mm = b.matmul(abuf.at(stepA), bbuf.at(stepB), cslot, Mc, kcur, tocb, first);
  std::vector<Stmt> kstmts;
  if (chunked) // the chunk's first use: output-channel block 0 (any, k-outer), kernel tap (0, 0)
    kstmts.push_back(
        IfThenElse::make(eq(kOuter ? Expr(hg) + kw : Expr(ob) + hg + kw, imm(0)), chunkLoad()));
  kstmts.push_back(forLoop(kr, imm(0), khg == 1 ? imm(1) : gcur, amove));
  if (kOuter) {
    // Each block's weight rows for this (tap, chunk) load just before their B slice: consecutive
    // in the block-major layout in DRAM and in L1 alike, so the weights stream in with the
    // input's chunks instead of all arriving ahead of the first chunk's matmuls.
    Expr rowsAt = ((Expr(hg) * c.KW + kw) * ticb + Expr(kc) * tk) * tocb; // elements into the block
    View wsrc{hw.dram, imm(wAddr) + ((Expr(gi) * OCB + ob) * blockElems + rowsAt) * eb, act};
    wsrc.s1 = tocb;
    View wdst{hw.l1, wslot + rowsAt * eb, act};
    wdst.s1 = tocb;
    Stmt wrows = b.load(wsrc, wdst, Dims{tocb, kcur, imm(1)});
    kstmts.push_back(forLoop(ob, imm(0), imm(OCB), seq({wrows, bmove, mm})));
  } else
    kstmts.insert(kstmts.end(), {bmove, mm});
  return forLoop(hg, imm(0), imm(KHG),
                 forLoop(kw, imm(0), imm(ch.KWl), forLoop(kc, imm(0), imm(KC), seq(kstmts))));
}

// The whole nest: images, groups, output-channel blocks (or k-chunks, k-outer), row tiles,
// channel blocks, the k loop, the epilogue and the store.
Stmt MatmulLowering::loopNest(const std::vector<View> &consts) {
  xsrc = inputSource();
  View xdst{hw.l1, xbuf.at(itIn), act};
  xdst.s1 = ticb;
  xdst.s2 = ticb * Wp;
  std::vector<Stmt> blockBody;
  if (ICB > 1)
    blockBody.push_back(weightLoad(ib));
  // Bound inside hb/ib loops of one iteration when hoisted (OHB == ICB == 1).
  Stmt inputLoad = b.load(xsrc, xdst, Dims{ticb, imm(Wp), rows}, pad);
  if (!inputOnce && !xDirect && !rowOuter)
    blockBody.push_back(inputLoad);
  std::vector<View> ops = operandsAtChannel(p, consts, oc0);
  std::vector<Stmt> tileBody = residualLoads(ops);
  Expr step = (((itx * KHG + hg) * ch.KWl + kw) * KC + kc); // L0 buffer counter
  // k-outer: one A per chunk for all blocks, one B per (chunk, block).
  Expr stepA = kOuter ? (((img * KHG + hg) * ch.KWl + kw) * KC + kc) : step;
  Expr stepB = kOuter ? stepA * OCB + ob : step;
  Stmt kloop = kLoop(stepA, stepB);
  blockBody.push_back(kloop);
  const size_t nresLoads = tileBody.size(); // residual loads come first in a tile
  tileBody.push_back(forLoop(ib, imm(0), imm(ICB), seq(blockBody)));

  // Epilogue on the accumulator tile, then the store.
  View acc{hw.acc, cslot, isa::ElemType::F32};
  acc.s1 = tocb;
  View accIn = acc; // what the matmuls wrote: fp32, or int32 on quantised targets
  accIn.dtype = hw.t->tensor.accType;
  View out{hw.l1, obuf.at(it), act};
  out.s1 = tocb;
  Dims ed{tocb, Mc, imm(1)};
  Expr pix0 = (Expr(n) * c.OH + Expr(hb) * toh) * c.OW;
  View ydst{d.level(sp.plan_.output, hw), imm(yAddr) + (pix0 * c.OC + oc0) * eb, act};
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
  if (rowOuter) { // per row tile its input, then every block's weights and output tile
    NPUC_ASSERT(ICB == 1 && !kOuter && !nInner && !inputOnce && !xDirect,
                "rowouter = 1 was checked legal");
    Stmt blocks = forLoop(ob, imm(0), imm(OCB), seq({weightLoad(imm(0)), seq(tileBody)}));
    Stmt rowTiles =
        forLoop(hb, imm(0), imm(OHB), seq({forLoop(ib, imm(0), imm(1), inputLoad), blocks}));
    return forLoop(n, imm(0), imm(c.N), forLoop(gi, imm(0), imm(c.G), rowTiles));
  }
  if (nInner) { // the weight block loads once per block, then every image's tiles use it
    NPUC_ASSERT(ICB == 1 && !kOuter && !inputOnce, "nin = 1 was checked legal");
    Stmt images = forLoop(n, imm(0), imm(c.N), forLoop(hb, imm(0), imm(OHB), seq(tileBody)));
    Stmt perBlock = seq({weightLoad(imm(0)), images});
    return forLoop(gi, imm(0), imm(c.G), forLoop(ob, imm(0), imm(OCB), perBlock));
  }
  return forLoop(n, imm(0), imm(c.N), forLoop(gi, imm(0), imm(c.G), obLoop));
}

std::string MatmulLowering::tilingText(double cost) const {
  std::string foldText; // " (kernel columns folded into k, kernel rows folded by khg)"
  if (ch.fold)
    foldText = "kernel columns folded into k";
  if (khg > 1)
    foldText += fmt::format("{}kernel rows folded by {}", ch.fold ? ", " : "", khg);
  if (!foldText.empty())
    foldText = " (" + foldText + ")";
  return fmt::format(
      "implicit GEMM{}: tile = {} output rows x {} cols x {} channels (M={}), k-chunk {} of {}{}; "
      "L1: input {}x{}x{} + weights {}x{}x{}x{} + output{}; {}{}{}{}; estimated {:.0f} cycles",
      foldText, toh, c.OW, toc, M, tk, khg > 1 ? c.KH * ch.Kl : ch.Kl,
      ICB > 1   ? fmt::format(", input channels blocked by {} at L1", tic)
      : chunked ? fmt::format(
                      ", input loaded once in {} k-chunks{}", KC,
                      kOuter ? fmt::format(", k-chunks outermost over {} channel blocks", OCB) : "")
                : "",
      rowsMax, Wp, tic, c.KH, c.KW, tic, toc, nres ? fmt::format(" + {} residual", nres) : "",
      nb == 2 ? "double-buffered at L1, L0 and the accumulator" : "single-buffered",
      nInner
          ? fmt::format("; {} images inside each output-channel block (weights loaded once)", c.N)
          : "",
      rowOuter ? fmt::format("; {} row tiles outside the {} output-channel blocks (input loaded "
                             "once, weights once per row tile)",
                             OHB, OCB)
               : "",
      naive ? "; naive tiling (ablation)" : "", cost);
}

Kernel TensorUnitSpace::lower(const Schedule &s, Builder &b, const DramCtx &d) const {
  NPUC_ASSERT(legal(s), "lower() takes a legal point: " + s.str());
  Kernel k;
  std::vector<View> consts;
  std::vector<Stmt> prologue;
  // The space staged the same constants in a scratch builder over the same window.
  k.reject = stageEpilogueConstants(p_, b, d, consts, prologue);
  if (k.reject)
    return k;
  MatmulLowering L(*this, s, b, d);
  L.wAddr = d.addConst(ConstBytes(L.weightBytes(), [&L] { return L.packWeights(); }));
  L.reserveBuffers();
  L.counters();
  prologue.push_back(L.loopNest(consts));
  k.body = b.wrapAllocations(seq(prologue));
  const ConvParams &c = plan_.conv;
  const int64_t eb = ctx_.hw->actBytes();
  const double estimate = cost(s);
  k.macs = c.macs();
  k.estCycles = estimate;
  k.vectorElems = c.N * c.OH * c.OW * c.OC * epilogueOpsPerElement(p_);
  k.dramBytes =
      numElements(g_.value(plan_.input).shape) * eb + static_cast<int64_t>(c.weights->size()) * eb +
      c.N * c.OH * c.OW * c.OC * eb * (1 + residualOperands(p_)) + broadcastOperandBytes(p_, eb);
  k.tiling = L.tilingText(estimate);
  return k;
}

} // namespace npuc::npu
