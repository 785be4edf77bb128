// IRVisitor.h - read-only traversal of TIR with one virtual per node kind.
//
// visit(Expr)/visit(Stmt) dispatch on the node kind to visit<Kind>(node); the defaults recurse
// into every child in source order, so an analysis overrides only the kinds it cares about and
// calls the base method to keep recursing. The per-kind methods are generated from IRNodes.def.
#pragma once

#include "tir/IR.h"

namespace npuc::tir {

class IRVisitor {
public:
  virtual ~IRVisitor() = default;
  /// Dispatches on the kind; null handles are ignored (e.g. a missing else branch).
  virtual void visit(const Expr &e);
  virtual void visit(const Stmt &s);

#define TIR_EXPR(Name) virtual void visit##Name(const Name##Node *op);
#define TIR_STMT(Name) virtual void visit##Name(const Name##Node *op);
#include "tir/IRNodes.def"
};

} // namespace npuc::tir
