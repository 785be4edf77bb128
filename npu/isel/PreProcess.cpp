// PreProcess.cpp - splitting stored expressions into direct operations (PreProcess.h).
#include "npu/isel/PreProcess.h"

#include "npu/isel/EmitNpu.h"
#include "npu/isel/InstrMatch.h"
#include "tir/Equal.h"
#include "tir/IRMutator.h"
#include "tir/IRVisitor.h"
#include "tir/Linear.h"
#include "tir/Simplify.h"
#include "tir/Substitute.h"

namespace npuc::tir {
namespace {

bool isLeaf(const Expr &e) {
  Expr x = stripFloatCast(e);
  return x.as<LoadNode>() || x.as<FloatImmNode>() || x.as<IntImmNode>();
}

bool isConst(const Expr &e) {
  Expr x = stripFloatCast(e);
  return x.as<FloatImmNode>() || x.as<IntImmNode>();
}

// Whether e reads an element of b that another iteration's store to b[index] may write: any load
// of b, unless the store's index is a constant and the load's another one (a reduction's two
// accumulators in one buffer: Softmax's sum red[1] += exp(x - red[0]) reads the max beside it),
// or, when every iteration stores its own element (`distinct`), the load's index is the store's
// (each iteration reads only what it alone writes: a per-row statistic finished in place,
// stat[b] = 1 / sqrt(stat[b] / n + eps)).
bool readsStored(const Expr &e, const Buffer &b, const Expr &index, bool distinct) {
  class Finder : public IRVisitor {
  public:
    Finder(const Buffer &b, const Expr &index, bool distinct)
        : b_(b), index_(index), distinct_(distinct) {}
    bool found = false;
    void visitLoad(const LoadNode *l) override {
      const auto *from = l->index.as<IntImmNode>(), *at = index_.as<IntImmNode>();
      found = found || (l->buffer.same(b_) && !(at && from && from->value != at->value) &&
                        !(distinct_ && structuralEqual(l->index, index_)));
      IRVisitor::visitLoad(l);
    }

  private:
    const Buffer &b_;
    const Expr &index_;
    bool distinct_;
  } finder(b, index, distinct);
  finder.visit(e);
  return finder.found;
}

// Whether the nest's store index takes a different value in every iteration: affine in each
// loop of extent > 1 with a non-zero coefficient, and the coefficients, ordered by size, each at
// least the span of the ones below (mixed radix: no two iterations meet).
bool distinctPerIteration(const PerfectNest &n) {
  std::vector<std::pair<int64_t, int64_t>> terms; // |coefficient|, extent
  for (const NestLoop &l : n.loops) {
    if (l.extent <= 1)
      continue;
    int64_t c = 0;
    Expr rest;
    if (!linearIn(n.store->index, l.var.node(), c, rest) || c == 0)
      return false;
    terms.emplace_back(c < 0 ? -c : c, l.extent);
  }
  std::sort(terms.begin(), terms.end());
  int64_t span = 1;
  for (const auto &[c, e] : terms) {
    if (c < span)
      return false;
    span = c * e;
  }
  return true;
}

// Decomposes the value of one perfect nest's store.
class Decomposer {
public:
  Decomposer(const isa::Target &t, const PerfectNest &n, int &counter)
      : t_(t), n_(n), counter_(counter) {
    // Temporaries hold one element per iteration, row-major over the nest's loops.
    Expr lin = imm(0);
    for (const NestLoop &l : n.loops) {
      lin = lin * imm(l.extent) + (l.var - imm(l.min));
      count_ *= l.extent;
    }
    lin_ = simplify(lin);
  }

  /// The store's value rewritten as one direct operation, or a null Expr when not possible.
  Expr run() {
    Expr v = lowerOp(n_.store->value);
    return ok_ ? v : Expr();
  }
  std::vector<Stmt> pre;     // stores of the temporaries, in order
  std::vector<Buffer> temps; // to allocate around the result

private:
  const isa::Target &t_;
  const PerfectNest &n_;
  int &counter_;
  Expr lin_;
  int64_t count_ = 1;
  bool ok_ = true;

  bool directOp(const OpMatch &m) const {
    if (m.kind == MatchKind::Fill)
      return !t_.instrsWith(isa::Semantics::Dma).empty();
    if (m.is(isa::VecOp::Copy))
      return t_.vector.supports(isa::VecOp::Copy) || !t_.instrsWith(isa::Semantics::Dma).empty();
    if (m.kind == MatchKind::Matmul) {
      if (t_.instrsWith(isa::Semantics::Matmul).empty())
        return false;
      const Buffer &a = m.srcs[0].as<LoadNode>()->buffer, &b = m.srcs[1].as<LoadNode>()->buffer;
      const Buffer &c = n_.store->buffer;
      const isa::TensorUnit &tu = t_.tensor;
      return scopeLevel(t_, a->scope) == tu.aLevel && scopeLevel(t_, b->scope) == tu.bLevel &&
             scopeLevel(t_, c->scope) == tu.accLevel &&
             dtypeCode(a->dtype) == static_cast<int>(tu.operandType) &&
             dtypeCode(b->dtype) == static_cast<int>(tu.operandType) &&
             dtypeCode(c->dtype) == static_cast<int>(tu.accType);
    }
    return t_.vector.supports(m.vecOp);
  }

  bool direct(const Expr &v) const {
    for (const OpMatch &m : matchOps(v, n_.store->buffer, n_.store->index))
      if (directOp(m))
        return true;
    return false;
  }

  Buffer temp(DataType t, std::vector<int64_t> shape) {
    std::string name = n_.store->buffer->name;
    name += "_t"; // appending avoids a GCC 12 -Wrestrict false positive
    name += std::to_string(counter_++);
    Buffer b = Buffer::make(name, t, std::move(shape), n_.store->buffer->scope);
    temps.push_back(b);
    return b;
  }

  // A constant as a one-element buffer (read with stride 0 by every iteration).
  Expr constBuffer(const Expr &c) {
    Buffer k = temp(c.type(), {1});
    pre.push_back(store(k, c, imm(0)));
    return load(k, imm(0));
  }

  Stmt nestOf(Stmt body) const {
    for (size_t l = n_.loops.size(); l-- > 0;)
      body = forLoop(n_.loops[l].var, imm(n_.loops[l].min), imm(n_.loops[l].extent), body);
    return freshCopy(body);
  }

  // An expression computing e that is a load or a constant (e itself when it already is).
  Expr leafOf(const Expr &e) {
    if (!ok_ || isLeaf(e))
      return e;
    Expr v = lowerOp(e);
    if (!ok_)
      return e;
    // One iteration reads everything before its one write, so hoisting reads keeps their values
    // (a reduction's finishing step, stat[1] = 1 / sqrt(stat[1] / n + eps)).
    if (count_ > 1 && readsStored(v, n_.store->buffer, n_.store->index, distinctPerIteration(n_))) {
      ok_ = false; // computing it ahead of the nest would read values the nest overwrites
      return e;
    }
    Buffer tb = temp(v.type(), {count_});
    pre.push_back(nestOf(store(tb, v, lin_)));
    return load(tb, lin_);
  }

  // e rewritten as one direct operation over leaves.
  Expr lowerOp(const Expr &in) {
    Expr e = selectAsMinMax(in);
    if (isLeaf(e))
      return e;
    if (const auto *s = e.as<SubNode>();
        s && !t_.vector.supports(isa::VecOp::Sub) && e.type().isFloat())
      e = s->a + s->b * constLike(s->b, -1.0);
    if (const auto *c = e.as<CastNode>()) {
      if (c->type.isFloat() && c->value.type().isFloat())
        return cast(c->type, lowerOp(c->value));
      ok_ = false;
      return e;
    }
    Expr r;
    std::vector<Expr> kids;
    if (isBinary(e.kind())) {
      const auto *op = static_cast<const BinaryNode *>(e.get());
      // Keep `dst + a * b` whole when the tensor unit can take it.
      if (direct(e))
        return e;
      kids = {leafOf(op->a), leafOf(op->b)};
      r = makeBinary(e.kind(), kids[0], kids[1]);
    } else if (const auto *c = e.as<CallNode>()) {
      for (const Expr &a : c->args)
        kids.push_back(leafOf(a));
      r = call(c->type, c->name, kids);
    } else {
      ok_ = false; // select, logic: not a unit operation
      return e;
    }
    if (!ok_ || direct(r))
      return r;
    // Constants the operation cannot take as immediates become stride-0 buffers.
    for (Expr &k : kids)
      if (isConst(k))
        k = constBuffer(k);
    r = isBinary(e.kind()) ? makeBinary(e.kind(), kids[0], kids[1])
                           : call(e.type(), e.as<CallNode>()->name, kids);
    if (!direct(r))
      ok_ = false;
    return r;
  }
};

class PreProcessor : public IRMutator {
public:
  explicit PreProcessor(const isa::Target &t) : t_(t) {}

  Stmt mutate(const Stmt &s) override {
    PerfectNest n;
    if (s.defined() && (s.kind() == NodeKind::For || s.kind() == NodeKind::Store) &&
        perfectNest(s, n))
      return rewrite(s, n);
    return IRMutator::mutate(s);
  }

private:
  const isa::Target &t_;
  int counter_ = 0;

  Stmt rewrite(const Stmt &s, const PerfectNest &n) {
    for (const NestLoop &l : n.loops)
      if (!l.constant)
        return s;
    int mark = counter_;
    Decomposer d(t_, n, counter_);
    Expr v = d.run();
    if (!v.defined() || d.pre.empty()) {
      counter_ = mark;
      return s;
    }
    // The nest itself, with the decomposed value.
    std::vector<const ForNode *> fors;
    Stmt cur = s;
    while (const ForNode *f = cur.as<ForNode>()) {
      fors.push_back(f);
      cur = f->body;
    }
    Stmt body = store(n.store->buffer, v, n.store->index);
    for (size_t l = fors.size(); l-- > 0;)
      body = ForNode::make(fors[l]->var, fors[l]->min, fors[l]->extent, fors[l]->forKind, body);
    std::vector<Stmt> stmts = d.pre;
    stmts.push_back(body);
    Stmt out = seq(stmts);
    for (size_t i = d.temps.size(); i-- > 0;)
      out = AllocateNode::make(d.temps[i], out);
    return out;
  }
};

} // namespace

PrimFunc preProcess(const PrimFunc &f, const isa::Target &t) {
  PrimFunc out = f;
  out.body = PreProcessor(t).mutate(f.body);
  return out;
}

} // namespace npuc::tir
