// Equal.h - structural equality of TIR.
//
// Two trees are equal when they have the same shape, kinds, types, constants, names of
// intrinsics/attributes/NPU fields, and when variables and buffers correspond: a For variable
// (or Allocate'd buffer, or PrimFunc parameter) binds to its counterpart at the same position,
// so `for (i..) A[i]` equals `for (j..) A[j]`. Free variables must be the same node; free buffers
// the same node or identical in name, dtype, shape and scope.
#pragma once

#include "tir/IR.h"

namespace npuc::tir {

bool structuralEqual(const Expr &a, const Expr &b);
bool structuralEqual(const Stmt &a, const Stmt &b);
/// Names may differ; parameters correspond by position.
bool structuralEqual(const PrimFunc &a, const PrimFunc &b);

} // namespace npuc::tir
