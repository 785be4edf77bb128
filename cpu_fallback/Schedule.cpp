// Schedule.cpp - the CPU schedules (see Schedule.h for the loop structure they produce).
#include "cpu_fallback/Schedule.h"

#include "cpu_fallback/Codegen.h"
#include "cpu_fallback/Epilogue.h"
#include "support/Error.h"
#include "support/HugePages.h"
#include "tir/IRVisitor.h"
#include "tir/Verify.h"

#include <llvm/ADT/StringMap.h>
#include <llvm/TargetParser/Host.h>

#include <algorithm>
#include <set>

namespace npuc::cpu {

int64_t hostVectorLanes() {
  static const int64_t lanes = [] {
    llvm::StringMap<bool> f;
    llvm::sys::getHostCPUFeatures(f);
    if (f.lookup("avx512f"))
      return 16;
    if (f.lookup("avx") || f.lookup("neon"))
      return f.lookup("avx") ? 8 : 4;
    return 4;
  }();
  return lanes;
}

namespace {

using namespace npuc::tir;

/// Buffers a statement stores to.
class StoreTargets : public IRVisitor {
public:
  std::set<const BufferNode *> targets;
  Buffer any;
  void visitStore(const StoreNode *op) override {
    targets.insert(op->buffer.get());
    any = op->buffer;
    IRVisitor::visitStore(op);
  }
};

/// Whether `s` loads from `b`.
bool readsBuffer(const Stmt &s, const Buffer &b) {
  struct Reads : IRVisitor {
    const BufferNode *b;
    bool found = false;
    void visitLoad(const LoadNode *op) override {
      found = found || op->buffer.get() == b;
      IRVisitor::visitLoad(op);
    }
  } r;
  r.b = b.get();
  r.visit(s);
  return r.found;
}

Expr fl(double v) {
  return fimm(v, DataType::Float(32));
}

/// Row-major flat index of `idx` in `shape`.
Expr flat(const std::vector<Expr> &idx, const std::vector<int64_t> &shape) {
  Expr e = idx[0];
  for (size_t i = 1; i < idx.size(); ++i)
    e = e * shape[i] + idx[i];
  return e;
}

int64_t paramIndex(const std::vector<graph::ValueId> &params, graph::ValueId v) {
  auto it = std::find(params.begin(), params.end(), v);
  return it == params.end() ? -1 : int64_t(it - params.begin());
}

struct ConvGeom {
  int64_t N, C, H, W, M, KH, KW, OH, OW, sh, sw, dh, dw, pt, pl, pb, pr;
};

/// Output pixels per register tile: a divisor of the row in [5, 8] when there is one (no
/// remainder tile), else 8.
int64_t pixelTile(int64_t ow) {
  for (int64_t t = 8; t >= 5; --t)
    if (ow % t == 0)
      return t;
  return std::min<int64_t>(8, ow);
}

/// The scheduled convolution writing `out` (see Schedule.h).
/// The zero-padded copy of image `n` of `x` into `xp` ([C][HP][WP]), parallel over channels:
/// each channel plane is zeroed, then its interior rows copied. Both loops are contiguous on
/// both sides (a single pass with clamped loads and a select would be vectorised with gathers
/// and scatters, which cost more than the depthwise convolution itself).
Stmt padCopy(const ConvGeom &k, const Buffer &x, const Var &n, const Buffer &xp) {
  const int64_t HP = k.H + k.pt + k.pb, WP = k.W + k.pl + k.pr;
  Var pc = Var::make("pc"), pz = Var::make("pz"), ih = Var::make("ih"), iw = Var::make("iw");
  Stmt zero = forLoop(pz, imm(0), imm(HP * WP), store(xp, fl(0), pc * (HP * WP) + pz));
  Stmt copy = forLoop(ih, imm(0), imm(k.H),
                      forLoop(iw, imm(0), imm(k.W),
                              store(xp, load(x, flat({n, pc, ih, iw}, {k.N, k.C, k.H, k.W})),
                                    flat({pc, ih + k.pt, iw + k.pl}, {k.C, HP, WP}))));
  return forLoop(pc, imm(0), imm(k.C), seq({zero, copy}), ForKind::Parallel);
}

Stmt vectorized(Var v, int64_t lanes, Stmt body) {
  return AttrStmtNode::make(kVectorizeAttr, imm(lanes), forLoop(v, imm(0), imm(lanes), body));
}

/// The depthwise convolution (group = C = M; see Schedule.h).
Stmt depthwiseNest(const ConvGeom &k, const Buffer &x, const Buffer &w, const Buffer *bias,
                   const EpilogueFusion &epi) {
  const int64_t HP = k.H + k.pt + k.pb, WP = k.W + k.pl + k.pr;
  const bool padded = HP != k.H || WP != k.W;
  Var n = Var::make("n"), c = Var::make("c"), oh = Var::make("oh"), tb = Var::make("tb");
  Buffer xp = padded ? Buffer::make(x->name + "_padded", DataType::Float(32), {k.C, HP, WP}) : x;
  auto tile = [&](Expr ow0, int64_t lanes) {
    Buffer acc = Buffer::make("acc", DataType::Float(32), {lanes});
    Var v = Var::make("v"), kh = Var::make("kh"), kw = Var::make("kw");
    Expr xIdx = padded
                    ? flat({c, oh * k.sh + kh * k.dh, (ow0 + v) * k.sw + kw * k.dw}, {k.C, HP, WP})
                    : flat({n, c, oh * k.sh + kh * k.dh, (ow0 + v) * k.sw + kw * k.dw},
                           {k.N, k.C, k.H, k.W});
    Stmt tap = store(acc, load(acc, v) + load(w, (c * k.KH + kh) * k.KW + kw) * load(xp, xIdx), v);
    Stmt body =
        seq({store(acc, bias ? load(*bias, c) : fl(0), v),
             forLoop(kh, imm(0), imm(k.KH), forLoop(kw, imm(0), imm(k.KW), tap, ForKind::Unrolled),
                     ForKind::Unrolled),
             epi.at({n, c, oh, ow0 + v}, load(acc, v))});
    return AllocateNode::make(acc, vectorized(v, lanes, body));
  };
  const int64_t L = std::min(hostVectorLanes(), k.OW), full = k.OW / L, rem = k.OW % L;
  std::vector<Stmt> row{forLoop(tb, imm(0), imm(full), tile(tb * L, L))};
  if (rem)
    row.push_back(tile(imm(full * L), rem));
  std::vector<Stmt> perImage;
  if (padded)
    perImage.push_back(padCopy(k, x, n, xp));
  perImage.push_back(
      forLoop(c, imm(0), imm(k.C), forLoop(oh, imm(0), imm(k.OH), seq(row)), ForKind::Parallel));
  Stmt body = forLoop(n, imm(0), imm(k.N), seq(perImage));
  return padded ? AllocateNode::make(xp, body) : body;
}

/// Output channels per tile for `m` output channels.
int64_t tileChannels(int64_t m) {
  int64_t v = hostVectorLanes();
  return m > v ? 2 * v : v;
}

/// OIHW weights of `m` output channels (`kk` = C*KH*KW each) -> [m/MBV][kk][MBV], zero rows past
/// m: the same layout convNest's packing loop writes.
std::vector<float> packConvWeights(const std::vector<float> &w, int64_t m, int64_t kk) {
  const int64_t mbv = tileChannels(m), mo = (m + mbv - 1) / mbv;
  NPUC_ASSERT(int64_t(w.size()) == m * kk, "conv weight data matches its shape");
  // `npuc run` packs ResNet-50's 100 MB of weights before its first inference: a buffer advised
  // for huge pages, written in order through a pointer (the rows of one block are read in
  // step, each cache line of them used 16 times).
  std::vector<float> p = reservedLarge<float>(size_t(mo * kk * mbv));
  p.resize(size_t(mo * kk * mbv));
  float *dst = p.data();
  for (int64_t ob = 0; ob < mo; ++ob) {
    const int64_t rows = std::min(mbv, m - ob * mbv);
    const float *src = w.data() + ob * mbv * kk;
    for (int64_t r = 0; r < kk; ++r, dst += mbv)
      for (int64_t o = 0; o < mbv; ++o)
        dst[o] = o < rows ? src[o * kk + r] : 0.0f;
  }
  return p;
}

/// The scheduled convolution (see Schedule.h); `wp` is the packed weight buffer, filled from
/// `w` here unless `w` is null (pre-packed).
Stmt convNest(const ConvGeom &k, const Buffer &x, const Buffer *w, const Buffer &wp,
              const Buffer *bias, const EpilogueFusion &epi) {
  const int64_t HP = k.H + k.pt + k.pb, WP = k.W + k.pl + k.pr;
  const bool padded = HP != k.H || WP != k.W;
  const int64_t MBV = tileChannels(k.M); // output channels per tile: one or two vectors
  const int64_t Mo = (k.M + MBV - 1) / MBV;
  const bool ragged = k.M % MBV != 0;
  const int64_t KK = k.C * k.KH * k.KW;
  Var n = Var::make("n"), mo = Var::make("mo"), oh = Var::make("oh");
  Buffer xp = padded ? Buffer::make(x->name + "_padded", DataType::Float(32), {k.C, HP, WP}) : x;

  // Weights OIHW -> [Mo][C][KH][KW][MBV] (zero rows past M), so one tile's output channels for
  // one reduction step are one contiguous run of MBV floats.
  Stmt pack;
  if (w) {
    Var pm = Var::make("pm"), pk = Var::make("pk"), pj = Var::make("pj");
    Expr m = pm * MBV + pj;
    Expr v = load(*w, (ragged ? min(m, imm(k.M - 1)) : m) * KK + pk);
    if (ragged)
      v = select(m < imm(k.M), v, fl(0));
    pack = forLoop(
        pm, imm(0), imm(Mo),
        forLoop(pk, imm(0), imm(KK), vectorized(pj, MBV, store(wp, v, (pm * KK + pk) * MBV + pj))),
        ForKind::Parallel);
  }

  std::vector<Stmt> perImage;
  if (padded)
    perImage.push_back(padCopy(k, x, n, xp));

  // One register tile: `tw` output pixels [ow0, ow0 + tw) of row oh x MBV output channels.
  auto tile = [&](Expr ow0, int64_t tw) {
    // Fresh variables and buffer per tile: verify() wants every loop to bind its own Var.
    Buffer acc = Buffer::make("acc", DataType::Float(32), {tw * MBV});
    Var c = Var::make("c"), kh = Var::make("kh"), kw = Var::make("kw");
    Var t = Var::make("t"), t2 = Var::make("t"), t3 = Var::make("t"), j = Var::make("j");
    Var jv = Var::make("jv"), jv2 = Var::make("jv");
    Expr m = mo * MBV + jv;
    Expr b0 = bias ? load(*bias, ragged ? min(m, imm(k.M - 1)) : m) : fl(0);
    Stmt init = forLoop(t, imm(0), imm(tw), vectorized(jv, MBV, store(acc, b0, t * MBV + jv)),
                        ForKind::Unrolled);
    Expr xIdx = padded
                    ? flat({c, oh * k.sh + kh * k.dh, (ow0 + t2) * k.sw + kw * k.dw}, {k.C, HP, WP})
                    : flat({n, c, oh * k.sh + kh * k.dh, (ow0 + t2) * k.sw + kw * k.dw},
                           {k.N, k.C, k.H, k.W});
    Expr wIdx = (((mo * k.C + c) * k.KH + kh) * k.KW + kw) * MBV + jv2;
    Expr aIdx = t2 * MBV + jv2;
    Stmt fma = forLoop(
        t2, imm(0), imm(tw),
        vectorized(jv2, MBV, store(acc, load(acc, aIdx) + load(wp, wIdx) * load(xp, xIdx), aIdx)),
        ForKind::Unrolled);
    Stmt red = forLoop(c, imm(0), imm(k.C),
                       forLoop(kh, imm(0), imm(k.KH), forLoop(kw, imm(0), imm(k.KW), fma)));
    // NCHW output: each lane is a different channel plane, so the tile leaves lane by lane,
    // through the fused pointwise tail (Epilogue.h).
    Expr om = mo * MBV + j;
    Stmt st = epi.at({n, om, oh, ow0 + t3}, load(acc, t3 * MBV + j));
    if (ragged)
      st = IfThenElseNode::make(om < imm(k.M), st, Stmt());
    Stmt save = forLoop(t3, imm(0), imm(tw), forLoop(j, imm(0), imm(MBV), st, ForKind::Unrolled),
                        ForKind::Unrolled);
    return AllocateNode::make(acc, seq({init, red, save}));
  };
  const int64_t T = pixelTile(k.OW), full = k.OW / T, rem = k.OW % T;
  Var tb = Var::make("tb");
  std::vector<Stmt> row{forLoop(tb, imm(0), imm(full), tile(tb * T, T))};
  if (rem)
    row.push_back(tile(imm(full * T), rem));
  perImage.push_back(
      forLoop(mo, imm(0), imm(Mo), forLoop(oh, imm(0), imm(k.OH), seq(row)), ForKind::Parallel));
  Stmt body = forLoop(n, imm(0), imm(k.N), seq(perImage));
  if (w)
    body = AllocateNode::make(wp, seq({pack, body}));
  return padded ? AllocateNode::make(xp, body) : body;
}

/// `f`'s body rebuilt from the scheduled statements, less the `fused` ones after the anchor.
bool replaceBody(PrimFunc &f, const std::vector<const AllocateNode *> &allocs,
                 std::vector<Stmt> stmts, size_t fused) {
  stmts.erase(stmts.begin() + 1, stmts.begin() + 1 + std::ptrdiff_t(fused));
  Stmt nb = stmts.size() == 1 ? stmts[0] : seq(stmts);
  for (size_t i = allocs.size(); i-- > 0;)
    nb = AllocateNode::make(allocs[i]->buffer, nb);
  f.body = nb;
  verify(f);
  return true;
}

bool scheduleConv(const graph::Graph &g, const graph::Node &node,
                  const std::vector<graph::ValueId> &params, PrimFunc &f,
                  std::vector<PackedParam> *packed) {
  if (node.inputs.size() < 2)
    return false;
  const graph::Value &xv = g.value(node.inputs[0]), &wv = g.value(node.inputs[1]);
  const graph::Value &ov = g.value(node.outputs[0]);
  if (xv.shape.size() != 4 || wv.shape.size() != 4 || ov.shape.size() != 4)
    return false;
  int64_t xi = paramIndex(params, node.inputs[0]), wi = paramIndex(params, node.inputs[1]);
  bool hasBias = node.inputs.size() > 2 && node.inputs[2] != graph::kNoValue;
  int64_t bi = hasBias ? paramIndex(params, node.inputs[2]) : -1;
  if (xi < 0 || wi < 0 || (hasBias && bi < 0))
    return false;
  auto s = node.attrInts("strides", {1, 1}), d = node.attrInts("dilations", {1, 1});
  auto p = node.attrInts("pads", {0, 0, 0, 0});
  if (s.size() != 2 || d.size() != 2 || p.size() != 4)
    return false;
  ConvGeom k{xv.shape[0], xv.shape[1], xv.shape[2], xv.shape[3], wv.shape[0], wv.shape[2],
             wv.shape[3], ov.shape[2], ov.shape[3], s[0],        s[1],        d[0],
             d[1],        p[0],        p[1],        p[2],        p[3]};
  const int64_t group = node.attrInt("group", 1);
  const bool depthwise = group > 1 && group == k.C && k.M == k.C && wv.shape[1] == 1;
  if ((group != 1 && !depthwise) || (!depthwise && wv.shape[1] != k.C) || ov.shape[1] != k.M)
    return false;

  // The anchor's nest is the first statement under the group's Allocates.
  std::vector<const AllocateNode *> allocs;
  Stmt body = f.body;
  while (body.kind() == NodeKind::Allocate) {
    allocs.push_back(body.as<AllocateNode>());
    body = allocs.back()->body;
  }
  std::vector<Stmt> stmts;
  if (body.kind() == NodeKind::Seq)
    stmts = body.as<SeqNode>()->stmts;
  else
    stmts = {body};
  if (stmts.empty())
    return false;
  StoreTargets t;
  t.visit(stmts[0]);
  if (t.targets.size() != 1 || t.any->shape != ov.shape)
    return false;
  Buffer bias = hasBias ? f.params[size_t(bi)] : Buffer();
  std::vector<Stmt> rest(stmts.begin() + 1, stmts.end());
  EpilogueFusion epi(t.any, rest, f.params);
  const Buffer w = f.params[size_t(wi)];
  if (depthwise) {
    stmts[0] = depthwiseNest(k, f.params[size_t(xi)], w, hasBias ? &bias : nullptr, epi);
    return replaceBody(f, allocs, stmts, epi.fused());
  }
  const int64_t KK = k.C * k.KH * k.KW, MBV = tileChannels(k.M);
  Buffer wp =
      Buffer::make(w->name + "_packed", DataType::Float(32), {(k.M + MBV - 1) / MBV * KK * MBV});
  // Pre-packed only when nothing else in the group reads the weight in its graph layout.
  bool prepack = packed && g.value(node.inputs[1]).isConstant();
  for (size_t i = epi.fused(); prepack && i < rest.size(); ++i)
    prepack = !readsBuffer(rest[i], w);
  stmts[0] =
      convNest(k, f.params[size_t(xi)], prepack ? nullptr : &w, wp, hasBias ? &bias : nullptr, epi);
  if (prepack) {
    f.params[size_t(wi)] = wp;
    const int64_t m = k.M;
    packed->push_back({size_t(wi), wp->numElements(),
                       [m, KK](const std::vector<float> &d) { return packConvWeights(d, m, KK); }});
  }
  return replaceBody(f, allocs, stmts, epi.fused());
}

} // namespace

bool scheduleForCpu(const graph::Graph &g, const graph::FusedGroup &grp,
                    const std::vector<graph::ValueId> &params, tir::PrimFunc &f,
                    std::vector<PackedParam> *packed) {
  if (grp.anchor < 0)
    return false;
  const graph::Node &anchor = g.node(grp.anchor);
  // Only when the anchor is the group's first live node, i.e. its nest comes first.
  for (graph::NodeId id : grp.nodes) {
    if (g.node(id).dead)
      continue;
    if (id != grp.anchor)
      return false;
    break;
  }
  if (anchor.kind == graph::OpKind::Conv)
    return scheduleConv(g, anchor, params, f, packed);
  return false;
}

} // namespace npuc::cpu
