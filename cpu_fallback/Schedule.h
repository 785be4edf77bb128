// Schedule.h - CPU schedules: rewrites of a group's plain loop nest (tir::lowerGroup) into loop
// nests that run fast on a host CPU, computing the same values.
//
// Convolution (group = 1, the anchor of its group): the input is copied once into a zero-padded
// buffer (so the inner loop has no bounds selects), output channels are blocked by
// kConvChannelBlock and the blocks run as a parallel loop over the thread pool; inside a block,
// for each output row the reduction (c, kh, kw) is outside and the output row is innermost:
//   out[m0..m0+B)[oh][ow] += w[m][c][kh][kw] * xp[c][oh*s + kh*d][ow*s + kw*d]
// so one input vector feeds B accumulator rows (register/L1 reuse), the weight is a broadcast
// scalar and the ow loop is a unit- (or constant-) stride loop LLVM's vectoriser turns into FMAs
// at the host's vector width. The fused epilogue (bias, residual add, ReLU...) is untouched.
// Groups whose anchor has no schedule, or whose loop nest is not in the expected form, are left
// as they are (correct, slower).
#pragma once

#include "graph/Graph.h"
#include "tir/IR.h"

#include <vector>

namespace npuc::cpu {

constexpr int64_t kConvChannelBlock = 8;

/// Applies the matching schedule to `f` in place; returns whether one was applied.
bool scheduleForCpu(const graph::Graph &g, const graph::FusedGroup &grp,
                    const std::vector<graph::ValueId> &params, tir::PrimFunc &f);

} // namespace npuc::cpu
