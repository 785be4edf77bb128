// BoundSimplify.h - removes integer min/max that the loop ranges decide.
//
// The lowering clamps reads under padding conditions (`A[max(min(y + ky - 1, H - 1), 0)]`, so
// the index is in bounds whatever the condition says). Once LoopPartition has cut the loops
// where the condition changes, the clamp is the identity on the middle pieces, but it still
// hides the affine index from instruction emission. This pass binds every enclosing loop's
// range (constant bounds) and rewrites `min(a, b)` to `a` when a <= b on the whole range (and
// the symmetric cases, and the same for max), using the interval analysis of Bound.h.
//
// Left alone: float min/max (values, not indices), clamps that are active somewhere on the range,
// loops with non-constant bounds (their variables are unbounded).
#pragma once

#include "tir/IR.h"

namespace npuc::tir {

PrimFunc boundSimplify(const PrimFunc &f);

} // namespace npuc::tir
