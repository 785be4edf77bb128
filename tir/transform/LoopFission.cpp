// LoopFission.cpp - splitting loop bodies by statement (see LoopFission.h).
#include "tir/transform/LoopFission.h"

#include "tir/Equal.h"
#include "tir/IRMutator.h"
#include "tir/IRVisitor.h"
#include "tir/Linear.h"
#include "tir/Substitute.h"

#include <unordered_set>

namespace npuc::tir {
namespace {

struct Access {
  const BufferNode *buffer;
  Expr index;
  bool write;
};

class AccessCollector : public IRVisitor {
public:
  std::vector<Access> accesses;
  std::unordered_set<const VarNode *> boundInside;
  bool hasNpuOp = false;

  void visitLoad(const LoadNode *op) override {
    accesses.push_back({op->buffer.get(), op->index, false});
    IRVisitor::visitLoad(op);
  }
  void visitStore(const StoreNode *op) override {
    accesses.push_back({op->buffer.get(), op->index, true});
    IRVisitor::visitStore(op);
  }
  void visitFor(const ForNode *op) override {
    boundInside.insert(op->var.node());
    IRVisitor::visitFor(op);
  }
  void visitNpuOp(const NpuOpNode *op) override {
    hasNpuOp = true;
    IRVisitor::visitNpuOp(op);
  }
};

class VarsOf : public IRVisitor {
public:
  std::vector<const VarNode *> vars;
  void visitVar(const VarNode *op) override { vars.push_back(op); }
};

AccessCollector collect(const Stmt &s) {
  AccessCollector c;
  c.visit(s);
  return c;
}

// May all of `a` (earlier) run before any of `b` (later), iteration by iteration of `loop`?
bool separable(const AccessCollector &a, const AccessCollector &b, const VarNode *loop) {
  if (a.hasNpuOp || b.hasNpuOp)
    return false;
  for (const Access &x : a.accesses) {
    for (const Access &y : b.accesses) {
      if (x.buffer != y.buffer || (!x.write && !y.write))
        continue;
      // One shared index for every access to this buffer in both statements.
      for (const auto *side : {&a, &b})
        for (const Access &z : side->accesses)
          if (z.buffer == x.buffer && !structuralEqual(z.index, x.index))
            return false;
      VarsOf vo;
      vo.visit(x.index);
      for (const VarNode *v : vo.vars)
        if (a.boundInside.count(v) || b.boundInside.count(v))
          return false;
      int64_t coeff = 0;
      Expr rest;
      if (!linearIn(x.index, loop, coeff, rest) || coeff == 0)
        return false;
    }
  }
  return true;
}

class Fission : public IRMutator {
protected:
  Stmt mutateFor(const ForNode *op, const Stmt &self) override {
    Stmt s = IRMutator::mutateFor(op, self);
    const auto *loop = s.as<ForNode>();
    const auto *seq = loop->body.as<SeqNode>();
    if (!seq || seq->stmts.size() < 2)
      return s;
    std::vector<std::vector<Stmt>> groups;
    std::vector<AccessCollector> groupAccess;
    for (const Stmt &st : seq->stmts) {
      AccessCollector acc = collect(st);
      bool fine = true;
      for (size_t g = 0; g + 1 < groups.size(); ++g)
        fine = fine && separable(groupAccess[g], acc, loop->var.node());
      if (!fine) // conflicts with a group before the last one: merging cannot fix that
        return s;
      if (!groups.empty() && !separable(groupAccess.back(), acc, loop->var.node())) {
        groups.back().push_back(st);
        AccessCollector &last = groupAccess.back();
        last.accesses.insert(last.accesses.end(), acc.accesses.begin(), acc.accesses.end());
        last.boundInside.insert(acc.boundInside.begin(), acc.boundInside.end());
        last.hasNpuOp = last.hasNpuOp || acc.hasNpuOp;
        continue;
      }
      groups.push_back({st});
      groupAccess.push_back(std::move(acc));
    }
    if (groups.size() < 2)
      return s;
    std::vector<Stmt> loops;
    for (size_t g = 0; g < groups.size(); ++g) {
      Stmt body = groups[g].size() == 1 ? groups[g][0] : SeqNode::make(groups[g]);
      Stmt l = ForNode::make(loop->var, loop->min, loop->extent, loop->forKind, body);
      loops.push_back(g == 0 ? l : freshCopy(l));
    }
    return SeqNode::make(std::move(loops));
  }

  Stmt mutateSeq(const SeqNode *op, const Stmt &self) override {
    // Keep sequences flat when a member loop splits into several.
    Stmt s = IRMutator::mutateSeq(op, self);
    if (s.same(self))
      return s;
    std::vector<Stmt> flat;
    for (const Stmt &c : s.as<SeqNode>()->stmts) {
      if (const auto *inner = c.as<SeqNode>())
        flat.insert(flat.end(), inner->stmts.begin(), inner->stmts.end());
      else
        flat.push_back(c);
    }
    return SeqNode::make(std::move(flat));
  }
};

} // namespace

PrimFunc loopFission(const PrimFunc &f) {
  PrimFunc out = f;
  out.body = Fission().mutate(f.body);
  return out;
}

} // namespace npuc::tir
