// Substitute.cpp - substitution, renaming copies and variable-use queries (see Substitute.h).
#include "tir/Substitute.h"

#include "tir/IRMutator.h"
#include "tir/IRVisitor.h"
#include "tir/Simplify.h"

namespace npuc::tir {
namespace {

class Substituter : public IRMutator {
public:
  VarMap map;
  std::unordered_map<const void *, Buffer> buffers;
  bool renameBindings = false;
  bool simplifyChanged = true;

  using IRMutator::mutate;
  Expr mutate(const Expr &e) override {
    if (!e.defined())
      return e;
    ++depth_;
    Expr r = IRMutator::mutate(e);
    --depth_;
    // Simplify where a substitution happened, at the outermost changed expression only.
    if (simplifyChanged && depth_ == 0 && !r.same(e))
      return simplify(r);
    return r;
  }

protected:
  int depth_ = 0; // nesting of expression mutation; 0 outside any expression

  Expr mutateVar(const VarNode *op, const Expr &self) override {
    auto it = map.find(op);
    return it == map.end() ? self : it->second;
  }

  Buffer mutateBuffer(const Buffer &b) override {
    auto it = buffers.find(b.get());
    return it == buffers.end() ? b : it->second;
  }

  Stmt mutateFor(const ForNode *op, const Stmt &self) override {
    if (!renameBindings)
      return IRMutator::mutateFor(op, self);
    Var nv = Var::make(op->var.name(), op->var.type());
    map[op->var.node()] = nv;
    Expr mn = mutate(op->min), ext = mutate(op->extent);
    Stmt body = mutate(op->body);
    return ForNode::make(nv, mn, ext, op->forKind, body);
  }

  Stmt mutateAllocate(const AllocateNode *op, const Stmt &self) override {
    if (!renameBindings)
      return IRMutator::mutateAllocate(op, self);
    const BufferNode *b = op->buffer.get();
    buffers[b] = Buffer::make(b->name, b->dtype, b->shape, b->scope);
    return AllocateNode::make(buffers[b], mutate(op->body));
  }
};

class UseFinder : public IRVisitor {
public:
  const VarNode *target = nullptr;
  bool found = false;
  void visitVar(const VarNode *op) override { found = found || op == target; }
};

} // namespace

Expr substitute(const Expr &e, const VarMap &m) {
  Substituter s;
  s.map = m;
  return s.mutate(e);
}

Stmt substitute(const Stmt &st, const VarMap &m) {
  Substituter s;
  s.map = m;
  return s.mutate(st);
}

Stmt freshCopy(const Stmt &st) {
  Substituter s;
  s.renameBindings = true;
  s.simplifyChanged = false;
  return s.mutate(st);
}

bool usesVar(const Expr &e, const VarNode *v) {
  UseFinder f;
  f.target = v;
  f.visit(e);
  return f.found;
}

bool usesVar(const Stmt &s, const VarNode *v) {
  UseFinder f;
  f.target = v;
  f.visit(s);
  return f.found;
}

} // namespace npuc::tir
