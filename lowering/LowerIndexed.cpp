// LowerIndexed.cpp - CPU lowering of the operators that move data by an index tensor
// (LowerInternal.h): GatherND, ScatterElements, ScatterND, OneHot, ReverseSequence. Indices are
// fp32 integers at run time; the runtime checks them before the kernel runs
// (graph::checkIndexInput), so the clamps here only keep every access in bounds.
#include "graph/DataOps.h"
#include "lowering/LowerInternal.h"
#include "support/Error.h"

namespace npuc::tir::lower {
namespace {

const DataType kI = DataType::Int(64);

// The index read at flat position `at` of `ib`, negative ones counted from the end of an axis of
// extent `len`, clamped into it.
Expr indexAt(const Buffer &ib, Expr at, int64_t len) {
  Expr k = cast(kI, load(ib, std::move(at)));
  return clampIdx(select(k < 0, k + len, k), len);
}

Expr combine(graph::ScatterReduction r, Expr old, Expr upd) {
  switch (r) {
  case graph::ScatterReduction::None:
    return upd;
  case graph::ScatterReduction::Add:
    return old + upd;
  case graph::ScatterReduction::Mul:
    return old * upd;
  case graph::ScatterReduction::Max:
    return max(old, upd);
  case graph::ScatterReduction::Min:
    return min(old, upd);
  }
  NPUC_ASSERT(false, "every scatter reduction is handled");
}

// out = data, element for element (the scatters' first step).
Stmt copyAll(LowerCtx &c, const Buffer &in, const Buffer &out) {
  Var i = c.var("i");
  return forLoop(i, imm(0), imm(out->numElements()), store(out, load(in, i), i));
}

std::vector<Expr> sub(const std::vector<Expr> &v, size_t from, size_t to) {
  return std::vector<Expr>(v.begin() + static_cast<long>(from), v.begin() + static_cast<long>(to));
}

} // namespace

// out[b..., t..., r...] = data[b..., idx[b..., t..., :]..., r...]
Stmt lowerGatherND(LowerCtx &c, const graph::Node &n) {
  Buffer x = c.input(n, 0), ib = c.input(n, 1), out = c.output(n, 0);
  auto b = static_cast<size_t>(n.attrInt("batch_dims", 0));
  size_t q = ib->shape.size();
  auto m = static_cast<size_t>(ib->shape.back());
  std::vector<Var> iv = c.vars(out->shape.size(), "i");
  std::vector<Expr> idx = asExprs(iv), tuple = sub(idx, 0, q - 1), src = sub(idx, 0, b);
  for (size_t j = 0; j < m; ++j) {
    std::vector<Expr> at = tuple;
    at.push_back(imm(static_cast<int64_t>(j)));
    src.push_back(indexAt(ib, flatIndex(at, ib->shape), x->shape[b + j]));
  }
  std::vector<Expr> rest = sub(idx, q - 1, idx.size());
  src.insert(src.end(), rest.begin(), rest.end());
  return nest(iv, out->shape,
              store(out, load(x, flatIndex(src, x->shape)), flatIndex(idx, out->shape)));
}

// out = data; then, in index order (the last of duplicate indices wins, as in ONNX),
// out[i with i[axis] = idx[i]] = combine(that, updates[i]).
Stmt lowerScatterElements(LowerCtx &c, const graph::Node &n) {
  Buffer x = c.input(n, 0), ib = c.input(n, 1), upd = c.input(n, 2), out = c.output(n, 0);
  auto axis = static_cast<size_t>(n.attrInt("axis", 0));
  std::vector<Var> iv = c.vars(ib->shape.size(), "j");
  std::vector<Expr> idx = asExprs(iv), dst = idx;
  Expr at = flatIndex(idx, ib->shape);
  dst[axis] = indexAt(ib, at, x->shape[axis]);
  Expr o = flatIndex(dst, x->shape);
  Stmt scatter =
      nest(iv, ib->shape,
           store(out, combine(graph::scatterReduction(n), load(out, o), load(upd, at)), o));
  return seq({copyAll(c, x, out), scatter});
}

// out = data; then out[idx[t, :]..., r...] = combine(that, updates[t..., r...]) in order.
Stmt lowerScatterND(LowerCtx &c, const graph::Node &n) {
  Buffer x = c.input(n, 0), ib = c.input(n, 1), upd = c.input(n, 2), out = c.output(n, 0);
  size_t q = ib->shape.size();
  auto m = static_cast<size_t>(ib->shape.back());
  std::vector<Var> iv = c.vars(upd->shape.size(), "j");
  std::vector<Expr> idx = asExprs(iv), tuple = sub(idx, 0, q - 1), dst;
  for (size_t j = 0; j < m; ++j) {
    std::vector<Expr> at = tuple;
    at.push_back(imm(static_cast<int64_t>(j)));
    dst.push_back(indexAt(ib, flatIndex(at, ib->shape), x->shape[j]));
  }
  std::vector<Expr> rest = sub(idx, q - 1, idx.size());
  dst.insert(dst.end(), rest.begin(), rest.end());
  Expr o = flatIndex(dst, x->shape);
  Stmt scatter = nest(iv, upd->shape,
                      store(out,
                            combine(graph::scatterReduction(n), load(out, o),
                                    load(upd, flatIndex(idx, upd->shape))),
                            o));
  return seq({copyAll(c, x, out), scatter});
}

// out[i] = values[idx[i without axis] == i[axis]] (an index outside [-depth, depth) matches no
// position: a row of off values, as ONNX defines).
Stmt lowerOneHot(LowerCtx &c, const graph::Node &n) {
  Buffer ib = c.input(n, 0), vals = c.input(n, 1), out = c.output(n, 0);
  auto axis = static_cast<size_t>(n.attrInt("axis", 0));
  int64_t depth = n.attrInt("depth", 1);
  std::vector<Var> iv = c.vars(out->shape.size(), "i");
  std::vector<Expr> idx = asExprs(iv), at = idx;
  at.erase(at.begin() + static_cast<long>(axis));
  Expr k = cast(kI, load(ib, flatIndex(at, ib->shape)));
  k = select(k < 0, k + depth, k);
  Expr v = select(k == idx[axis], load(vals, imm(1)), load(vals, imm(0)));
  return nest(iv, out->shape, store(out, v, flatIndex(idx, out->shape)));
}

// out[.., t, ..] = x[.., t < len[b] ? len[b] - 1 - t : t, ..] along the time axis.
Stmt lowerReverseSequence(LowerCtx &c, const graph::Node &n) {
  Buffer x = c.input(n, 0), lens = c.input(n, 1), out = c.output(n, 0);
  auto ba = static_cast<size_t>(n.attrInt("batch_axis", 1));
  auto ta = static_cast<size_t>(n.attrInt("time_axis", 0));
  int64_t steps = x->shape[ta];
  std::vector<Var> iv = c.vars(out->shape.size(), "i");
  std::vector<Expr> idx = asExprs(iv), src = idx;
  Expr len = max(min(cast(kI, load(lens, idx[ba])), imm(steps)), imm(0));
  src[ta] = select(idx[ta] < len, len - 1 - idx[ta], idx[ta]);
  return nest(iv, out->shape,
              store(out, load(x, flatIndex(src, x->shape)), flatIndex(idx, out->shape)));
}

} // namespace npuc::tir::lower
