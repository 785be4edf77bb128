// LoopShift.h - normalises every loop to start at 0.
//
// `for (i, m, e) S` becomes `for (i, 0, e) S[i := i + m]`; the expressions that changed are
// simplified, so `A[i - 1]` in a loop from 1 reads `A[i]` afterwards. Loops already starting at
// 0 are left as they are (pointer-equal). Instruction emission and LoopCollapse expect loops in
// this form: an access pattern is then base + sum(stride * var) over ranges [0, extent).
#pragma once

#include "tir/IR.h"

namespace npuc::tir {

PrimFunc loopShift(const PrimFunc &f);

} // namespace npuc::tir
