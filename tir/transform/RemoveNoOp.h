// RemoveNoOp.h - deletes statements that have no effect.
//
// Removed: Evaluate of an expression without calls (TIR expressions are pure; calls are kept
// in case an intrinsic ever has effects), stores of a buffer element to itself (`A[i] = A[i]`),
// loops with a constant extent <= 0, and every loop, if, allocate or attr whose body is (after
// this pass) empty; an if with an empty then-branch becomes `if (!c)` of its else-branch.
// Sequences drop empty members and collapse to their single member.
#pragma once

#include "tir/IR.h"

namespace npuc::tir {

PrimFunc removeNoOp(const PrimFunc &f);
/// The statement-level rewrite, for other passes.
Stmt removeNoOp(const Stmt &s);
/// True for the empty statement (an empty Seq).
bool isNoOp(const Stmt &s);

} // namespace npuc::tir
