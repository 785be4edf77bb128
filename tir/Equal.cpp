// Equal.cpp - structural equality with positional binding of loop variables and buffers.
#include "tir/Equal.h"

#include "support/Error.h"

#include <unordered_map>

namespace npuc::tir {
namespace {

class Equal {
public:
  std::unordered_map<const void *, const void *> bound; // lhs var/buffer -> rhs var/buffer

  bool var(const VarNode *a, const VarNode *b) {
    auto it = bound.find(a);
    if (it != bound.end())
      return it->second == b;
    return a == b;
  }

  bool buffer(const Buffer &a, const Buffer &b) {
    if (!a.defined() || !b.defined())
      return a.defined() == b.defined();
    auto it = bound.find(a.get());
    if (it != bound.end())
      return it->second == b.get();
    return a.same(b) || sameDecl(a, b);
  }

  static bool sameDecl(const Buffer &a, const Buffer &b) {
    return a->name == b->name && a->dtype == b->dtype && a->shape == b->shape &&
           a->scope == b->scope;
  }

  bool expr(const Expr &a, const Expr &b) {
    if (!a.defined() || !b.defined())
      return a.defined() == b.defined();
    // Pointer identity proves equality only while no variable is re-bound: under a binding,
    // the very same subtree `i` compares against the counterpart of i, not i.
    if (a.same(b) && bound.empty())
      return true;
    if (a.kind() != b.kind() || a.type() != b.type())
      return false;
    switch (a.kind()) {
    case NodeKind::IntImm:
      return a.as<IntImmNode>()->value == b.as<IntImmNode>()->value;
    case NodeKind::FloatImm:
      return a.as<FloatImmNode>()->value == b.as<FloatImmNode>()->value;
    case NodeKind::Var:
      return var(a.as<VarNode>(), b.as<VarNode>());
    case NodeKind::Not:
      return expr(a.as<NotNode>()->a, b.as<NotNode>()->a);
    case NodeKind::Select: {
      const auto *x = a.as<SelectNode>(), *y = b.as<SelectNode>();
      return expr(x->cond, y->cond) && expr(x->trueValue, y->trueValue) &&
             expr(x->falseValue, y->falseValue);
    }
    case NodeKind::Cast:
      return expr(a.as<CastNode>()->value, b.as<CastNode>()->value);
    case NodeKind::Load: {
      const auto *x = a.as<LoadNode>(), *y = b.as<LoadNode>();
      return buffer(x->buffer, y->buffer) && expr(x->index, y->index);
    }
    case NodeKind::Call: {
      const auto *x = a.as<CallNode>(), *y = b.as<CallNode>();
      if (x->name != y->name || x->args.size() != y->args.size())
        return false;
      for (size_t i = 0; i < x->args.size(); ++i)
        if (!expr(x->args[i], y->args[i]))
          return false;
      return true;
    }
    default:
      break;
    }
    NPUC_ASSERT(isBinary(a.kind()), std::string("equal: unhandled kind ") + kindName(a.kind()));
    const auto *x = static_cast<const BinaryNode *>(a.get());
    const auto *y = static_cast<const BinaryNode *>(b.get());
    return expr(x->a, y->a) && expr(x->b, y->b);
  }

  bool stmt(const Stmt &a, const Stmt &b) {
    if (!a.defined() || !b.defined())
      return a.defined() == b.defined();
    if (a.same(b) && bound.empty())
      return true;
    if (a.kind() != b.kind())
      return false;
    switch (a.kind()) {
    case NodeKind::For: {
      const auto *x = a.as<ForNode>(), *y = b.as<ForNode>();
      if (x->forKind != y->forKind || x->var.type() != y->var.type() || !expr(x->min, y->min) ||
          !expr(x->extent, y->extent))
        return false;
      bound[x->var.node()] = y->var.node();
      return stmt(x->body, y->body);
    }
    case NodeKind::IfThenElse: {
      const auto *x = a.as<IfThenElseNode>(), *y = b.as<IfThenElseNode>();
      return expr(x->cond, y->cond) && stmt(x->thenCase, y->thenCase) &&
             stmt(x->elseCase, y->elseCase);
    }
    case NodeKind::Store: {
      const auto *x = a.as<StoreNode>(), *y = b.as<StoreNode>();
      return buffer(x->buffer, y->buffer) && expr(x->value, y->value) && expr(x->index, y->index);
    }
    case NodeKind::Allocate: {
      const auto *x = a.as<AllocateNode>(), *y = b.as<AllocateNode>();
      if (x->buffer->dtype != y->buffer->dtype || x->buffer->shape != y->buffer->shape ||
          x->buffer->scope != y->buffer->scope)
        return false;
      bound[x->buffer.get()] = y->buffer.get();
      return stmt(x->body, y->body);
    }
    case NodeKind::Seq: {
      const auto *x = a.as<SeqNode>(), *y = b.as<SeqNode>();
      if (x->stmts.size() != y->stmts.size())
        return false;
      for (size_t i = 0; i < x->stmts.size(); ++i)
        if (!stmt(x->stmts[i], y->stmts[i]))
          return false;
      return true;
    }
    case NodeKind::Evaluate:
      return expr(a.as<EvaluateNode>()->value, b.as<EvaluateNode>()->value);
    case NodeKind::AttrStmt: {
      const auto *x = a.as<AttrStmtNode>(), *y = b.as<AttrStmtNode>();
      return x->key == y->key && expr(x->value, y->value) && stmt(x->body, y->body);
    }
    case NodeKind::NpuOp: {
      const auto *x = a.as<NpuOpNode>(), *y = b.as<NpuOpNode>();
      if (x->mnemonic != y->mnemonic || x->fields.size() != y->fields.size())
        return false;
      for (size_t i = 0; i < x->fields.size(); ++i)
        if (x->fields[i].first != y->fields[i].first ||
            !expr(x->fields[i].second, y->fields[i].second))
          return false;
      return true;
    }
    default:
      NPUC_ASSERT(false, std::string("equal: unhandled statement ") + kindName(a.kind()));
    }
  }
};

} // namespace

bool structuralEqual(const Expr &a, const Expr &b) {
  return Equal().expr(a, b);
}
bool structuralEqual(const Stmt &a, const Stmt &b) {
  return Equal().stmt(a, b);
}

bool structuralEqual(const PrimFunc &a, const PrimFunc &b) {
  if (a.params.size() != b.params.size())
    return false;
  Equal eq;
  for (size_t i = 0; i < a.params.size(); ++i) {
    const Buffer &x = a.params[i], &y = b.params[i];
    if (x->dtype != y->dtype || x->shape != y->shape || x->scope != y->scope)
      return false;
    eq.bound[x.get()] = y.get();
  }
  return eq.stmt(a.body, b.body);
}

} // namespace npuc::tir
