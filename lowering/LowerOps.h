// LowerOps.h - lowering of a fused graph group to one fp32 TIR loop nest (the CPU fallback's and
// the reference TIR form of a group).
//
// Every graph value is a flat row-major fp32 buffer (NCHW for 4-D tensors). Each node of the
// group becomes a loop nest over its output elements with reduction loops inside (conv, pools,
// gemm/matmul, softmax); padding reads use Select over a clamped (always in-bounds) index.
// Values produced and consumed only inside the group are Allocate'd around the whole body.
// Parameters, in order: the group's inputs (grp.inputs order), the constants its nodes read (in
// first-use order; int64 constants are passed as fp32, like the reference executor's
// constantTensor), then the group's outputs (grp.outputs order). An operator or attribute this
// lowering cannot express is a user error (npuc::Error) naming the node.
#pragma once

#include "graph/Graph.h"
#include "tir/IR.h"

#include <vector>

namespace npuc::tir {

/// Choices a lowering's user makes for its machine.
struct LowerOptions {
  /// LayerNormalization and InstanceNormalization keep their statistics in fp64, as `npuc ref`
  /// does (see lowerNormalize). A machine without fp64 arithmetic (the NPU's vector unit) asks
  /// for fp32 statistics: the mean and variance lose that exactness over near-constant blocks.
  bool fp64Statistics = true;
  /// Softmax and the normalisations lower each stage (fill, reduce, finish, output) as one loop
  /// nest over every row, with the per-row statistics in buffers indexed by row, so that a vector
  /// unit covers many rows with each instruction. Off: one nest per row whose statistics are two
  /// scalars (what a CPU keeps in registers). The arithmetic and its order are the same.
  bool statisticsPerRow = false;
};

/// When paramValues is given, it receives the graph value behind each parameter, in order (the
/// runtime binds buffers with it).
PrimFunc lowerGroup(const graph::Graph &g, const graph::FusedGroup &grp,
                    std::vector<graph::ValueId> *paramValues = nullptr,
                    const LowerOptions &options = {});

} // namespace npuc::tir
