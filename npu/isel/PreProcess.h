// PreProcess.h - decomposes stored expressions into operations the target has instructions for.
//
// Instruction emission (EmitNpu.h) implements one unit operation per store. PreProcess rewrites
// each perfect nest whose stored value is not one such operation into a sequence of nests that
// are: every compound operand is computed by its own copy of the nest into a temporary (one
// element per iteration, allocated in the destination's scope), and constants an operation
// cannot take as an immediate become one-element buffers read with stride 0. Which operations
// are direct is read from the target: an op of the vector unit's list, a copy or fill a DMA can
// do, a matmul whose operands sit in the tensor unit's levels with its dtypes. Operations the
// target lacks are rewritten into ones it has: a - b -> a + b * -1 without `sub`;
// clip(x, lo, hi) -> min(max(x, LO), HI) over constant buffers without `clip`; x * c + d ->
// mul and add over constant buffers without `muladd`; max(x, 0) -> max with a zero buffer
// without `relu`; and an accumulation c += a * b the tensor unit cannot take -> a product
// temporary and a vector add.
//
// Left alone: stores that are already one direct operation, nests with non-constant bounds,
// values with conditions (select) or intrinsics the target lacks, and decompositions that would
// move a read of the destination buffer ahead of the nest's own writes.
#pragma once

#include "isa/Target.h"
#include "tir/IR.h"

namespace npuc::tir {

PrimFunc preProcess(const PrimFunc &f, const isa::Target &t);

} // namespace npuc::tir
