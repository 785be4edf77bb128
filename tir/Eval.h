// Eval.h - evaluation of integer TIR expressions with bound variables.
//
// Used by backends to compute concrete trip counts, addresses and instruction fields once the
// loop variables have values, and by tests as an independent oracle. Arithmetic is int64 with
// C semantics for Div/Mod and floor semantics for FloorDiv/FloorMod; comparisons and logic yield
// 0/1. Unbound variables, float operands, loads and calls are compiler bugs (NPUC_ASSERT), as is
// a division by zero.
#pragma once

#include "tir/IR.h"

#include <cstdint>
#include <unordered_map>

namespace npuc::tir {

/// env maps VarNode pointers (Var::node() or Expr::get()) to values.
int64_t evalInt(const Expr &e, const std::unordered_map<const void *, int64_t> &env);
inline int64_t evalInt(const Expr &e) {
  return evalInt(e, {});
}

/// Floor division and modulo of integers (Python semantics), b != 0.
int64_t floorDivInt(int64_t a, int64_t b);
int64_t floorModInt(int64_t a, int64_t b);

/// Folds binary kind k over integer constants; false when undefined (division by zero).
bool foldIntBinary(NodeKind k, int64_t a, int64_t b, int64_t &out);

} // namespace npuc::tir
