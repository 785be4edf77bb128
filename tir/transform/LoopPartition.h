// LoopPartition.h - splits a loop where a condition in its body changes value.
//
// For a loop with constant bounds, every if-condition and select-condition of its body that
// depends on the loop variable is examined: each comparison in it that is linear in the
// variable (c*i + rest op 0, rest ranging over the enclosing and inner loops) gives the points
// where it can change value; between consecutive points, each condition is decided with the
// Prover (interval/modular rules, then Z3), and so is each comparison in them. Adjacent ranges
// with the same decisions merge, and the loop becomes one loop per range in which the decided
// conditions are gone (an if becomes its branch, a select its arm) and undecided conditions
// lose the comparisons the range decides (a padding test over an output and a window loop
// keeps only the window part, which the window loop's own partition then removes; clamps
// min/max that the narrower range decides are resolved
// as well, so a padded read's clamped index becomes plain). A range of one iteration is emitted as
// its body with the variable replaced by the constant. Loops whose conditions are undecided on
// every range, or that would need more than `max-pieces` pieces, are left alone; the pieces are
// partitioned again inside (with their narrower range) for the inner loops.
#pragma once

#include "tir/IR.h"
#include "tir/Prover.h"

namespace npuc::tir {

struct LoopPartitionOptions {
  int maxPieces = 5;
  ProverOptions prover;
};

PrimFunc loopPartition(const PrimFunc &f, const LoopPartitionOptions &o = {});

} // namespace npuc::tir
