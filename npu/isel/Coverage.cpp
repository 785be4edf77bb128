// Coverage.cpp - exact trip-count walk of a function's leaves (Coverage.h).
#include "npu/isel/Coverage.h"

#include "support/Error.h"
#include "tir/Eval.h"
#include "tir/IRVisitor.h"
#include "tir/Substitute.h"

namespace npuc::tir {

double Coverage::computeFraction() const {
  return total() == 0 ? 1.0 : static_cast<double>(tensor + vector) / static_cast<double>(total());
}

double Coverage::instrFraction() const {
  return total() == 0 ? 1.0
                      : static_cast<double>(tensor + vector + dma) / static_cast<double>(total());
}

Coverage &Coverage::operator+=(const Coverage &o) {
  tensor += o.tensor;
  vector += o.vector;
  dma += o.dma;
  scalar += o.scalar;
  for (const auto &[k, v] : o.issued)
    issued[k] += v;
  return *this;
}

namespace {

using Env = std::unordered_map<const void *, int64_t>;

Coverage scaled(Coverage c, int64_t k) {
  c.tensor *= k;
  c.vector *= k;
  c.dma *= k;
  c.scalar *= k;
  for (auto &kv : c.issued)
    kv.second *= k;
  return c;
}

// Whether the work of `body` may change with `v`: a condition, or a loop bound or an
// instruction extent that mentions it.
class DependsOn : public IRVisitor {
public:
  explicit DependsOn(const VarNode *v) : v_(v) {}
  bool found = false;
  void visitIfThenElse(const IfThenElseNode *) override { found = true; }
  void visitFor(const ForNode *op) override {
    found = found || usesVar(op->min, v_) || usesVar(op->extent, v_);
    IRVisitor::visitFor(op);
  }
  void visitNpuOp(const NpuOpNode *op) override {
    for (const auto &f : op->fields)
      found = found || (f.second.as<LoadNode>() == nullptr && usesVar(f.second, v_));
  }

private:
  const VarNode *v_;
};

class HasLoad : public IRVisitor {
public:
  bool found = false;
  void visitLoad(const LoadNode *) override { found = true; }
};

class Counter {
public:
  explicit Counter(const isa::Target &t) : t_(t) {}

  Coverage count(const Stmt &s) {
    Coverage c;
    switch (s.kind()) {
    case NodeKind::For: {
      const auto *op = s.as<ForNode>();
      int64_t lo = evalInt(op->min, env_), n = evalInt(op->extent, env_);
      if (n <= 0)
        return c;
      DependsOn dep(op->var.node());
      dep.visit(op->body);
      if (!dep.found) {
        env_[op->var.get()] = lo;
        c = scaled(count(op->body), n);
      } else {
        for (int64_t i = lo; i < lo + n; ++i) {
          env_[op->var.get()] = i;
          c += count(op->body);
        }
      }
      env_.erase(op->var.get());
      return c;
    }
    case NodeKind::IfThenElse: {
      const auto *op = s.as<IfThenElseNode>();
      HasLoad hl;
      hl.visit(op->cond);
      // A data-dependent condition: count the then-branch (the larger side is unknowable).
      if (hl.found || evalInt(op->cond, env_) != 0)
        return count(op->thenCase);
      return op->elseCase.defined() ? count(op->elseCase) : c;
    }
    case NodeKind::Store:
      c.scalar = 1;
      return c;
    case NodeKind::Seq:
      for (const Stmt &x : s.as<SeqNode>()->stmts)
        c += count(x);
      return c;
    case NodeKind::Allocate:
      return count(s.as<AllocateNode>()->body);
    case NodeKind::AttrStmt:
      return count(s.as<AttrStmtNode>()->body);
    case NodeKind::Evaluate:
      return c;
    case NodeKind::NpuOp:
      return instr(s.as<NpuOpNode>());
    default:
      NPUC_ASSERT(false, std::string("coverage: unexpected statement ") + kindName(s.kind()));
    }
    return c;
  }

private:
  const isa::Target &t_;
  Env env_;

  int64_t field(const NpuOpNode *op, const char *name) {
    Expr e = op->field(name);
    return e.defined() ? evalInt(e, env_) : 1;
  }

  Coverage instr(const NpuOpNode *op) {
    const isa::InstrDesc *d = t_.findInstr(op->mnemonic);
    NPUC_ASSERT(d, "coverage: the target describes no instruction '" + op->mnemonic + "'");
    Coverage c;
    c.issued[op->mnemonic] = 1;
    switch (d->semantics) {
    case isa::Semantics::Matmul:
      c.tensor = field(op, "m") * field(op, "k") * field(op, "n");
      break;
    case isa::Semantics::Vector:
      c.vector = field(op, "n0") * field(op, "n1") * field(op, "n2");
      break;
    case isa::Semantics::Dma:
      c.dma = field(op, "n0") * field(op, "n1") * field(op, "n2");
      break;
    case isa::Semantics::Finish:
      break;
    }
    return c;
  }
};

} // namespace

Coverage measureCoverage(const Stmt &s, const isa::Target &t) {
  return Counter(t).count(s);
}

Coverage measureCoverage(const PrimFunc &f, const isa::Target &t) {
  return measureCoverage(f.body, t);
}

} // namespace npuc::tir
