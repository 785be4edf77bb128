// LowerStats.cpp - lowering of the statistics over a tensor's axes: MeanVarianceNormalization
// and the losses NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss. Sums are fp32 (the
// reference accumulates in double); labels are fp32 integers, clamped into [0, C) for the load
// (the reference executor rejects one outside, see RefStats.cpp).
#include "lowering/LowerInternal.h"
#include "support/Error.h"

#include <cmath>
#include <limits>

namespace npuc::tir::lower {
namespace {

const DataType kF = DataType::Float(32);
const DataType kI = DataType::Int(64);

} // namespace

// Per position of the kept axes: the mean, the variance about it, then the normalised values,
// each a nest over the normalised axes.
Stmt lowerMvn(LowerCtx &c, const graph::Node &n) {
  Buffer x = c.input(n, 0), out = c.output(n, 0);
  const Shape &s = x->shape;
  std::vector<bool> reduced(s.size(), false);
  for (int64_t a : n.attrInts("axes"))
    reduced[static_cast<size_t>(a)] = true;
  Shape keep, red;
  for (size_t d = 0; d < s.size(); ++d)
    (reduced[d] ? red : keep).push_back(s[d]);
  std::vector<Var> kv = c.vars(keep.size(), "o");
  // The flat index of the element at kept position kv and normalised position rv.
  auto at = [&](const std::vector<Var> &rv) {
    std::vector<Expr> idx;
    size_t ki = 0, ri = 0;
    for (size_t d = 0; d < s.size(); ++d)
      idx.push_back(reduced[d] ? Expr(rv[ri++]) : Expr(kv[ki++]));
    return flatIndex(idx, s);
  };
  std::vector<Var> r1 = c.vars(red.size(), "r"), r2 = c.vars(red.size(), "r");
  std::vector<Var> r3 = c.vars(red.size(), "r");
  Buffer st = Buffer::make(out->name + "_stat", kF, {2}, "local");
  Expr mean = load(st, imm(0)), var = load(st, imm(1)), dev = load(x, at(r2)) - mean;
  auto count = f32(static_cast<double>(numElements(red)));
  // ONNX's function body: (X - E[X]) / (sqrt(Var[X]) + 1e-9).
  Expr y = (load(x, at(r3)) - mean) / (call(kF, "sqrt", {var}) + f32(1e-9));
  Stmt body = seq({
      store(st, f32(0), imm(0)),
      nest(r1, red, store(st, mean + load(x, at(r1)), imm(0))),
      store(st, mean / count, imm(0)),
      store(st, f32(0), imm(1)),
      nest(r2, red, store(st, var + dev * dev, imm(1))),
      store(st, var / count, imm(1)),
      nest(r3, red, store(out, y, at(r3))),
  });
  return nest(kv, keep, AllocateNode::make(st, body));
}

// Per position (b, i) of the labels: for SoftmaxCrossEntropyLoss the log-sum-exp of the scores
// along C (and the log_prob output, when asked for), then the weighted negative log-likelihood
// of the label's class, summed into acc[0] with its weight into acc[1] unless reduction is none.
Stmt lowerLoss(LowerCtx &c, const graph::Node &n) {
  const bool sce = n.kind == OpKind::SoftmaxCrossEntropyLoss;
  Buffer x = c.input(n, 0), t = c.input(n, 1), out = c.output(n, 0);
  const int64_t N = x->shape[0], C = x->shape[1];
  const int64_t inner = x->numElements() / std::max<int64_t>(N * C, 1);
  const std::string reduction = n.attrString("reduction", "mean");
  Var b = c.var("b"), i = c.var("i"), k1 = c.var("k"), k2 = c.var("k"), k3 = c.var("k");
  Expr pos = b * inner + i;
  auto xAt = [&](const Expr &cls) { return load(x, (b * C + cls) * inner + i); };
  Buffer st = Buffer::make(out->name + "_lse", kF, {2}, "local"); // max, sum of exp
  Expr mx = load(st, imm(0)), sum = load(st, imm(1));
  Expr label = load(t, pos);
  Expr cls = max(min(cast(kI, label), imm(C - 1)), imm(0));
  Expr logp = xAt(cls);
  std::vector<Stmt> line;
  if (sce) {
    Expr lse = mx + call(kF, "log", {sum});
    logp = logp - lse;
    line = {store(st, f32(-std::numeric_limits<double>::infinity()), imm(0)),
            forLoop(k1, imm(0), imm(C), store(st, max(mx, xAt(k1)), imm(0))),
            store(st, f32(0), imm(1)),
            forLoop(k2, imm(0), imm(C), store(st, sum + call(kF, "exp", {xAt(k2) - mx}), imm(1)))};
    if (n.outputs.size() > 1) {
      Buffer lp = c.output(n, 1);
      line.push_back(
          forLoop(k3, imm(0), imm(C), store(lp, xAt(k3) - lse, (b * C + k3) * inner + i)));
    }
  }
  Expr wt = c.hasInput(n, 2) ? load(c.input(n, 2), cls) : f32(1);
  if (n.hasAttr("ignore_index"))
    wt = select(label == f32(static_cast<double>(n.attrInt("ignore_index", 0))), f32(0), wt);
  Expr loss = f32(0) - logp * wt;
  if (reduction == "none") {
    line.push_back(store(out, loss, pos));
    Stmt perLine = sce ? AllocateNode::make(st, seq(line)) : seq(line);
    return forLoop(b, imm(0), imm(N), forLoop(i, imm(0), imm(inner), perLine));
  }
  Buffer acc = Buffer::make(out->name + "_acc", kF, {2}, "local"); // loss sum, weight sum
  line.push_back(store(acc, load(acc, imm(0)) + loss, imm(0)));
  line.push_back(store(acc, load(acc, imm(1)) + wt, imm(1)));
  Stmt perLine = sce ? AllocateNode::make(st, seq(line)) : seq(line);
  Expr total = load(acc, imm(0));
  Stmt body = seq({store(acc, f32(0), imm(0)), store(acc, f32(0), imm(1)),
                   forLoop(b, imm(0), imm(N), forLoop(i, imm(0), imm(inner), perLine)),
                   store(out, reduction == "sum" ? total : total / load(acc, imm(1)), imm(0))});
  return AllocateNode::make(acc, body);
}

} // namespace npuc::tir::lower
