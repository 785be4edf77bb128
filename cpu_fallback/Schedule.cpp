// Schedule.cpp - the CPU schedules (see Schedule.h for the loop structure they produce).
#include "cpu_fallback/Schedule.h"

#include "support/Error.h"
#include "tir/IRVisitor.h"
#include "tir/Verify.h"

#include <algorithm>
#include <set>

namespace npuc::cpu {
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

/// The scheduled convolution writing `out` (see Schedule.h).
Stmt convNest(const ConvGeom &k, const Buffer &x, const Buffer &w, const Buffer *bias,
              const Buffer &out) {
  const int64_t HP = k.H + k.pt + k.pb, WP = k.W + k.pl + k.pr;
  const bool padded = HP != k.H || WP != k.W;
  Var n = Var::make("n"), c = Var::make("c"), kh = Var::make("kh"), kw = Var::make("kw");
  Var mo = Var::make("mo"), oh = Var::make("oh"), ow = Var::make("ow"), ow0 = Var::make("ow0");
  Buffer xp = padded ? Buffer::make(x->name + "_padded", DataType::Float(32), {k.C, HP, WP}) : x;

  std::vector<Stmt> perImage;
  if (padded) {
    Var pc = Var::make("pc"), ph = Var::make("ph"), pw = Var::make("pw");
    Expr ih = ph - k.pt, iw = pw - k.pl;
    Expr inside = ih >= imm(0) && ih < imm(k.H) && iw >= imm(0) && iw < imm(k.W);
    Expr ihc = min(max(ih, imm(0)), imm(k.H - 1)), iwc = min(max(iw, imm(0)), imm(k.W - 1));
    Expr v = select(inside, load(x, flat({n, pc, ihc, iwc}, {k.N, k.C, k.H, k.W})), fl(0));
    perImage.push_back(forLoop(
        pc, imm(0), imm(k.C),
        forLoop(ph, imm(0), imm(HP),
                forLoop(pw, imm(0), imm(WP), store(xp, v, flat({pc, ph, pw}, {k.C, HP, WP})))),
        ForKind::Parallel));
  }
  const int64_t B = std::min(kConvChannelBlock, k.M);
  const int64_t blocks = (k.M + B - 1) / B;
  // Output channels of the block; a last partial block is guarded per channel.
  std::vector<Stmt> init, acc;
  Expr xIdx =
      padded ? flat({c, oh * k.sh + kh * k.dh, ow * k.sw + kw * k.dw}, {k.C, HP, WP})
             : flat({n, c, oh * k.sh + kh * k.dh, ow * k.sw + kw * k.dw}, {k.N, k.C, k.H, k.W});
  Expr xv = load(xp, xIdx);
  for (int64_t i = 0; i < B; ++i) {
    Expr m = mo * B + i;
    Expr oIdx = flat({n, m, oh, ow}, {k.N, k.M, k.OH, k.OW});
    Expr wv = load(w, flat({m, c, kh, kw}, {k.M, k.C, k.KH, k.KW}));
    Expr oIdx0 = flat({n, m, oh, ow0}, {k.N, k.M, k.OH, k.OW});
    Stmt st = store(out, bias ? load(*bias, m) : fl(0), oIdx0);
    Stmt up = store(out, load(out, oIdx) + wv * xv, oIdx);
    if (k.M % B) {
      st = IfThenElseNode::make(m < imm(k.M), st, Stmt());
      up = IfThenElseNode::make(m < imm(k.M), up, Stmt());
    }
    init.push_back(st);
    acc.push_back(up);
  }
  Stmt row = seq(
      {forLoop(ow0, imm(0), imm(k.OW), seq(init)),
       forLoop(c, imm(0), imm(k.C),
               forLoop(kh, imm(0), imm(k.KH),
                       forLoop(kw, imm(0), imm(k.KW), forLoop(ow, imm(0), imm(k.OW), seq(acc)))))});
  perImage.push_back(
      forLoop(mo, imm(0), imm(blocks), forLoop(oh, imm(0), imm(k.OH), row), ForKind::Parallel));
  Stmt body = forLoop(n, imm(0), imm(k.N), seq(perImage));
  return padded ? AllocateNode::make(xp, body) : body;
}

bool scheduleConv(const graph::Graph &g, const graph::Node &node,
                  const std::vector<graph::ValueId> &params, PrimFunc &f) {
  if (node.attrInt("group", 1) != 1 || node.inputs.size() < 2)
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
  if (wv.shape[1] != k.C || ov.shape[1] != k.M)
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
  stmts[0] =
      convNest(k, f.params[size_t(xi)], f.params[size_t(wi)], hasBias ? &bias : nullptr, t.any);
  Stmt nb = stmts.size() == 1 ? stmts[0] : seq(stmts);
  for (size_t i = allocs.size(); i-- > 0;)
    nb = AllocateNode::make(allocs[i]->buffer, nb);
  f.body = nb;
  verify(f);
  return true;
}

} // namespace

bool scheduleForCpu(const graph::Graph &g, const graph::FusedGroup &grp,
                    const std::vector<graph::ValueId> &params, tir::PrimFunc &f) {
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
  if (anchor.op == "Conv")
    return scheduleConv(g, anchor, params, f);
  return false;
}

} // namespace npuc::cpu
