// LoopFission.h - splits a loop whose body is a sequence into one loop per statement.
//
// `for (i) { S1; S2 }` becomes `for (i) { S1 }; for (i') { S2 }` when no iteration of S1 needs
// to run after an earlier iteration of S2. The rule is conservative: every buffer that both
// statements touch, and that one of them writes, must be accessed in both at one and the same
// index expression that depends only on loop variables outside the statements and changes with
// i (coefficient != 0 in i), so each element is touched by a single iteration and only the
// same-iteration order S1(i) -> S2(i) matters, which fission keeps. Statements that cannot be
// separated from their predecessor stay in its loop; a body with an NPU instruction (whose
// memory effects are not modelled here) is left alone. Applied innermost loops first.
#pragma once

#include "tir/IR.h"

namespace npuc::tir {

PrimFunc loopFission(const PrimFunc &f);

} // namespace npuc::tir
