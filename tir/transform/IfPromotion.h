// IfPromotion.h - hoists conditions that block a loop out of it.
//
// An if that is the whole body of a loop and does not depend on the loop variable moves out:
// `for (i) { if (c) A else B }` becomes `if (c) { for (i) A } else { for (i') B }`, so the
// loop nest under it is condition-free for instruction emission. Of a conjunction without else
// branch, the invariant conjuncts move out and the rest stays: `for (i) { if (a && b(i)) A }`
// becomes `if (a) { for (i) { if (b(i)) A } }`. A condition that does depend on the loop
// variable but is decided over the loop's whole range (Prover: rules, then Z3) is replaced by
// its branch. Applied innermost first, so a condition climbs as far as it is invariant. Loops
// whose body is not a single if, ifs that depend on the loop, and conditions that read a buffer
// the loop writes (or a loop with NPU instructions) are left alone.
#pragma once

#include "tir/IR.h"
#include "tir/Prover.h"

namespace npuc::tir {

PrimFunc ifPromotion(const PrimFunc &f, const ProverOptions &o = {});

} // namespace npuc::tir
