// StorageFlatten.h - gives allocated multi-dimensional buffers their flat, strided storage.
//
// TIR accesses are already flat element indices over a row-major buffer; what StorageFlatten
// decides is the physical layout of on-chip scratch: every Allocate'd buffer of rank >= 2
// becomes a 1-D buffer whose rows (innermost dimension, W elements) start every W' elements,
// W' = W rounded up to `row-align` (so that each row starts on an alignment or bank boundary),
// and every access `r * W + c` is rewritten to `r * W' + c`. The split of an index into row and
// column is read from its affine form over the enclosing loops: terms whose coefficient is a
// multiple of W (and the constant's multiple of W) are the row, the rest the column, which must
// stay within [0, W) over the loops' ranges (interval analysis).
//
// Left alone: parameters (the caller owns their layout), buffers of rank 1 or without elements,
// and any buffer with an access that is not affine in constant-range loops or whose column part
// can leave its row. A buffer whose padded size does not fit in int64 is an npuc::Error naming it.
#pragma once

#include "tir/IR.h"

namespace npuc::tir {

PrimFunc storageFlatten(const PrimFunc &f, int64_t rowAlign);

} // namespace npuc::tir
