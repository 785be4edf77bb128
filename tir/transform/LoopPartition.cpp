// LoopPartition.cpp - partitioning loop ranges by condition values (see LoopPartition.h).
#include "tir/transform/LoopPartition.h"

#include "tir/Eval.h"
#include "tir/IRMutator.h"
#include "tir/IRVisitor.h"
#include "tir/Linear.h"
#include "tir/Simplify.h"
#include "tir/Substitute.h"
#include "tir/transform/RemoveNoOp.h"

#include <algorithm>
#include <map>
#include <set>

namespace npuc::tir {
namespace {

bool constInt(const Expr &e, int64_t &v) {
  const auto *c = e.as<IntImmNode>();
  if (c)
    v = c->value;
  return c != nullptr;
}

// The conditions of a loop body that mention the loop variable, and the inner loops' ranges.
class CondCollector : public IRVisitor {
public:
  const VarNode *loopVar = nullptr;
  std::vector<Expr> conds;
  std::vector<std::pair<Var, std::pair<int64_t, int64_t>>> innerLoops; // var, (min, extent)

  void visitIfThenElse(const IfThenElseNode *op) override {
    add(op->cond);
    IRVisitor::visitIfThenElse(op);
  }
  void visitSelect(const SelectNode *op) override {
    add(op->cond);
    IRVisitor::visitSelect(op);
  }
  void visitFor(const ForNode *op) override {
    int64_t mn = 0, ext = 0;
    if (constInt(op->min, mn) && constInt(op->extent, ext) && ext > 0)
      innerLoops.push_back({op->var, {mn, ext}});
    IRVisitor::visitFor(op);
  }

private:
  void add(const Expr &c) {
    if (usesVar(c, loopVar))
      conds.push_back(c);
  }
};

// The comparisons inside a condition (through &&, || and !).
void atoms(const Expr &c, std::vector<Expr> &out) {
  switch (c.kind()) {
  case NodeKind::And:
  case NodeKind::Or: {
    const auto *op = static_cast<const BinaryNode *>(c.get());
    atoms(op->a, out);
    atoms(op->b, out);
    return;
  }
  case NodeKind::Not:
    atoms(c.as<NotNode>()->a, out);
    return;
  case NodeKind::EQ:
  case NodeKind::NE:
  case NodeKind::LT:
  case NodeKind::LE:
  case NodeKind::GT:
  case NodeKind::GE:
    out.push_back(c);
    return;
  default:
    return;
  }
}

// Replaces decided conditions (by node identity) with their branch or arm. A condition that is
// not decided as a whole has its decided comparisons (atoms) replaced by constants and folded
// through &&, || and !, so that a condition over two loops loses the part this piece decides
// (the rest is left for the partition of the other loop).
class Resolver : public IRMutator {
public:
  std::map<const void *, Truth> decided, atoms;

  using IRMutator::mutate;

protected:
  Expr mutate(const Expr &e) override {
    auto it = e.defined() ? atoms.find(e.get()) : atoms.end();
    if (it != atoms.end() && it->second != Truth::Unknown)
      return IntImmNode::make(it->second == Truth::True, DataType::Bool());
    return IRMutator::mutate(e);
  }
  Expr mutateAnd(const AndNode *op, const Expr &self) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (const auto *c = a.as<IntImmNode>())
      return c->value ? b : a;
    if (const auto *c = b.as<IntImmNode>())
      return c->value ? a : b;
    return a.same(op->a) && b.same(op->b) ? self : (a && b);
  }
  Expr mutateOr(const OrNode *op, const Expr &self) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (const auto *c = a.as<IntImmNode>())
      return c->value ? a : b;
    if (const auto *c = b.as<IntImmNode>())
      return c->value ? b : a;
    return a.same(op->a) && b.same(op->b) ? self : (a || b);
  }
  Expr mutateNot(const NotNode *op, const Expr &self) override {
    Expr a = mutate(op->a);
    if (const auto *c = a.as<IntImmNode>())
      return IntImmNode::make(c->value == 0, DataType::Bool());
    return a.same(op->a) ? self : !a;
  }
  Expr mutateSelect(const SelectNode *op, const Expr &self) override {
    auto it = decided.find(op->cond.get());
    if (it != decided.end() && it->second != Truth::Unknown)
      return mutate(it->second == Truth::True ? op->trueValue : op->falseValue);
    Expr c = mutate(op->cond);
    if (const auto *k = c.as<IntImmNode>())
      return mutate(k->value ? op->trueValue : op->falseValue);
    Expr t = mutate(op->trueValue), f = mutate(op->falseValue);
    if (c.same(op->cond) && t.same(op->trueValue) && f.same(op->falseValue))
      return self;
    return select(c, t, f);
  }
  Stmt mutateIfThenElse(const IfThenElseNode *op, const Stmt &self) override {
    auto it = decided.find(op->cond.get());
    Truth t = it != decided.end() ? it->second : Truth::Unknown;
    Expr c = op->cond;
    if (t == Truth::Unknown) {
      c = mutate(op->cond);
      if (const auto *k = c.as<IntImmNode>())
        t = k->value ? Truth::True : Truth::False;
    }
    if (t != Truth::Unknown) {
      if (t == Truth::True)
        return mutate(op->thenCase);
      return op->elseCase.defined() ? mutate(op->elseCase) : SeqNode::make({});
    }
    Stmt th = mutate(op->thenCase), el = mutate(op->elseCase);
    if (c.same(op->cond) && th.same(op->thenCase) && el.same(op->elseCase))
      return self;
    return IfThenElseNode::make(c, th, el);
  }
};

// Inside a piece the loop variable's range is narrower: clamps (min/max) and selects that the
// narrower range decides are resolved too, e.g. the clamped index min(i, 3) of a padded read
// is i where i < 4. Interval/modular rules only; inner loops' ranges are bound on the way down.
class RangeSimplifier : public IRMutator {
public:
  explicit RangeSimplifier(BoundAnalyzer b) : bounds_(std::move(b)) {}

protected:
  Stmt mutateFor(const ForNode *op, const Stmt &self) override {
    int64_t mn = 0, ext = 0;
    bool ranged = constInt(op->min, mn) && constInt(op->extent, ext) && ext > 0;
    if (ranged)
      bounds_.bind(op->var, mn, ext);
    Stmt s = IRMutator::mutateFor(op, self);
    if (ranged)
      bounds_.unbind(op->var);
    return s;
  }
  Expr mutateMin(const MinNode *op, const Expr &self) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (bounds_.decide(le(a, b)) == Truth::True)
      return a;
    if (bounds_.decide(le(b, a)) == Truth::True)
      return b;
    return a.same(op->a) && b.same(op->b) ? self : min(a, b);
  }
  Expr mutateMax(const MaxNode *op, const Expr &self) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (bounds_.decide(ge(a, b)) == Truth::True)
      return a;
    if (bounds_.decide(ge(b, a)) == Truth::True)
      return b;
    return a.same(op->a) && b.same(op->b) ? self : max(a, b);
  }
  Expr mutateSelect(const SelectNode *op, const Expr &self) override {
    Truth t = bounds_.decide(op->cond);
    if (t != Truth::Unknown)
      return mutate(t == Truth::True ? op->trueValue : op->falseValue);
    return IRMutator::mutateSelect(op, self);
  }

private:
  BoundAnalyzer bounds_;
};

class Partitioner : public IRMutator {
public:
  explicit Partitioner(const LoopPartitionOptions &o) : opts_(o), prover_(o.prover) {}

protected:
  Stmt mutateFor(const ForNode *op, const Stmt &self) override {
    int64_t lo = 0, ext = 0, end = 0;
    // A loop whose end (min + extent) leaves int64 has no pieces to cut; it is left whole.
    if (!constInt(op->min, lo) || !constInt(op->extent, ext) || ext <= 0 ||
        __builtin_add_overflow(lo, ext, &end))
      return IRMutator::mutateFor(op, self);
    Stmt parts = partition(op);
    if (parts.defined())
      return parts;
    prover_.bind(op->var, lo, ext);
    Stmt s = IRMutator::mutateFor(op, self);
    prover_.unbind(op->var);
    return s;
  }

private:
  LoopPartitionOptions opts_;
  Prover prover_;

  struct Piece {
    int64_t lo, hi;          // [lo, hi)
    std::vector<Truth> sig;  // per condition
    std::vector<Truth> asig; // per comparison inside the conditions
  };

  // The partitioned statement, or a null Stmt when this loop is left alone.
  Stmt partition(const ForNode *op) {
    int64_t lo = evalInt(op->min), hi = lo + evalInt(op->extent);
    CondCollector cc;
    cc.loopVar = op->var.node();
    cc.visit(op->body);
    if (cc.conds.empty())
      return Stmt();
    for (const auto &[v, r] : cc.innerLoops)
      prover_.bind(v, r.first, r.second);
    std::set<int64_t> cuts = {lo, hi};
    std::vector<Expr> all; // the comparisons that mention the loop variable, once each
    for (const Expr &c : cc.conds) {
      std::vector<Expr> as;
      atoms(c, as);
      for (const Expr &a : as)
        if (usesVar(a, op->var.node()) &&
            std::none_of(all.begin(), all.end(), [&](const Expr &x) { return x.same(a); }))
          all.push_back(a);
      for (const Expr &ae : as) {
        const auto *a = static_cast<const BinaryNode *>(ae.get());
        int64_t coeff = 0;
        Expr rest;
        if (!a->a.type().isInt() || !linearIn(a->a - a->b, op->var.node(), coeff, rest) ||
            coeff == 0)
          continue;
        Interval r = prover_.bounds().bound(rest);
        for (int64_t rv : {r.lo, r.hi}) {
          if (rv == Interval::kNegInf || rv == Interval::kPosInf)
            continue;
          // c*i + rv == 0 at i = -rv/c; the value can change at floor and floor + 1.
          int64_t x = floorDivInt(-rv, coeff);
          if (x > lo && x < hi)
            cuts.insert(x);
          if (x >= lo && x < hi - 1) // x + 1 inside, without computing it past int64
            cuts.insert(x + 1);
        }
      }
    }
    std::vector<Piece> pieces;
    for (auto it = cuts.begin(); std::next(it) != cuts.end(); ++it) {
      Piece p{*it, *std::next(it), {}, {}};
      prover_.bind(op->var, p.lo, p.hi - p.lo);
      for (const Expr &c : cc.conds)
        p.sig.push_back(prover_.decide(c));
      for (const Expr &a : all)
        p.asig.push_back(prover_.decide(a));
      prover_.unbind(op->var);
      if (!pieces.empty() && pieces.back().sig == p.sig && pieces.back().asig == p.asig)
        pieces.back().hi = p.hi;
      else
        pieces.push_back(p);
    }
    for (const auto &[v, r] : cc.innerLoops)
      prover_.unbind(v);
    bool anyDecided = false;
    for (const Piece &p : pieces) {
      for (Truth t : p.sig)
        anyDecided = anyDecided || t != Truth::Unknown;
      for (Truth t : p.asig)
        anyDecided = anyDecided || t != Truth::Unknown;
    }
    if (!anyDecided || static_cast<int>(pieces.size()) > opts_.maxPieces)
      return Stmt();

    std::vector<Stmt> out;
    for (size_t k = 0; k < pieces.size(); ++k) {
      const Piece &p = pieces[k];
      Resolver res;
      for (size_t c = 0; c < cc.conds.size(); ++c)
        res.decided[cc.conds[c].get()] = p.sig[c];
      for (size_t a = 0; a < all.size(); ++a)
        res.atoms[all[a].get()] = p.asig[a];
      Stmt body = removeNoOp(res.mutate(op->body));
      Var v = op->var;
      if (k > 0) { // a second copy of the loop needs its own variables
        v = Var::make(op->var.name(), op->var.type());
        body = freshCopy(substitute(body, {{op->var.node(), v}}));
      }
      prover_.bind(v, p.lo, p.hi - p.lo);
      body = RangeSimplifier(prover_.bounds()).mutate(body);
      Stmt piece;
      if (p.hi - p.lo == 1) {
        piece = mutate(simplify(substitute(body, {{v.node(), IntImmNode::make(p.lo, v.type())}})));
      } else {
        piece = ForNode::make(v, IntImmNode::make(p.lo, v.type()),
                              IntImmNode::make(p.hi - p.lo, v.type()), op->forKind, mutate(body));
      }
      prover_.unbind(v);
      if (!isNoOp(piece))
        out.push_back(piece);
    }
    if (out.size() == 1)
      return out[0];
    return SeqNode::make(std::move(out));
  }
};

} // namespace

PrimFunc loopPartition(const PrimFunc &f, const LoopPartitionOptions &o) {
  PrimFunc out = f;
  out.body = removeNoOp(Partitioner(o).mutate(f.body));
  return out;
}

} // namespace npuc::tir
