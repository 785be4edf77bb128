// IRMutator.h - rewriting traversal of TIR that shares unchanged subtrees.
//
// mutate(Expr)/mutate(Stmt) dispatch on the kind to mutate<Kind>(node, self). The defaults
// mutate the children and return `self` itself (pointer-equal) when no child changed, so a pass
// that changes one leaf copies only the path to it; callers may rely on this (e.g. to detect
// "nothing changed" with Expr::same). Buffers referenced by Load/Store/Allocate go through
// mutateBuffer (identity by default), which lets a pass substitute whole buffers.
#pragma once

#include "tir/IR.h"

namespace npuc::tir {

class IRMutator {
public:
  virtual ~IRMutator() = default;
  /// Null handles map to null handles.
  virtual Expr mutate(const Expr &e);
  virtual Stmt mutate(const Stmt &s);
  virtual Buffer mutateBuffer(const Buffer &b) { return b; }

protected:
#define TIR_EXPR(Name) virtual Expr mutate##Name(const Name##Node *op, const Expr &self);
#define TIR_STMT(Name) virtual Stmt mutate##Name(const Name##Node *op, const Stmt &self);
#include "tir/IRNodes.def"
};

} // namespace npuc::tir
