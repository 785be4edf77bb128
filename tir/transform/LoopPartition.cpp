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
void atoms(const Expr &c, std::vector<const BinaryNode *> &out) {
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
    out.push_back(static_cast<const BinaryNode *>(c.get()));
    return;
  default:
    return;
  }
}

// Replaces decided conditions (by node identity) with their branch or arm.
class Resolver : public IRMutator {
public:
  std::map<const void *, Truth> decided;

protected:
  Expr mutateSelect(const SelectNode *op, const Expr &self) override {
    auto it = decided.find(op->cond.get());
    if (it != decided.end() && it->second != Truth::Unknown)
      return mutate(it->second == Truth::True ? op->trueValue : op->falseValue);
    return IRMutator::mutateSelect(op, self);
  }
  Stmt mutateIfThenElse(const IfThenElseNode *op, const Stmt &self) override {
    auto it = decided.find(op->cond.get());
    if (it != decided.end() && it->second != Truth::Unknown) {
      if (it->second == Truth::True)
        return mutate(op->thenCase);
      return op->elseCase.defined() ? mutate(op->elseCase) : SeqNode::make({});
    }
    return IRMutator::mutateIfThenElse(op, self);
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
    int64_t lo = 0, ext = 0;
    if (!constInt(op->min, lo) || !constInt(op->extent, ext) || ext <= 0)
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
    int64_t lo, hi; // [lo, hi)
    std::vector<Truth> sig;
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
    for (const Expr &c : cc.conds) {
      std::vector<const BinaryNode *> as;
      atoms(c, as);
      for (const BinaryNode *a : as) {
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
          for (int64_t p : {x, x + 1})
            if (p > lo && p < hi)
              cuts.insert(p);
        }
      }
    }
    std::vector<Piece> pieces;
    for (auto it = cuts.begin(); std::next(it) != cuts.end(); ++it) {
      Piece p{*it, *std::next(it), {}};
      prover_.bind(op->var, p.lo, p.hi - p.lo);
      for (const Expr &c : cc.conds)
        p.sig.push_back(prover_.decide(c));
      prover_.unbind(op->var);
      if (!pieces.empty() && pieces.back().sig == p.sig)
        pieces.back().hi = p.hi;
      else
        pieces.push_back(p);
    }
    for (const auto &[v, r] : cc.innerLoops)
      prover_.unbind(v);
    bool anyDecided = false;
    for (const Piece &p : pieces)
      for (Truth t : p.sig)
        anyDecided = anyDecided || t != Truth::Unknown;
    if (!anyDecided || static_cast<int>(pieces.size()) > opts_.maxPieces)
      return Stmt();

    std::vector<Stmt> out;
    for (size_t k = 0; k < pieces.size(); ++k) {
      const Piece &p = pieces[k];
      Resolver res;
      for (size_t c = 0; c < cc.conds.size(); ++c)
        res.decided[cc.conds[c].get()] = p.sig[c];
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
