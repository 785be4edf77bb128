// LoopCollapse.h - merges perfectly nested loops whose accesses are contiguous over both.
//
// `for (i, 0, N) { for (j, 0, M) { S } }` (same loop kind, both from 0, M a constant) becomes
// `for (i_j, 0, N*M) { S' }` when i and j occur in S only inside buffer indices of the form
// c*(i*M + j) + rest, with rest free of i and j: each such index is rewritten to c*i_j + rest,
// so the merged loop walks the same elements in the same order. Any other use of i or j (a
// condition, a stored value, an inner loop bound, a broadcast index such as B[j]) leaves the
// pair alone. Applied from the innermost pair outwards, so a contiguous 3-deep nest becomes one
// loop. Run LoopShift first: loops not starting at 0 are not collapsed. Nor is a pair whose
// merged extent N*M might not fit in int64 (a constant product that overflows, or a symbolic N
// the enclosing loops' constant ranges do not bound): the merged loop would count wrongly.
#pragma once

#include "tir/IR.h"

namespace npuc::tir {

PrimFunc loopCollapse(const PrimFunc &f);

} // namespace npuc::tir
