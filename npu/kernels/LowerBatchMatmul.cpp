// LowerBatchMatmul.cpp - MatMul of two activations (attention's Q x K^T, scores x V) on the
// tensor unit, batched over the output's leading dims (Plan.h BatchMatmulParams).
//
// Data flow per batch b and output tile (tm rows x tn columns): DRAM -> L1 (the A panel of tm
// rows x all K, once per row block; the B panel of all K x tn columns, once per batch when one
// column block covers N, else per tile), each read through the operand's element strides, so a
// broadcast batch dim (stride 0) or a Transpose folded into the group (permuted strides) costs
// nothing extra here -> L0A/L0B (an A slice [tm x tk] and a B slice [tk x tn] per k-chunk, movs)
// -> tensor unit, accumulating fp32 in the accumulator over the k-chunks -> vector unit (the
// fused epilogue: a constant scale, a mask Add of the output's shape, ...; rounding to fp16 into
// L1) -> DRAM. Unlike LowerMatmul's constant weights, B is not repacked at compile time: it is
// produced by an earlier group, so the panel load does the layout work. Every buffer has two
// copies when double buffering, indexed by the parity of its own counter, so the next batch's
// panels load while the current one multiplies.
#include "npu/kernels/BatchMatmul.h"

#include "npu/kernels/SpaceSupport.h"

#include "support/Error.h"
#include "support/Half.h"

#include <cstring>
#include <map>

#include <fmt/format.h>

namespace npuc::npu {

using namespace tir;

std::vector<int64_t> blocks(int64_t total, int64_t t) {
  std::vector<int64_t> v(static_cast<size_t>(total / t), t);
  if (total % t)
    v.push_back(total % t);
  return v;
}

BmmModel::BmmModel(const GroupPlan &p, const Hw &hw, int64_t l1Free, bool doubleBuffer)
    : hw(hw), q(p.bmm), M(p.bmm.M), K(p.bmm.K), N(p.bmm.N), Bt(p.bmm.batches()),
      nb(doubleBuffer ? 2 : 1), nres(tensorOperands(p)), nresDram(residualOperands(p)),
      opsPerElem(epilogueOpsPerElement(p)), l1Free(l1Free) {}

bool BmmModel::fits(const BmmTiling &x) const {
  const int64_t maxDim = hw.maxDim();
  const int64_t maxStride = hw.onChipStrideMax(); // panels and tiles must be encodable
  const int64_t tm = x.tm, tn = x.tn, tk = x.tk;
  if (tm < 1 || tn < 1 || tk < 1)
    return false;
  if (tm > maxDim || tn > maxDim || tk > maxDim || K > maxDim || K > maxStride || tn > maxStride)
    return false;
  auto al = [&](int level, int64_t bytes) { return alignUp(bytes, hw.alignment(level)); };
  if (al(hw.l0a, tm * tk * 2) * nb > hw.capacity(hw.l0a) ||
      al(hw.l0b, tk * tn * 2) * nb > hw.capacity(hw.l0b) ||
      al(hw.acc, tm * tn * 4) * nb > hw.capacity(hw.acc))
    return false;
  int64_t l1 =
      nb * (al(hw.l1, tm * K * 2) + al(hw.l1, K * tn * 2) + al(hw.l1, tm * tn * 2) * (1 + nres));
  return l1 <= l1Free;
}

// The simulator's uncontended instruction times (docs/ISA.md) summed per resource; with double
// buffering the tiles pipeline, so the busiest resource sets the pace and the others' share of
// one tile is exposed once (as LowerMatmul's model).
double BmmModel::cost(const BmmTiling &x) const {
  const isa::Target &t = *hw.t;
  const double dramBw = t.dram.bytesPerCycle;
  const double feedBw = t.engines.at(static_cast<size_t>(hw.mov->engine)).bytesPerCycle;
  const double mmFixed = hw.mm->timing.latency + t.tensor.fillLatency;
  const double movLat = hw.mov->timing.latency;
  auto mb = blocks(M, x.tm), nbk = blocks(N, x.tn), kc = blocks(K, x.tk);
  const double MB = double(mb.size()), NB = double(nbk.size()), KC = double(kc.size());
  double tensor = 0;
  for (int64_t m : mb)
    for (int64_t n : nbk)
      for (int64_t kk : kc)
        tensor += mmFixed + double(m * ceilDiv(kk, hw.tensorRows) * ceilDiv(n, hw.tensorCols));
  tensor *= double(Bt);
  const double bLoads = NB == 1 ? 1 : MB; // the B panel stays across row blocks when NB == 1
  double dram = double(Bt) * (double(M * K) * 2 + bLoads * double(K * N) * 2 +
                              double(M * N) * 2 * (1 + nresDram));
  double feed = double(Bt) * ((NB * double(M * K) * 2 + MB * double(K * N) * 2) / feedBw +
                              MB * NB * KC * 2 * movLat);
  double vec = double(Bt * M * N * opsPerElem) / t.vector.lanes;
  double parts[4] = {tensor, dram / dramBw, feed, vec};
  double best = 0, sum = 0;
  for (double v : parts) {
    best = std::max(best, v);
    sum += v;
  }
  if (nb == 1)
    return sum;
  return best + (sum - best) / (double(Bt) * MB * NB);
}

std::vector<int64_t> BmmModel::tnValues() const {
  return multiplesBelow(hw.tensorCols, N);
}

std::vector<int64_t> BmmModel::tkValues() const {
  return multiplesBelow(hw.tensorRows, K);
}

int64_t BmmModel::largestTm(int64_t tn, int64_t tk) const {
  return largestFitting(M, [&](int64_t tm) { return fits({tm, tn, tk}); }); // monotone in tm
}

std::optional<BmmTiling> BmmModel::heuristic(bool naive) const {
  std::vector<int64_t> tns = tnValues(), tks = tkValues();
  if (naive) { // the ablation baseline: array-sized tiles, one row at a time
    tns = {std::min<int64_t>(hw.tensorCols, N)};
    tks = {std::min<int64_t>(hw.tensorRows, K)};
  }
  std::optional<BmmTiling> best;
  double bestCost = 0;
  for (int64_t tn : tns)
    for (int64_t tk : tks) {
      int64_t tm = naive ? (fits({1, tn, tk}) ? 1 : 0) : largestTm(tn, tk);
      if (tm == 0)
        continue;
      double c = cost({tm, tn, tk});
      if (!best || c < bestCost * 0.999 ||
          (c <= bestCost * 1.001 && tm * tn * tk > best->tm * best->tn * best->tk)) {
        best = BmmTiling{tm, tn, tk};
        bestCost = c;
      }
    }
  return best;
}

std::string BmmModel::noTiling() const {
  return fmt::format("no tiling of the {}x{}x{} batched matrix product fits the on-chip buffers "
                     "(an A panel of K = {} and a B panel of K rows in L1)",
                     M, K, N, K);
}

namespace {

// The buffers of one tiling: panels, output and residual tiles in L1, slices in L0A/L0B, the
// accumulator tile.
struct BmmBuffers {
  OnChip apan, bpan, obuf, abuf, bbuf, cbuf;
  std::vector<OnChip> rbufs;
};

BmmBuffers reserveBuffers(const BmmModel &m, const BmmTiling &x, Builder &b) {
  const Hw &hw = m.hw;
  const int64_t tm = x.tm, tn = x.tn, tk = x.tk, K = m.K;
  const int nb = m.nb;
  BmmBuffers r{{"a_l1", hw.l1, tm * K * 2, nb},  {"b_l1", hw.l1, K * tn * 2, nb},
               {"y_l1", hw.l1, tm * tn * 2, nb}, {"a_l0a", hw.l0a, tm * tk * 2, nb},
               {"b_l0b", hw.l0b, tk * tn * 2, nb}, {"c_acc", hw.acc, tm * tn * 4, nb},
               {}};
  bool ok = b.reserve(r.apan) && b.reserve(r.bpan) && b.reserve(r.obuf) && b.reserve(r.abuf) &&
            b.reserve(r.bbuf) && b.reserve(r.cbuf);
  r.rbufs.resize(static_cast<size_t>(m.nres));
  for (int i = 0; i < m.nres; ++i) {
    r.rbufs[static_cast<size_t>(i)] = OnChip{fmt::format("r{}_l1", i), hw.l1, tm * tn * 2, nb};
    ok = ok && b.reserve(r.rbufs[static_cast<size_t>(i)]);
  }
  NPUC_ASSERT(ok, "the chosen tiling was checked to fit every level");
  return r;
}

} // namespace

DramCtx withConstantOperands(const std::vector<graph::ValueId> &read, const graph::Graph &g,
                             const DramCtx &d, const Hw &hw) {
  std::map<graph::ValueId, int64_t> at;
  for (graph::ValueId v : read) {
    const graph::Value &c = g.value(v);
    if (!c.f32 || at.count(v))
      continue;
    std::shared_ptr<const std::vector<float>> f = c.f32;
    at[v] = d.addConst(ConstBytes(f->size() * 2, [f] {
      std::vector<uint8_t> out(f->size() * 2);
      for (size_t i = 0; i < f->size(); ++i) {
        uint16_t h = floatToHalf((*f)[i]);
        std::memcpy(out.data() + 2 * i, &h, 2);
      }
      return out;
    }));
  }
  if (at.empty())
    return d;
  DramCtx dd = d;
  dd.addrOf = [at, d](graph::ValueId v) {
    auto it = at.find(v);
    return it != at.end() ? it->second : d.addrOf(v);
  };
  const int dram = hw.dram;
  dd.levelOf = [at, d, dram](graph::ValueId v) {
    return at.count(v) ? dram : (d.levelOf ? d.levelOf(v) : dram);
  };
  return dd;
}

View productView(const BatchMatmulParams::Operand &o, const DramCtx &d, const Hw &hw,
                 const Expr &b0, const Expr &b1, const Expr &at, int64_t s0, int64_t s1) {
  View v{d.level(o.value, hw),
         imm(d.addrOf(o.value)) + (b0 * o.batch[0] + b1 * o.batch[1] + at) * 2};
  v.s0 = imm(s0);
  v.s1 = imm(s1);
  return v;
}

std::vector<View> stageProductEpilogue(const GroupPlan &p, const BatchMatmulParams &q,
                                       const std::vector<View> &consts,
                                       const std::vector<OnChip> &rbufs, const Builder &b,
                                       const DramCtx &d, const Expr &b0, const Expr &b1,
                                       const Expr &m0, const Expr &n0, const Expr &it,
                                       const Expr &mcur, const Expr &ncur, std::vector<Stmt> &out) {
  const Hw &hw = b.hw();
  std::vector<View> ops = operandsAtChannel(p, consts, n0);
  size_t r = 0;
  for (size_t i = 0; i < p.epilogue.size(); ++i) {
    const EpilogueOp &e = p.epilogue[i];
    if (e.operand != EpilogueOp::Operand::Tensor)
      continue;
    // A residual of the output's shape and layout is read with the output's strides; one with
    // strides of its own (BatchMatmulParams::residuals) through those.
    auto own = q.residuals.find(e.tensor);
    BatchMatmulParams::Operand ro = own != q.residuals.end() ? own->second : q.y;
    ro.value = e.tensor;
    View rdst{hw.l1, rbufs[r++].at(it)};
    rdst.s1 = ncur;
    out.push_back(b.load(productView(ro, d, hw, b0, b1, m0 * ro.row + n0 * ro.col, ro.col, ro.row),
                         rdst, Dims{ncur, mcur, imm(1)}));
    ops[i] = rdst;
  }
  savedOperands(p, rbufs, it, ncur, hw.act, ops);
  return ops;
}

std::vector<graph::ValueId> productOperands(const BatchMatmulParams &q) {
  std::vector<graph::ValueId> read = {q.a.value, q.b.value};
  for (const auto &[v, o] : q.residuals)
    read.push_back(v);
  return read;
}

namespace {

// The loop nest of one tiling: per batch and row block the A panel, per column block the B
// panel (or once per batch), residual tiles, the k loop through L0 and the epilogue and store.
Stmt batchMatmulNest(const GroupPlan &p, const BmmModel &m, const BmmTiling &x,
                     const BmmBuffers &bf, const std::vector<View> &consts, const Builder &b,
                     const DramCtx &d) {
  const Hw &hw = m.hw;
  const BatchMatmulParams &q = m.q;
  const int64_t M = m.M, K = m.K, N = m.N, tm = x.tm, tn = x.tn, tk = x.tk;
  const int64_t MB = ceilDiv(M, tm), NB = ceilDiv(N, tn), KC = ceilDiv(K, tk);
  Var b0 = Var::make("b0"), b1 = Var::make("b1"), mb = Var::make("mb"), nbv = Var::make("nb"),
      kc = Var::make("kc");
  Expr bidx = Expr(b0) * q.batch[1] + b1;
  Expr aCnt = bidx * MB + mb;        // A panel counter
  Expr tile = aCnt * NB + nbv;       // output tile counter
  Expr bCnt = NB == 1 ? bidx : tile; // B panel counter
  Expr step = tile * KC + kc;        // L0 slice counter
  Expr mcur = min(imm(tm), M - Expr(mb) * tm);
  Expr ncur = min(imm(tn), N - Expr(nbv) * tn);
  Expr kcur = min(imm(tk), K - Expr(kc) * tk);
  Expr m0 = Expr(mb) * tm, n0 = Expr(nbv) * tn;

  // A panel [mcur x K] -> L1, row-major; the source strides do any transposition.
  View asrc = productView(q.a, d, hw, b0, b1, m0 * q.a.row, q.a.col, q.a.row);
  View adstL1{hw.l1, bf.apan.at(aCnt)};
  adstL1.s1 = imm(K);
  Stmt aLoad = b.load(asrc, adstL1, Dims{imm(K), mcur, imm(1)});
  // B panel [K x ncur] -> L1, row-major with row stride ncur.
  View bsrc = productView(q.b, d, hw, b0, b1, n0 * q.b.col, q.b.col, q.b.row);
  View bdstL1{hw.l1, bf.bpan.at(bCnt)};
  bdstL1.s1 = ncur;
  Stmt bLoad = b.load(bsrc, bdstL1, Dims{ncur, imm(K), imm(1)});

  std::vector<Stmt> tileBody;
  // B is loaded per tile, or once per batch (first row block) when one column block covers N.
  tileBody.push_back(NB == 1 ? IfThenElse::make(eq(mb, imm(0)), bLoad) : bLoad);
  // Residual (mask) tiles -> L1; epilogue operand views of this tile.
  const std::vector<View> ops = stageProductEpilogue(p, q, consts, bf.rbufs, b, d, b0, b1, m0, n0,
                                                     tile, mcur, ncur, tileBody);
  // The k loop: slice A and B into L0, multiply-accumulate (the first chunk overwrites).
  View asl{hw.l1, bf.apan.at(aCnt) + Expr(kc) * (tk * 2)};
  asl.s1 = imm(K);
  View adst{hw.l0a, bf.abuf.at(step)};
  adst.s1 = kcur;
  View bsl{hw.l1, bf.bpan.at(bCnt) + Expr(kc) * tk * ncur * 2};
  bsl.s1 = ncur;
  View bdst{hw.l0b, bf.bbuf.at(step)};
  bdst.s1 = ncur;
  Stmt kbody = seq({b.move(asl, adst, Dims{kcur, mcur, imm(1)}),
                    b.move(bsl, bdst, Dims{ncur, kcur, imm(1)}),
                    b.matmul(bf.abuf.at(step), bf.bbuf.at(step), bf.cbuf.at(tile), mcur, kcur,
                             ncur, min(Expr(kc), 1))});
  tileBody.push_back(forLoop(kc, imm(0), imm(KC), kbody));
  // Epilogue on the accumulator tile, then the store.
  View acc{hw.acc, bf.cbuf.at(tile), isa::ElemType::F32};
  acc.s1 = ncur;
  View out{hw.l1, bf.obuf.at(tile)};
  out.s1 = ncur;
  Dims ed{ncur, mcur, imm(1)};
  tileBody.push_back(applyEpilogue(p, b, acc, acc, out, ops, ed));
  // The tile in the output's layout (a 4-D output is NHWC in DRAM, so its columns are strided).
  tileBody.push_back(b.store(
      out, productView(q.y, d, hw, b0, b1, m0 * q.y.row + n0 * q.y.col, q.y.col, q.y.row), ed));

  Stmt rowBlock = seq({aLoad, forLoop(nbv, imm(0), imm(NB), seq(tileBody))});
  return forLoop(b0, imm(0), imm(q.batch[0]),
                 forLoop(b1, imm(0), imm(q.batch[1]), forLoop(mb, imm(0), imm(MB), rowBlock)));
}

} // namespace

Kernel lowerBatchMatmulTiling(const GroupPlan &p, const graph::Graph &g, Builder &b,
                              const DramCtx &d, const KernelOptions &o,
                              const std::optional<BmmTiling> &forced) {
  const Hw &hw = b.hw();
  const BatchMatmulParams &q = p.bmm;
  Kernel k;
  if (q.M <= 0 || q.K <= 0 || q.N <= 0 || q.batches() <= 0) {
    k.reject = kernelReject(RejectKind::Unsupported, "an empty matrix product");
    return k;
  }
  std::vector<View> consts;
  std::vector<Stmt> prologue;
  k.reject = stageEpilogueConstants(p, b, d, consts, prologue);
  if (k.reject)
    return k;
  const DramCtx dd = withConstantOperands(productOperands(q), g, d, hw);
  const BmmModel m(p, hw, b.freeBytes(hw.l1), o.doubleBuffer);
  std::optional<BmmTiling> x = forced ? forced : m.heuristic(o.naiveTiling);
  if (!x || !m.fits(*x)) {
    k.reject = kernelReject(RejectKind::Capacity, m.noTiling());
    return k;
  }
  const double est = m.cost(*x);
  const BmmBuffers bf = reserveBuffers(m, *x, b);
  prologue.push_back(batchMatmulNest(p, m, *x, bf, consts, b, dd));
  k.body = b.wrapAllocations(seq(prologue));
  const int64_t Bt = m.Bt, M = m.M, K = m.K, N = m.N, nres = m.nres;
  k.macs = q.macs();
  k.estCycles = est;
  k.vectorElems = Bt * M * N * m.opsPerElem;
  const int64_t aElems = numElements(g.value(q.a.value).shape);
  const int64_t bElems = numElements(g.value(q.b.value).shape);
  // Compulsory bytes: each operand once; a residual with strides of its own (a mask broadcast
  // over the batch) is its own size, not the output's.
  int64_t ownElems = 0;
  for (const auto &[v, o] : q.residuals)
    ownElems += numElements(g.value(v).shape);
  const int64_t sameShape = residualOperands(p) - static_cast<int64_t>(q.residuals.size());
  k.dramBytes =
      (aElems + bElems + Bt * M * N * (1 + sameShape) + ownElems) * 2 + broadcastOperandBytes(p, 2);
  std::string strided;
  if (q.a.col != 1 || q.b.col != 1 || q.folded)
    strided = fmt::format(
        "; A read with strides (m {}, k {}), B with (k {}, n {}){}", q.a.row, q.a.col, q.b.row,
        q.b.col, q.folded ? fmt::format(", {} Transpose(s) folded into the loads", q.folded) : "");
  k.tiling = fmt::format(
      "batched matmul on the tensor unit (activation B): {} batch(es) of {}x{}x{}; tile = {} rows "
      "x {} cols, k-chunk {} of {}{}; L1: A panel {}x{} + B panel {}x{} ({}) + output{}; {}{}; "
      "estimated {:.0f} cycles",
      Bt, M, K, N, x->tm, x->tn, x->tk, K, strided, x->tm, K, K, x->tn,
      ceilDiv(N, x->tn) == 1 ? "once per batch" : "per tile",
      nres ? fmt::format(" + {} residual", nres) : "",
      o.doubleBuffer ? "double-buffered at L1, L0 and the accumulator" : "single-buffered",
      o.naiveTiling ? "; naive tiling (ablation)" : "", est);
  return k;
}

Kernel lowerBatchMatmulKernel(const GroupPlan &p, const graph::Graph &g, Builder &b,
                              const DramCtx &d, const KernelOptions &o) {
  return lowerBatchMatmulTiling(p, g, b, d, o, std::nullopt);
}

} // namespace npuc::npu
