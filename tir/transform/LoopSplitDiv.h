// LoopSplitDiv.h - splits a loop whose variable is divided by a constant that divides its extent.
//
// `for (i, 0, 14) B[i * 26 + j] = A[floordiv(i, 2) * 13 + ...]` (nearest upsampling, pixel
// shuffles, grouped channels) has no affine access in i; split by 2 (schedule::splitLoop) it
// becomes `for (i_o, 0, 7) for (i_i, 0, 2) ... A[i_o * 13 + ...]`, which instruction emission
// can map. Applied when the loop starts at 0, has a constant extent, and its variable appears
// under floordiv/floormod by exactly one constant k > 1 that divides the extent (so no
// remainder guard is needed).
//
// Left alone: several divisors of one variable, divisors that do not divide the extent, loops
// not starting at 0 (run loop-shift first), symbolic extents.
#pragma once

#include "tir/IR.h"

namespace npuc::tir {

PrimFunc loopSplitDiv(const PrimFunc &f);

} // namespace npuc::tir
