// Substitute.h - variable substitution and renaming copies of TIR, shared by the loop passes.
//
// substitute() replaces free occurrences of variables by expressions (simplifying only the
// expressions that changed, so untouched code stays as written). freshCopy() duplicates a
// statement with new Var nodes for every loop it binds and new buffers for every Allocate, which
// a pass needs whenever it emits a loop body twice (the verifier rejects a variable bound by two
// loops). usesVar() tells whether an expression or statement mentions a variable.
#pragma once

#include "tir/IR.h"

#include <unordered_map>

namespace npuc::tir {

using VarMap = std::unordered_map<const VarNode *, Expr>;

Expr substitute(const Expr &e, const VarMap &m);
Stmt substitute(const Stmt &s, const VarMap &m);
Stmt freshCopy(const Stmt &s);
bool usesVar(const Expr &e, const VarNode *v);
bool usesVar(const Stmt &s, const VarNode *v);

} // namespace npuc::tir
