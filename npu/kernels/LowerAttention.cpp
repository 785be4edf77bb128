// LowerAttention.cpp - attention in one kernel (Plan.h AttentionParams): scores = Q x K and
// their epilogue (scale, mask), P = Softmax(scores) along the last axis, Y = P x V, with the
// scores and P kept in L1 one block of query rows at a time, so that they never reach DRAM (at
// sequence 2048 they are 8 MB per head in fp16).
//
// Per batch (b0, b1: the heads) and block of tm query rows:
//   1. the Q panel [tm x K] -> L1; per score tile of tn columns: the K panel [K x tn] (or a slice
//      of K held whole in L1 for the batch), the epilogue's residual tiles (a mask), the k loop
//      through L0 on the tensor unit, and the epilogue from the accumulator into the block's
//      scores [tm x S] in L1 (fp16, as the unfused groups would store them);
//   2. Softmax on the vector unit over the block's rows, as the loop-nest kernel computes it:
//      the row max (a max reduction, destination stride 0), e = exp(s - max) in fp32, the row sum
//      (an add reduction in column order), P = e / sum written over the scores in fp16;
//   3. per k-chunk of tk2 score columns: a slice of P (L1 -> L0A, row stride S) and of V (its
//      chunk, or a slice of V held whole in L1) into L0B, multiply-accumulate; the fp32 result is
//      rounded to fp16 and stored to the output through its strides.
// With double buffering every per-block buffer has two copies indexed by the block counter's
// parity, so block i+1's first product runs on the tensor unit while block i's Softmax runs on
// the vector unit. K and V are either streamed per block (kv = 0: K once per score tile, V once
// per chunk) or held whole per batch (kv = 1 or 2 copies), loaded once per head.
#include "npu/kernels/Attention.h"

#include "npu/kernels/BatchMatmul.h"
#include "npu/kernels/SpaceSupport.h"

#include "support/Error.h"

#include <fmt/format.h>

namespace npuc::npu {

using namespace tir;

AttnModel::AttnModel(const GroupPlan &p, const Hw &hw, int64_t l1Free, bool doubleBuffer)
    : hw(hw), q(p.bmm), pv(p.attn.pv), M(p.bmm.M), K(p.bmm.K), S(p.bmm.N), D(p.attn.pv.N),
      Bt(p.bmm.batches()), nb(doubleBuffer ? 2 : 1), nres(tensorOperands(p)),
      nresDram(residualOperands(p)), opsPerElem(epilogueOpsPerElement(p)), l1Free(l1Free) {}

bool AttnModel::fits(const AttnTiling &x) const {
  const int64_t maxDim = hw.maxDim(), maxStride = hw.onChipStrideMax();
  const int64_t tm = x.tm, tn = x.tn, tk = x.tk, tk2 = x.tk2;
  if (tm < 1 || tn < 1 || tk < 1 || tk2 < 1 || x.kv < 0 || x.kv > 2)
    return false;
  for (int64_t v : {tm, tn, tk, tk2, D, K, S})
    if (v > maxDim || v > maxStride)
      return false;
  auto al = [&](int level, int64_t bytes) { return alignUp(bytes, hw.alignment(level)); };
  if ((al(hw.l0a, tm * tk * 2) + al(hw.l0a, tm * tk2 * 2)) * nb > hw.capacity(hw.l0a) ||
      (al(hw.l0b, tk * tn * 2) + al(hw.l0b, tk2 * D * 2)) * nb > hw.capacity(hw.l0b) ||
      (al(hw.acc, tm * tn * 4) + al(hw.acc, tm * D * 4)) * nb > hw.capacity(hw.acc))
    return false;
  const int64_t perBlock = al(hw.l1, tm * K * 2) + al(hw.l1, tm * S * 2) + al(hw.l1, tm * S * 4) +
                           2 * al(hw.l1, tm * 4) + al(hw.l1, tm * D * 2) +
                           nres * al(hw.l1, tm * tn * 2);
  const int64_t panels = x.kv == 0 ? nb * (al(hw.l1, K * tn * 2) + al(hw.l1, tk2 * D * 2))
                                   : x.kv * (al(hw.l1, K * S * 2) + al(hw.l1, S * D * 2));
  return nb * perBlock + panels <= l1Free;
}

// The simulator's uncontended instruction times summed per resource, as BmmModel's: with double
// buffering the row blocks pipeline, so the busiest resource sets the pace. K and V held in one
// copy load while nothing else runs.
double AttnModel::cost(const AttnTiling &x) const {
  const isa::Target &t = *hw.t;
  const double dramBw = t.dram.bytesPerCycle;
  const double feedBw = t.engines.at(static_cast<size_t>(hw.mov->engine)).bytesPerCycle;
  const double mmFixed = hw.mm->timing.latency + t.tensor.fillLatency;
  const double movLat = hw.mov->timing.latency;
  auto mb = blocks(M, x.tm), nbk = blocks(S, x.tn), kc = blocks(K, x.tk), kc2 = blocks(S, x.tk2);
  const double MB = double(mb.size()), NB = double(nbk.size()), KC = double(kc.size()),
               KC2 = double(kc2.size());
  auto cols = [&](int64_t n) { return ceilDiv(n, hw.tensorCols); };
  auto rows = [&](int64_t k) { return ceilDiv(k, hw.tensorRows); };
  double tensor = 0;
  for (int64_t m : mb) {
    for (int64_t n : nbk)
      for (int64_t kk : kc)
        tensor += mmFixed + double(m * rows(kk) * cols(n));
    for (int64_t kk : kc2)
      tensor += mmFixed + double(m * rows(kk) * cols(D));
  }
  tensor *= double(Bt);
  const double kvBytes = double(K * S + S * D) * 2;
  double dram = double(Bt) * (double(M * K + M * D) * 2 + (x.kv == 0 ? MB : 1) * kvBytes +
                              double(M * S) * 2 * nresDram);
  double feed =
      double(Bt) *
      ((NB * double(M * K) + MB * double(K * S) + double(M * S) + MB * double(S * D)) * 2 / feedBw +
       MB * (NB * KC + KC2) * 2 * movLat);
  double vec = double(Bt) * double(M * S * (opsPerElem + 5) + M * D) / t.vector.lanes;
  double parts[4] = {tensor, dram / dramBw, feed, vec};
  double best = 0, sum = 0;
  for (double v : parts) {
    best = std::max(best, v);
    sum += v;
  }
  const double exposedKv = x.kv == 1 ? double(Bt) * kvBytes / dramBw : 0;
  if (nb == 1)
    return sum + exposedKv;
  return best + (sum - best) / (double(Bt) * MB) + exposedKv;
}

std::vector<int64_t> AttnModel::tnValues() const {
  return doublingsBelow(hw.tensorCols, S);
}

std::vector<int64_t> AttnModel::tkValues() const {
  return multiplesBelow(hw.tensorRows, K);
}

std::vector<int64_t> AttnModel::tk2Values() const {
  return doublingsBelow(hw.tensorRows, S);
}

int64_t AttnModel::largestTm(int64_t tn, int64_t tk, int64_t tk2, int kv) const {
  return largestFitting(M, [&](int64_t tm) { return fits({tm, tn, tk, tk2, kv}); });
}

std::optional<AttnTiling> AttnModel::heuristic() const {
  std::optional<AttnTiling> best;
  double bestCost = 0;
  for (int kv = 0; kv <= 2; ++kv)
    for (int64_t tn : tnValues())
      for (int64_t tk : tkValues())
        for (int64_t tk2 : tk2Values()) {
          const int64_t tm = largestTm(tn, tk, tk2, kv);
          if (tm == 0)
            continue;
          const AttnTiling x{tm, tn, tk, tk2, kv};
          const double c = cost(x);
          if (!best || c < bestCost * 0.999) {
            best = x;
            bestCost = c;
          }
        }
  return best;
}

std::string AttnModel::noTiling() const {
  return fmt::format("no tiling of the attention ({} rows, {} score columns, K = {}, {} output "
                     "columns) fits the on-chip buffers (a block's scores in L1 in fp16 and fp32, "
                     "both products' slices in L0 and the accumulator)",
                     M, S, K, D);
}

namespace {

struct AttnBuffers {
  OnChip qpan, kpan, vpan, sbuf, ebuf, mrow, srow, ybuf, abuf, pbuf, bbuf, vbuf, cbuf, obuf;
  std::vector<OnChip> rbufs;
};

AttnBuffers reserveBuffers(const AttnModel &m, const AttnTiling &x, Builder &b) {
  const Hw &hw = m.hw;
  const int64_t tm = x.tm, tn = x.tn, tk = x.tk, tk2 = x.tk2, K = m.K, S = m.S, D = m.D;
  const int nb = m.nb, nkv = x.kv == 0 ? nb : x.kv;
  const bool whole = x.kv > 0;
  AttnBuffers r{{"q_l1", hw.l1, tm * K * 2, nb},
                {"k_l1", hw.l1, K * (whole ? S : tn) * 2, nkv},
                {"v_l1", hw.l1, (whole ? S : tk2) * D * 2, nkv},
                {"s_l1", hw.l1, tm * S * 2, nb},
                {"e_l1", hw.l1, tm * S * 4, nb},
                {"max_l1", hw.l1, tm * 4, nb},
                {"sum_l1", hw.l1, tm * 4, nb},
                {"y_l1", hw.l1, tm * D * 2, nb},
                {"q_l0a", hw.l0a, tm * tk * 2, nb},
                {"p_l0a", hw.l0a, tm * tk2 * 2, nb},
                {"k_l0b", hw.l0b, tk * tn * 2, nb},
                {"v_l0b", hw.l0b, tk2 * D * 2, nb},
                {"s_acc", hw.acc, tm * tn * 4, nb},
                {"y_acc", hw.acc, tm * D * 4, nb},
                {}};
  bool ok = true;
  for (OnChip *o : {&r.qpan, &r.kpan, &r.vpan, &r.sbuf, &r.ebuf, &r.mrow, &r.srow, &r.ybuf, &r.abuf,
                    &r.pbuf, &r.bbuf, &r.vbuf, &r.cbuf, &r.obuf})
    ok = ok && b.reserve(*o);
  r.rbufs.resize(static_cast<size_t>(m.nres));
  for (int i = 0; i < m.nres; ++i) {
    r.rbufs[static_cast<size_t>(i)] = OnChip{fmt::format("r{}_l1", i), hw.l1, tm * tn * 2, nb};
    ok = ok && b.reserve(r.rbufs[static_cast<size_t>(i)]);
  }
  NPUC_ASSERT(ok, "the chosen tiling was checked to fit every level");
  return r;
}

// The counters of one block of query rows (blk, flat over the batches) and its inner loops.
struct AttnLoops {
  Var nb = Var::make("nb"), kc = Var::make("kc"), kc2 = Var::make("kc2");
  Expr b0, b1, mb, bidx, blk, tile, step, step2, kvAt, mcur, m0;
};

AttnLoops loopsAt(const AttnModel &m, const AttnTiling &x, const Expr &blk) {
  const int64_t MB = ceilDiv(m.M, x.tm), NB = ceilDiv(m.S, x.tn), KC = ceilDiv(m.K, x.tk),
                KC2 = ceilDiv(m.S, x.tk2);
  AttnLoops l;
  l.blk = blk;
  l.bidx = floordiv(blk, MB);
  l.mb = floormod(blk, MB);
  l.b0 = floordiv(l.bidx, m.q.batch[1]);
  l.b1 = floormod(l.bidx, m.q.batch[1]);
  l.tile = blk * NB + l.nb;
  l.step = l.tile * KC + l.kc;
  l.step2 = blk * KC2 + l.kc2;
  l.kvAt = l.bidx;
  l.mcur = min(imm(x.tm), m.M - l.mb * x.tm);
  l.m0 = l.mb * x.tm;
  return l;
}

// Step 1 for one score tile: K panel, residual tiles, the k loop, the epilogue into the scores.
Stmt scoreTile(const GroupPlan &p, const AttnModel &m, const AttnTiling &x, const AttnBuffers &bf,
               const std::vector<View> &consts, const Builder &b, const DramCtx &d,
               const AttnLoops &l) {
  const Hw &hw = m.hw;
  const BatchMatmulParams &q = m.q;
  const int64_t K = m.K, S = m.S, tn = x.tn, tk = x.tk, KC = ceilDiv(K, tk);
  const Expr ncur = min(imm(tn), S - Expr(l.nb) * tn), kcur = min(imm(tk), K - Expr(l.kc) * tk);
  const Expr n0 = Expr(l.nb) * tn;
  std::vector<Stmt> body;
  // The K panel: this tile's [K x ncur], or (kv > 0) a slice of K held whole for the batch.
  Expr kslice;
  Expr kstride;
  if (x.kv == 0) {
    View dst{hw.l1, bf.kpan.at(l.tile)};
    dst.s1 = ncur;
    body.push_back(b.load(productView(q.b, d, hw, l.b0, l.b1, n0 * q.b.col, q.b.col, q.b.row), dst,
                          Dims{ncur, imm(K), imm(1)}));
    kslice = bf.kpan.at(l.tile) + Expr(l.kc) * tk * ncur * 2;
    kstride = ncur;
  } else {
    kslice = bf.kpan.at(l.kvAt) + (Expr(l.kc) * tk * S + n0) * 2;
    kstride = imm(S);
  }
  // Residual (mask) tiles of the scores' shape -> L1; epilogue operand views of this tile.
  const std::vector<View> ops = stageProductEpilogue(p, q, consts, bf.rbufs, b, d, l.b0, l.b1, l.m0,
                                                     n0, l.tile, l.mcur, ncur, body);
  View asl{hw.l1, bf.qpan.at(l.blk) + Expr(l.kc) * (tk * 2)};
  asl.s1 = imm(K);
  View adst{hw.l0a, bf.abuf.at(l.step)};
  adst.s1 = kcur;
  View bsl{hw.l1, kslice};
  bsl.s1 = kstride;
  View bdst{hw.l0b, bf.bbuf.at(l.step)};
  bdst.s1 = ncur;
  Stmt kbody = seq({b.move(asl, adst, Dims{kcur, l.mcur, imm(1)}),
                    b.move(bsl, bdst, Dims{ncur, kcur, imm(1)}),
                    b.matmul(bf.abuf.at(l.step), bf.bbuf.at(l.step), bf.cbuf.at(l.tile), l.mcur,
                             kcur, ncur, min(Expr(l.kc), 1))});
  body.push_back(forLoop(l.kc, imm(0), imm(KC), kbody));
  View acc{hw.acc, bf.cbuf.at(l.tile), isa::ElemType::F32};
  acc.s1 = ncur;
  View scores{hw.l1, bf.sbuf.at(l.blk) + n0 * 2};
  scores.s1 = imm(S);
  body.push_back(applyEpilogue(p, b, acc, acc, scores, ops, Dims{ncur, l.mcur, imm(1)}));
  return seq(body);
}

// Step 2: Softmax over the block's rows of scores, P written over them in fp16.
Stmt softmaxRows(const AttnModel &m, const AttnBuffers &bf, const Builder &b, const AttnLoops &l) {
  const Hw &hw = m.hw;
  const int64_t S = m.S;
  using isa::VecOp;
  View s{hw.l1, bf.sbuf.at(l.blk)}; // [rows x S], fp16
  s.s1 = imm(S);
  View e{hw.l1, bf.ebuf.at(l.blk), isa::ElemType::F32};
  e.s1 = imm(S);
  View mx{hw.l1, bf.mrow.at(l.blk), isa::ElemType::F32}; // per row, broadcast along the row
  mx.s0 = imm(0);
  mx.s1 = imm(1);
  View sum{hw.l1, bf.srow.at(l.blk), isa::ElemType::F32};
  sum.s0 = imm(0);
  sum.s1 = imm(1);
  const Dims all{imm(S), l.mcur, imm(1)};
  const Dims column{l.mcur, imm(1), imm(1)};
  auto col = [](View v, int64_t rowStride) { // column 0, one element per row
    v.s0 = imm(rowStride);
    v.s1 = imm(0);
    return v;
  };
  View mxCol = mx, sumCol = sum;
  mxCol.s0 = sumCol.s0 = imm(1);
  mxCol.s1 = sumCol.s1 = imm(0);
  std::vector<Stmt> ops = {
      b.vector(VecOp::Copy, mxCol, col(s, S), View{}, column), // max starts at column 0
      b.vector(VecOp::Max, mx, mx, s, all), b.vector(VecOp::Sub, e, s, mx, all),
      b.vector(VecOp::Exp, e, e, View{}, all),
      b.vector(VecOp::Copy, sumCol, col(e, S), View{}, column)};
  if (S > 1) { // the row sums in column order, from column 1
    View rest = e;
    rest.addr = e.addr + 4;
    ops.push_back(b.vector(VecOp::Add, sum, sum, rest, Dims{imm(S - 1), l.mcur, imm(1)}));
  }
  ops.push_back(b.vector(VecOp::Div, s, e, sum, all));
  return seq(ops);
}

// Step 3: Y = P x V for the block, rounded to fp16 and stored.
Stmt secondProduct(const AttnModel &m, const AttnTiling &x, const AttnBuffers &bf, const Builder &b,
                   const DramCtx &d, const AttnLoops &l) {
  const Hw &hw = m.hw;
  const BatchMatmulParams &pv = m.pv;
  const int64_t S = m.S, D = m.D, tk2 = x.tk2, KC2 = ceilDiv(S, tk2);
  const Expr k2cur = min(imm(tk2), S - Expr(l.kc2) * tk2), k0 = Expr(l.kc2) * tk2;
  std::vector<Stmt> kbody;
  Expr vslice;
  if (x.kv == 0) {
    View dst{hw.l1, bf.vpan.at(l.step2)};
    dst.s1 = imm(D);
    kbody.push_back(b.load(productView(pv.b, d, hw, l.b0, l.b1, k0 * pv.b.row, pv.b.col, pv.b.row),
                           dst, Dims{imm(D), k2cur, imm(1)}));
    vslice = bf.vpan.at(l.step2);
  } else {
    vslice = bf.vpan.at(l.kvAt) + k0 * D * 2;
  }
  View psl{hw.l1, bf.sbuf.at(l.blk) + k0 * 2};
  psl.s1 = imm(S);
  View pdst{hw.l0a, bf.pbuf.at(l.step2)};
  pdst.s1 = k2cur;
  View vsl{hw.l1, vslice};
  vsl.s1 = imm(D);
  View vdst{hw.l0b, bf.vbuf.at(l.step2)};
  vdst.s1 = imm(D);
  kbody.push_back(b.move(psl, pdst, Dims{k2cur, l.mcur, imm(1)}));
  kbody.push_back(b.move(vsl, vdst, Dims{imm(D), k2cur, imm(1)}));
  kbody.push_back(b.matmul(bf.pbuf.at(l.step2), bf.vbuf.at(l.step2), bf.obuf.at(l.blk), l.mcur,
                           k2cur, imm(D), min(Expr(l.kc2), 1)));
  View acc{hw.acc, bf.obuf.at(l.blk), isa::ElemType::F32};
  acc.s1 = imm(D);
  View y{hw.l1, bf.ybuf.at(l.blk)};
  y.s1 = imm(D);
  const Dims od{imm(D), l.mcur, imm(1)};
  return seq(
      {forLoop(l.kc2, imm(0), imm(KC2), seq(kbody)), b.vector(isa::VecOp::Copy, y, acc, View{}, od),
       b.store(y, productView(pv.y, d, hw, l.b0, l.b1, l.m0 * pv.y.row, pv.y.col, pv.y.row), od)});
}

// Stage A of a block: (K for its batch,) Q, the score tiles and Softmax; stage B: (V for its
// batch,) the second product and the store.
Stmt stageA(const GroupPlan &p, const AttnModel &m, const AttnTiling &x, const AttnBuffers &bf,
            const std::vector<View> &consts, const Builder &b, const DramCtx &d,
            const AttnLoops &l) {
  const Hw &hw = m.hw;
  const BatchMatmulParams &q = m.q;
  std::vector<Stmt> body;
  if (x.kv > 0) { // K whole for the batch, loaded with its first block
    View kdst{hw.l1, bf.kpan.at(l.kvAt)};
    kdst.s1 = imm(m.S);
    body.push_back(IfThenElse::make(
        eq(l.mb, imm(0)), b.load(productView(q.b, d, hw, l.b0, l.b1, imm(0), q.b.col, q.b.row),
                                 kdst, Dims{imm(m.S), imm(m.K), imm(1)})));
  }
  View qdst{hw.l1, bf.qpan.at(l.blk)};
  qdst.s1 = imm(m.K);
  body.push_back(b.load(productView(q.a, d, hw, l.b0, l.b1, l.m0 * q.a.row, q.a.col, q.a.row), qdst,
                        Dims{imm(m.K), l.mcur, imm(1)}));
  body.push_back(
      forLoop(l.nb, imm(0), imm(ceilDiv(m.S, x.tn)), scoreTile(p, m, x, bf, consts, b, d, l)));
  body.push_back(softmaxRows(m, bf, b, l));
  return seq(body);
}

Stmt stageB(const AttnModel &m, const AttnTiling &x, const AttnBuffers &bf, const Builder &b,
            const DramCtx &d, const AttnLoops &l) {
  const Hw &hw = m.hw;
  const BatchMatmulParams &pv = m.pv;
  std::vector<Stmt> body;
  if (x.kv > 0) { // V whole for the batch, after the previous batch's last product read its own
    View vdst{hw.l1, bf.vpan.at(l.kvAt)};
    vdst.s1 = imm(m.D);
    body.push_back(IfThenElse::make(
        eq(l.mb, imm(0)), b.load(productView(pv.b, d, hw, l.b0, l.b1, imm(0), pv.b.col, pv.b.row),
                                 vdst, Dims{imm(m.D), imm(m.S), imm(1)})));
  }
  body.push_back(secondProduct(m, x, bf, b, d, l));
  return seq(body);
}

// Double-buffered, the blocks are software-pipelined: iteration i runs stage A of block i and
// stage B of block i - 1, so that the tensor unit's queue holds block i's scores product ahead
// of block i - 1's second product, and block i's Softmax on the vector unit overlaps the
// products. Single-buffered, both stages of a block run in turn (they share its buffers).
Stmt attentionNest(const GroupPlan &p, const AttnModel &m, const AttnTiling &x,
                   const AttnBuffers &bf, const std::vector<View> &consts, const Builder &b,
                   const DramCtx &d) {
  const int64_t T = m.Bt * ceilDiv(m.M, x.tm);
  Var it = Var::make("blk");
  if (m.nb == 1) {
    AttnLoops l = loopsAt(m, x, it);
    return forLoop(it, imm(0), imm(T),
                   seq({stageA(p, m, x, bf, consts, b, d, l), stageB(m, x, bf, b, d, l)}));
  }
  AttnLoops cur = loopsAt(m, x, it), prev = loopsAt(m, x, Expr(it) - 1);
  return forLoop(it, imm(0), imm(T + 1),
                 seq({IfThenElse::make(lt(it, imm(T)), stageA(p, m, x, bf, consts, b, d, cur)),
                      IfThenElse::make(ge(it, imm(1)), stageB(m, x, bf, b, d, prev))}));
}

} // namespace

Kernel lowerAttentionTiling(const GroupPlan &p, const graph::Graph &g, Builder &b, const DramCtx &d,
                            const KernelOptions &o, const std::optional<AttnTiling> &forced) {
  const Hw &hw = b.hw();
  const BatchMatmulParams &q = p.bmm, &pv = p.attn.pv;
  Kernel k;
  if (q.M <= 0 || q.K <= 0 || q.N <= 0 || pv.N <= 0 || q.batches() <= 0) {
    k.reject = kernelReject(RejectKind::Unsupported, "an empty matrix product");
    return k;
  }
  std::vector<View> consts;
  std::vector<Stmt> prologue;
  k.reject = stageEpilogueConstants(p, b, d, consts, prologue);
  if (k.reject)
    return k;
  std::vector<graph::ValueId> read = productOperands(q);
  read.push_back(pv.b.value);
  const DramCtx dd = withConstantOperands(read, g, d, hw);
  const AttnModel m(p, hw, b.freeBytes(hw.l1), o.doubleBuffer);
  std::optional<AttnTiling> x = forced ? forced : m.heuristic();
  if (!x || !m.fits(*x)) {
    k.reject = kernelReject(RejectKind::Capacity, m.noTiling());
    return k;
  }
  const double est = m.cost(*x);
  const AttnBuffers bf = reserveBuffers(m, *x, b);
  prologue.push_back(attentionNest(p, m, *x, bf, consts, b, dd));
  k.body = b.wrapAllocations(seq(prologue));
  const int64_t Bt = m.Bt, M = m.M, S = m.S, D = m.D;
  k.macs = q.macs() + pv.macs();
  k.estCycles = est;
  k.vectorElems = Bt * (M * S * (m.opsPerElem + 5) + M * D);
  // Compulsory bytes: Q, K, V and the output once, each residual at its own size; the scores and
  // probabilities never leave the chip.
  int64_t elems = numElements(g.value(q.a.value).shape) + numElements(g.value(q.b.value).shape) +
                  numElements(g.value(pv.b.value).shape) + Bt * M * D;
  for (const EpilogueOp &e : p.epilogue)
    if (e.operand == EpilogueOp::Operand::Tensor)
      elems += numElements(g.value(e.tensor).shape);
  k.dramBytes = elems * 2 + broadcastOperandBytes(p, 2);
  k.tiling = fmt::format(
      "fused attention (scores and Softmax in L1): {} batch(es) of {}x{}x{} then x{}; blocks of {} "
      "query rows, score tiles of {} columns, k-chunks {} and {}; K and V {}; {}; estimated {:.0f} "
      "cycles",
      Bt, M, m.K, S, D, x->tm, x->tn, x->tk, x->tk2,
      x->kv == 0 ? "streamed per block"
                 : fmt::format("whole in L1 per batch ({} cop{})", x->kv, x->kv == 1 ? "y" : "ies"),
      o.doubleBuffer ? "double-buffered" : "single-buffered", est);
  return k;
}

} // namespace npuc::npu
