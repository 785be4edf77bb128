// Linear.h - splitting an integer expression into coeff * v + rest, with rest free of v.
//
// The loop passes ask how an index or a condition depends on one loop variable: linearIn()
// succeeds when the expression is built from +, - and multiplication by constants over v and
// v-free subterms (which may be anything, e.g. floordiv of another variable), and every
// coefficient it meets fits in int64 (a wrapped coefficient would describe another access).
#pragma once

#include "tir/IR.h"

#include <cstdint>

namespace npuc::tir {

/// On success e == coeff * v + rest (rest simplified, free of v).
bool linearIn(const Expr &e, const VarNode *v, int64_t &coeff, Expr &rest);

} // namespace npuc::tir
