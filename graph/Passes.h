// Passes.h - graph-level passes: cleanup and constant folding, BatchNorm folding, operator fusion
// into FusedGroups, and NPU/CPU placement. Each pass keeps node/value ids stable (removed nodes
// are marked dead) so that diagnostics and later passes can refer to them.
#pragma once

#include "graph/Graph.h"

#include <functional>
#include <string>

namespace npuc::graph {

/// Recomputes every live node's output shapes in topological order (after rewrites).
void inferShapes(Graph &g);

/// Removes Identity/Dropout (and Pad with all-zero pads), folds nodes whose inputs are all
/// constants into constants (except nodes producing graph outputs), then removes dead nodes.
void simplify(Graph &g);

/// If node n's inputs are all constants (or n is Shape, whose result is static), evaluates it
/// with the reference kernels, turns its output into a constant and marks n dead. Returns
/// whether it folded. Used by simplify() and by the frontend's import-time folding.
bool foldConstantNode(Graph &g, NodeId n);

/// BatchNormalization right after a Conv whose output has that BN as its single consumer (and
/// is not a graph output) is folded into the conv's weights and bias. Any other BN becomes
/// Mul + Add with per-channel constants of shape [C, 1, ..., 1]. BN parameters must be constant.
void foldBatchNorm(Graph &g);

/// Fills g.groups (see the rules in Fusion.cpp). Clears any previous grouping.
void fuseOps(Graph &g);

/// Sets each group's placement: NPU when rejectReason returns "", else CPU with that reason.
/// Groups made only of view ops (Reshape, Flatten, Squeeze, Unsqueeze) go to the NPU only when
/// the callback accepts them and no neighbouring group runs on the CPU (no device ping-pong for
/// a free reinterpretation); otherwise they stay on the CPU.
void place(Graph &g,
           const std::function<std::string(const Graph &, const FusedGroup &)> &rejectReason);

} // namespace npuc::graph
