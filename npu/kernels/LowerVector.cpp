// LowerVector.cpp - pooling, global average pooling and elementwise chains on the vector unit.
//
// All three stream tiles DRAM -> L1 (fp16, or int8 on quantised targets), compute in fp32 in the
// accumulator level, run the fused epilogue (requantising on int8 targets), and write the tiles
// back: the same double-buffered pipeline as the matmul
// kernel without the tensor unit. Window pooling reads each kernel tap as one 3-D strided view
// of the input tile (padding comes from the DMA: -inf for max, 0 for average, whose per-pixel
// divisor is a compile-time constant honouring count_include_pad and ceil_mode).
#include "npu/kernels/Vector.h"

#include "support/Error.h"
#include "support/Half.h"

#include <cstring>
#include <fmt/format.h>
#include <limits>

namespace npuc::npu {

using namespace tir;

namespace {

bool reserveAll(Builder &b, std::vector<OnChip *> bufs) {
  for (OnChip *x : bufs)
    if (!b.reserve(*x))
      return false;
  return true;
}

std::vector<OnChip> residualBuffers(const GroupPlan &p, const Hw &hw, int64_t bytes, int nb) {
  std::vector<OnChip> r;
  for (int i = 0; i < tensorOperands(p); ++i)
    r.push_back(OnChip{fmt::format("r{}_l1", i), hw.l1, bytes, nb});
  return r;
}

} // namespace

double streamCost(const Hw &hw, int nb, int64_t tiles, double inBytes, double outBytes,
                  double vecElems) {
  const isa::Target &t = *hw.t;
  const double dram = (inBytes + outBytes) / t.dram.bytesPerCycle;
  const double vec = vecElems / t.vector.lanes;
  const double latency = 2.0 * t.dram.latency;
  if (nb == 1)
    return dram + vec + double(tiles) * latency;
  const double busiest = std::max(dram, vec);
  return busiest + (dram + vec - busiest) / double(std::max<int64_t>(tiles, 1)) + latency;
}

// ---- window pooling ----

GroupPlan poolKernelPlan(const GroupPlan &plan, const Hw &hw) {
  // int8: the taps combine in fp32 on the input's int8 values; the epilogue starts in the input's
  // scale and requantises (withQuantEpilogue).
  return hw.quantised() ? withQuantEpilogue(plan, nullptr) : plan;
}

PoolModel::PoolModel(const GroupPlan &p, const Hw &hw, int64_t l1Free, bool doubleBuffer)
    : hw(hw), q(p.pool), nb(doubleBuffer ? 2 : 1), nres(tensorOperands(p)), eb(hw.actBytes()),
      Wp(std::max(p.pool.W + p.pool.padL, (p.pool.OW - 1) * p.pool.SW + p.pool.KW)),
      opsPerElem(epilogueOpsPerElement(p)), l1Free(l1Free) {}

bool PoolModel::fits(const PoolTiling &x) const {
  const int64_t maxDim = hw.maxDim(), tc = x.tc, toh = x.toh;
  if (tc < 1 || toh < 1 || tc > q.C || toh > q.OH)
    return false;
  const int64_t rows = rowsFor(toh);
  if (tc > maxDim || toh > maxDim || rows > maxDim || Wp > maxDim || q.OW > maxDim ||
      toh * q.OW > maxDim)
    return false;
  auto al = [&](int level, int64_t bytes) { return alignUp(bytes, hw.alignment(level)); };
  if (al(hw.acc, toh * q.OW * tc * 4) * nb > hw.capacity(hw.acc))
    return false;
  return nb * (al(hw.l1, rows * Wp * tc * eb) + al(hw.l1, toh * q.OW * tc * eb) * (1 + nres)) <=
         l1Free;
}

double PoolModel::cost(const PoolTiling &x) const {
  const int64_t CB = ceilDiv(q.C, x.tc), OHB = ceilDiv(q.OH, x.toh);
  const int64_t outElems = q.N * q.C * q.OH * q.OW;
  const double in = double(q.N * OHB * rowsFor(x.toh) * Wp * q.C * eb + outElems * eb * nres);
  const double taps = double(q.KH * q.KW + (q.isMax ? 0 : 1) + opsPerElem);
  return streamCost(hw, nb, q.N * CB * OHB, in, double(outElems * eb), double(outElems) * taps);
}

std::vector<int64_t> PoolModel::tcValues() const {
  std::vector<int64_t> v;
  for (int64_t tc = q.C; tc >= 1; tc = tc > 16 ? tc / 2 : tc - 1)
    v.push_back(tc);
  return v;
}

std::optional<PoolTiling> PoolModel::heuristic() const {
  for (int64_t tc : tcValues()) {
    if (!fits({tc, 1}))
      continue;
    int64_t toh = 1;
    while (toh < q.OH && fits({tc, toh + 1}))
      ++toh;
    return PoolTiling{tc, toh};
  }
  return std::nullopt;
}

namespace {

// The pool's loop nest over images, channel blocks and output row blocks: the padded input rows
// of a tile, the taps combined in the accumulator, the divisors, the epilogue and the store.
Stmt poolNest(const GroupPlan &plan, const GroupPlan &p, const PoolModel &m, const PoolTiling &x,
              const std::vector<OnChip> &bufs, const OnChip &divbuf,
              const std::vector<OnChip> &rbufs, const std::vector<View> &consts, const Builder &b,
              const DramCtx &d) {
  const Hw &hw = m.hw;
  const PoolParams &q = m.q;
  const isa::ElemType act = hw.act;
  const int64_t eb = m.eb, Wp = m.Wp, tc = x.tc, toh = x.toh;
  const OnChip &xbuf = bufs[0], &obuf = bufs[1], &cbuf = bufs[2];
  const int64_t CB = ceilDiv(q.C, tc), OHB = ceilDiv(q.OH, toh);
  Var n = Var::make("n"), cb = Var::make("cb"), hb = Var::make("ohb"), tap = Var::make("tap");
  Expr it = (Expr(n) * CB + cb) * OHB + hb;
  Expr tcc = min(imm(tc), q.C - Expr(cb) * tc);
  Expr tohc = min(imm(toh), q.OH - Expr(hb) * toh);
  Expr ih0 = Expr(hb) * (toh * q.SH) - q.padT;
  Expr rows = (tohc - 1) * q.SH + q.KH;
  Pad pad;
  // Max pooling pads with the smallest value (fp16 -inf, int8 -128: no window is all padding).
  pad.value = !q.isMax         ? 0
              : hw.quantised() ? 0x80
                               : floatToHalf(-std::numeric_limits<float>::infinity());
  pad.lo[1] = imm(q.padL);
  pad.hi[1] = imm(Wp - q.W - q.padL);
  pad.lo[2] = max(imm(0), imm(0) - ih0);
  pad.hi[2] = max(imm(0), ih0 + rows - q.H);
  const int64_t xAddr = d.addrOf(plan.input), yAddr = d.addrOf(plan.output);
  View xsrc{d.level(plan.input, hw),
            imm(xAddr) + (((Expr(n) * q.H + max(ih0, 0)) * q.W) * q.C + Expr(cb) * tc) * eb, act};
  xsrc.s1 = imm(q.C);
  xsrc.s2 = imm(q.W * q.C);
  View xdst{hw.l1, xbuf.at(it), act};
  xdst.s1 = tcc;
  xdst.s2 = tcc * Wp;
  std::vector<Stmt> body;
  body.push_back(b.load(xsrc, xdst, Dims{tcc, imm(Wp), rows}, pad));

  // Kernel taps: tap 0 initialises the accumulator, the others combine into it.
  View acc3{hw.acc, cbuf.at(it), isa::ElemType::F32};
  acc3.s1 = tcc;
  acc3.s2 = tcc * q.OW;
  auto tapView = [&](Expr kh, Expr kw) {
    View v{hw.l1, xbuf.at(it) + ((kh * Wp + kw) * tcc) * eb, act};
    v.s1 = tcc * q.SW;
    v.s2 = tcc * (q.SH * Wp);
    return v;
  };
  Dims wd{tcc, imm(q.OW), tohc};
  body.push_back(b.vector(isa::VecOp::Copy, acc3, tapView(imm(0), imm(0)), View{}, wd));
  if (q.KH * q.KW > 1)
    body.push_back(forLoop(tap, imm(1), imm(q.KH * q.KW - 1),
                           b.vector(q.isMax ? isa::VecOp::Max : isa::VecOp::Add, acc3, acc3,
                                    tapView(floordiv(tap, q.KW), floormod(tap, q.KW)), wd)));
  if (!q.isMax) {
    View dv{hw.l1, imm(divbuf.base) + (Expr(hb) * (toh * q.OW)) * 4, isa::ElemType::F32};
    dv.s0 = imm(0);
    dv.s1 = imm(1);
    dv.s2 = imm(q.OW);
    body.push_back(b.vector(isa::VecOp::Mul, acc3, acc3, dv, wd));
  }
  Expr Mc = tohc * q.OW;
  Expr elem0 = ((Expr(n) * q.OH + Expr(hb) * toh) * q.OW) * q.C + Expr(cb) * tc;
  std::vector<View> ops = operandsAtChannel(p, consts, Expr(cb) * tc);
  stageTensorOperands(p, b, d, rbufs, it, elem0, q.C, tcc, Mc, ops, body);
  View acc{hw.acc, cbuf.at(it), isa::ElemType::F32};
  acc.s1 = tcc;
  View out{hw.l1, obuf.at(it), act};
  out.s1 = tcc;
  Dims ed{tcc, Mc, imm(1)};
  View ydst{d.level(plan.output, hw), imm(yAddr) + elem0 * eb, act};
  ydst.s1 = imm(q.C);
  appendEpilogueAndStore(p, b, acc, acc, out, ydst, ops, ed, body);
  return forLoop(n, imm(0), imm(q.N),
                 forLoop(cb, imm(0), imm(CB), forLoop(hb, imm(0), imm(OHB), seq(body))));
}

} // namespace

Kernel lowerPoolTiling(const GroupPlan &plan, const graph::Graph &, Builder &b, const DramCtx &d,
                       const KernelOptions &o, const std::optional<PoolTiling> &forced) {
  const Hw &hw = b.hw();
  const PoolParams &q = plan.pool;
  const int64_t eb = hw.actBytes();
  GroupPlan p = poolKernelPlan(plan, hw);
  Kernel k;
  std::vector<View> consts;
  std::vector<Stmt> prologue;
  k.reject = stageEpilogueConstants(p, b, d, consts, prologue);
  if (k.reject)
    return k;
  OnChip divbuf{"divisor_l1", hw.l1, q.OH * q.OW * 4, 1};
  if (!q.isMax) {
    std::vector<uint8_t> bytes(q.divisor.size() * 4);
    std::memcpy(bytes.data(), q.divisor.data(), bytes.size());
    int64_t addr = d.addConst(std::move(bytes));
    if (!b.reserve(divbuf)) {
      k.reject = kernelReject(RejectKind::Capacity, "no room in L1 for the pooling divisors");
      return k;
    }
    View src{hw.dram, imm(addr)}, dst{hw.l1, imm(divbuf.base)};
    src.s1 = dst.s1 = imm(q.OW * 2);
    prologue.push_back(b.load(src, dst, Dims{imm(q.OW * 2), imm(q.OH), imm(1)}));
  }
  const PoolModel m(p, hw, b.freeBytes(hw.l1), o.doubleBuffer);
  const std::optional<PoolTiling> x = forced ? forced : m.heuristic();
  if (!x || !m.fits(*x)) {
    k.reject = kernelReject(
        RejectKind::Capacity,
        fmt::format("no tiling of a {}-wide pooling row fits the on-chip buffers", q.W));
    return k;
  }
  const int nb = m.nb;
  const int64_t tc = x->tc, toh = x->toh, rowsMax = m.rowsFor(toh);
  std::vector<OnChip> bufs = {{"x_l1", hw.l1, rowsMax * m.Wp * tc * eb, nb},
                              {"y_l1", hw.l1, toh * q.OW * tc * eb, nb},
                              {"acc", hw.acc, toh * q.OW * tc * 4, nb}};
  std::vector<OnChip> rbufs = residualBuffers(p, hw, toh * q.OW * tc * eb, nb);
  std::vector<OnChip *> all = {&bufs[0], &bufs[1], &bufs[2]};
  for (OnChip &r : rbufs)
    all.push_back(&r);
  NPUC_ASSERT(reserveAll(b, all), "the chosen pooling tile was checked to fit");
  prologue.push_back(poolNest(plan, p, m, *x, bufs, divbuf, rbufs, consts, b, d));
  k.body = b.wrapAllocations(seq(prologue));
  int64_t outElems = q.N * q.C * q.OH * q.OW;
  k.vectorElems = outElems * (q.KH * q.KW + (q.isMax ? 0 : 1) + epilogueOpsPerElement(p));
  k.dramBytes = q.N * q.C * q.H * q.W * eb + outElems * eb * (1 + residualOperands(p)) +
                broadcastOperandBytes(p, eb);
  k.tiling = fmt::format("{} pool {}x{}/{}: tile = {} output rows x {} cols x {} channels; "
                         "L1 input {}x{}x{}; {}",
                         q.isMax ? "max" : "average", q.KH, q.KW, q.SH, toh, q.OW, tc, rowsMax,
                         m.Wp, tc, o.doubleBuffer ? "double-buffered" : "single-buffered");
  return k;
}

Kernel lowerPoolKernel(const GroupPlan &plan, const graph::Graph &g, Builder &b, const DramCtx &d,
                       const KernelOptions &o) {
  return lowerPoolTiling(plan, g, b, d, o, std::nullopt);
}

// ---- global average pooling ----

GroupPlan globalPoolKernelPlan(const GroupPlan &plan, const Hw &hw, int64_t pixels) {
  GroupPlan p = plan;
  EpilogueOp mean;
  mean.op = isa::VecOp::Mul;
  mean.operand = EpilogueOp::Operand::Const;
  mean.constant = {1.0f / static_cast<float>(pixels)};
  p.epilogue.insert(p.epilogue.begin(), mean);
  // int8: sums of int8 values are exact in fp32 while 127 P < 2^24 (P < 132104), and beyond
  // that rounded like any fp32 sum (relative 2^-24).
  if (hw.quantised())
    p = withQuantEpilogue(p, nullptr);
  return p;
}

GlobalPoolModel::GlobalPoolModel(const GroupPlan &p, const Hw &hw, int64_t C, int64_t P,
                                 int64_t l1Free, bool doubleBuffer)
    : hw(hw), C(C), P(P), nb(doubleBuffer ? 2 : 1), nres(tensorOperands(p)), eb(hw.actBytes()),
      opsPerElem(epilogueOpsPerElement(p)), l1Free(l1Free) {}

bool GlobalPoolModel::fits(const GlobalPoolTiling &x) const {
  const int64_t tc = x.tc, tp = x.tp;
  if (tc < 1 || tp < 1 || tc > std::min(C, hw.maxDim()))
    return false;
  auto al = [&](int level, int64_t bytes) { return alignUp(bytes, hw.alignment(level)); };
  return tp <= hw.maxDim() && al(hw.acc, tc * 4) * nb <= hw.capacity(hw.acc) &&
         nb * (al(hw.l1, tp * tc * eb) + al(hw.l1, tc * eb) * (1 + nres)) <= l1Free;
}

double GlobalPoolModel::cost(const GlobalPoolTiling &x) const {
  const int64_t tiles = N * ceilDiv(C, x.tc) * ceilDiv(P, std::min(x.tp, P));
  return streamCost(hw, nb, tiles, double(N * C * P * eb + N * C * eb * nres),
                    double(N * C * eb), double(N * C * (P + opsPerElem)));
}

std::vector<int64_t> GlobalPoolModel::tcValues() const {
  std::vector<int64_t> v;
  for (int64_t tc = std::min(C, hw.maxDim()); tc >= 1; tc /= 2)
    v.push_back(tc);
  return v;
}

std::vector<int64_t> GlobalPoolModel::tpValues() const {
  std::vector<int64_t> v;
  for (int64_t tp = 1; tp < P; tp *= 2)
    v.push_back(tp);
  v.push_back(P);
  return v;
}

std::optional<GlobalPoolTiling> GlobalPoolModel::heuristic() const {
  for (int64_t tc : tcValues()) {
    if (!fits({tc, 1}))
      continue;
    // Doubling while the doubled tile fits, then clipped to P: a P that fits whose next power
    // of two does not stays at the power of two below it.
    int64_t tp = 1;
    while (tp < P && fits({tc, tp * 2}))
      tp *= 2;
    return GlobalPoolTiling{tc, std::min(tp, P)};
  }
  return std::nullopt;
}

namespace {

// The global pool's loop nest over images and channel blocks: pixel chunks summed into the
// accumulator (a stride-0 destination over the pixels reduces), the epilogue and the store.
Stmt globalPoolNest(const GroupPlan &plan, const GroupPlan &p, const GlobalPoolModel &m,
                    const GlobalPoolTiling &x, const std::vector<OnChip> &bufs,
                    const std::vector<OnChip> &rbufs, const std::vector<View> &consts,
                    const Builder &b, const DramCtx &d, int64_t N) {
  const Hw &hw = m.hw;
  const isa::ElemType act = hw.act;
  const int64_t eb = m.eb, C = m.C, P = m.P, tc = x.tc, tp = x.tp;
  const OnChip &xbuf = bufs[0], &obuf = bufs[1], &cbuf = bufs[2];
  const int64_t CB = ceilDiv(C, tc), PB = ceilDiv(P, tp);
  Var n = Var::make("n"), cb = Var::make("cb"), pb = Var::make("pb");
  Expr itO = Expr(n) * CB + cb;
  Expr it = itO * PB + pb;
  Expr tcc = min(imm(tc), C - Expr(cb) * tc);
  Expr tpc = min(imm(tp), P - Expr(pb) * tp);
  const int64_t xAddr = d.addrOf(plan.input), yAddr = d.addrOf(plan.output);
  View xsrc{d.level(plan.input, hw),
            imm(xAddr) + ((Expr(n) * P + Expr(pb) * tp) * C + Expr(cb) * tc) * eb, act};
  xsrc.s1 = imm(C);
  View xdst{hw.l1, xbuf.at(it), act};
  xdst.s1 = tcc;
  // The running sum: a stride-0 destination over the pixel dimension reduces.
  View sum{hw.acc, cbuf.at(itO), isa::ElemType::F32};
  sum.s1 = imm(0);
  View rest = xdst;
  rest.addr = xdst.addr + tcc * eb;
  Stmt firstChunk = seq({b.vector(isa::VecOp::Copy, sum, xdst, View{}, Dims{tcc, imm(1), imm(1)}),
                         b.vector(isa::VecOp::Add, sum, sum, rest, Dims{tcc, tpc - 1, imm(1)})});
  Stmt laterChunk = b.vector(isa::VecOp::Add, sum, sum, xdst, Dims{tcc, tpc, imm(1)});
  Stmt chunk = seq({b.load(xsrc, xdst, Dims{tcc, tpc, imm(1)}),
                    IfThenElse::make(eq(pb, imm(0)), firstChunk, laterChunk)});
  std::vector<Stmt> body = {forLoop(pb, imm(0), imm(PB), chunk)};
  Expr elem0 = Expr(n) * C + Expr(cb) * tc;
  std::vector<View> ops = operandsAtChannel(p, consts, Expr(cb) * tc);
  stageTensorOperands(p, b, d, rbufs, itO, elem0, C, tcc, imm(1), ops, body);
  View acc{hw.acc, cbuf.at(itO), isa::ElemType::F32};
  View out{hw.l1, obuf.at(itO), act};
  Dims ed{tcc, imm(1), imm(1)};
  View ydst{d.level(plan.output, hw), imm(yAddr) + elem0 * eb, act};
  appendEpilogueAndStore(p, b, acc, acc, out, ydst, ops, ed, body);
  return forLoop(n, imm(0), imm(N), forLoop(cb, imm(0), imm(CB), seq(body)));
}

} // namespace

Kernel lowerGlobalPoolTiling(const GroupPlan &plan, const graph::Graph &g, Builder &b,
                             const DramCtx &d, const KernelOptions &o,
                             const std::optional<GlobalPoolTiling> &forced) {
  const Hw &hw = b.hw();
  const graph::Value &xv = g.value(plan.input);
  const int64_t N = xv.shape[0], C = xv.shape[1], P = xv.shape[2] * xv.shape[3];
  const int64_t eb = hw.actBytes();
  GroupPlan p = globalPoolKernelPlan(plan, hw, P);
  Kernel k;
  std::vector<View> consts;
  std::vector<Stmt> prologue;
  k.reject = stageEpilogueConstants(p, b, d, consts, prologue);
  if (k.reject)
    return k;
  GlobalPoolModel m(p, hw, C, P, b.freeBytes(hw.l1), o.doubleBuffer);
  m.N = N;
  const std::optional<GlobalPoolTiling> x = forced ? forced : m.heuristic();
  if (!x || !m.fits(*x)) {
    k.reject = kernelReject(RejectKind::Capacity,
                            "no tiling of the global pool fits the on-chip buffers");
    return k;
  }
  const int nb = m.nb;
  const int64_t tc = x->tc, tp = x->tp;
  std::vector<OnChip> bufs = {{"x_l1", hw.l1, tp * tc * eb, nb},
                              {"y_l1", hw.l1, tc * eb, nb},
                              {"acc", hw.acc, tc * 4, nb}};
  std::vector<OnChip> rbufs = residualBuffers(p, hw, tc * eb, nb);
  std::vector<OnChip *> all = {&bufs[0], &bufs[1], &bufs[2]};
  for (OnChip &r : rbufs)
    all.push_back(&r);
  NPUC_ASSERT(reserveAll(b, all), "the chosen global-pool tile was checked to fit");
  prologue.push_back(globalPoolNest(plan, p, m, *x, bufs, rbufs, consts, b, d, N));
  k.body = b.wrapAllocations(seq(prologue));
  k.vectorElems = N * C * (P + epilogueOpsPerElement(p));
  k.dramBytes =
      N * C * P * eb + N * C * eb * (1 + residualOperands(p)) + broadcastOperandBytes(p, eb);
  k.tiling = fmt::format("global average pool: {} channels x {} pixels per tile, {} chunk(s) "
                         "reduced into the accumulator; {}",
                         tc, tp, ceilDiv(P, tp),
                         o.doubleBuffer ? "double-buffered" : "single-buffered");
  return k;
}

Kernel lowerGlobalPoolKernel(const GroupPlan &plan, const graph::Graph &g, Builder &b,
                             const DramCtx &d, const KernelOptions &o) {
  return lowerGlobalPoolTiling(plan, g, b, d, o, std::nullopt);
}

// ---- elementwise chains ----

GroupPlan eltwiseKernelPlan(const GroupPlan &plan, const Hw &hw) {
  // int8: the first op reads the streamed input's int8 values (in its scale).
  return hw.quantised() ? withQuantEpilogue(plan, nullptr) : plan;
}

EltwiseModel::EltwiseModel(const GroupPlan &p, const Hw &hw, int64_t l1Free, bool doubleBuffer)
    : hw(hw), C(p.channels), P(p.elements / std::max<int64_t>(p.channels, 1)),
      nb(doubleBuffer ? 2 : 1), nres(tensorOperands(p)), eb(hw.actBytes()),
      opsPerElem(epilogueOpsPerElement(p)), l1Free(l1Free) {}

bool EltwiseModel::fits(const EltwiseTiling &x) const {
  const int64_t tp = x.tp;
  if (tp < 1 || C > hw.maxDim())
    return false;
  auto al = [&](int level, int64_t bytes) { return alignUp(bytes, hw.alignment(level)); };
  return tp <= hw.maxDim() && al(hw.acc, tp * C * 4) * nb <= hw.capacity(hw.acc) &&
         nb * al(hw.l1, tp * C * eb) * (2 + nres) <= l1Free;
}

double EltwiseModel::cost(const EltwiseTiling &x) const {
  const double elems = double(P * C);
  return streamCost(hw, nb, ceilDiv(P, std::min(x.tp, P)), elems * double(eb * (1 + nres)),
                    elems * double(eb), elems * double(opsPerElem));
}

std::vector<int64_t> EltwiseModel::tpValues() const {
  std::vector<int64_t> v;
  for (int64_t tp = 1; tp < P; tp *= 2)
    v.push_back(tp);
  v.push_back(P);
  return v;
}

std::optional<EltwiseTiling> EltwiseModel::heuristic() const {
  if (!fits({1}))
    return std::nullopt;
  // Doubling while the doubled tile fits, then clipped to P (as the global pool).
  int64_t tp = 1;
  while (tp < P && fits({tp * 2}))
    tp *= 2;
  return EltwiseTiling{std::min(tp, P)};
}

Kernel lowerEltwiseTiling(const GroupPlan &plan, const graph::Graph &, Builder &b,
                          const DramCtx &d, const KernelOptions &o,
                          const std::optional<EltwiseTiling> &forced) {
  const Hw &hw = b.hw();
  const isa::ElemType act = hw.act;
  const int64_t eb = hw.actBytes();
  const GroupPlan p = eltwiseKernelPlan(plan, hw);
  Kernel k;
  std::vector<View> consts;
  std::vector<Stmt> prologue;
  k.reject = stageEpilogueConstants(p, b, d, consts, prologue);
  if (k.reject)
    return k;
  const EltwiseModel m(p, hw, b.freeBytes(hw.l1), o.doubleBuffer);
  const int64_t C = m.C, P = m.P;
  const std::optional<EltwiseTiling> x = forced ? forced : m.heuristic();
  if (!x || !m.fits(*x)) {
    k.reject = kernelReject(
        RejectKind::Capacity,
        fmt::format("an elementwise row of {} channels does not fit the on-chip buffers", C));
    return k;
  }
  const int nb = m.nb;
  const int64_t tp = x->tp;
  const int64_t PB = ceilDiv(P, tp);
  OnChip xbuf{"x_l1", hw.l1, tp * C * eb, nb};
  OnChip obuf{"y_l1", hw.l1, tp * C * eb, nb};
  OnChip cbuf{"acc", hw.acc, tp * C * 4, nb};
  std::vector<OnChip> rbufs = residualBuffers(p, hw, tp * C * eb, nb);
  std::vector<OnChip *> all = {&xbuf, &obuf, &cbuf};
  for (OnChip &r : rbufs)
    all.push_back(&r);
  NPUC_ASSERT(reserveAll(b, all), "the chosen elementwise tile was checked to fit");

  Var pb = Var::make("pb");
  Expr tpc = min(imm(tp), P - Expr(pb) * tp);
  Expr elem0 = Expr(pb) * (tp * C);
  View xsrc{d.level(p.input, hw), imm(d.addrOf(p.input)) + elem0 * eb, act};
  xsrc.s1 = imm(C);
  View xdst{hw.l1, xbuf.at(pb), act};
  xdst.s1 = imm(C);
  // A resident input is read where it is (same layout as the tile: rows of C).
  const bool xInPlace = inPlace(hw, xsrc);
  std::vector<Stmt> body;
  if (!xInPlace)
    body.push_back(b.load(xsrc, xdst, Dims{imm(C), tpc, imm(1)}));
  std::vector<View> ops = operandsAtChannel(p, consts, imm(0));
  stageTensorOperands(p, b, d, rbufs, pb, elem0, C, imm(C), tpc, ops, body);
  View acc{hw.acc, cbuf.at(pb), isa::ElemType::F32};
  acc.s1 = imm(C);
  View out{hw.l1, obuf.at(pb), act};
  out.s1 = imm(C);
  Dims ed{imm(C), tpc, imm(1)};
  View ydst{d.level(p.output, hw), imm(d.addrOf(p.output)) + elem0 * eb, act};
  ydst.s1 = imm(C);
  const View &src = xInPlace ? xsrc : xdst;
  appendEpilogueAndStore(p, b, src, acc, out, ydst, ops, ed, body);
  prologue.push_back(forLoop(pb, imm(0), imm(PB), seq(body)));
  k.body = b.wrapAllocations(seq(prologue));
  k.vectorElems = p.elements * epilogueOpsPerElement(p);
  k.dramBytes = p.elements * eb * (2 + residualOperands(p)) + broadcastOperandBytes(p, eb);
  k.tiling = fmt::format("elementwise: {} x {} elements per tile, {} tile(s); {}", tp, C, PB,
                         o.doubleBuffer ? "double-buffered" : "single-buffered");
  return k;
}

Kernel lowerEltwiseKernel(const GroupPlan &plan, const graph::Graph &g, Builder &b,
                          const DramCtx &d, const KernelOptions &o) {
  return lowerEltwiseTiling(plan, g, b, d, o, std::nullopt);
}

} // namespace npuc::npu
