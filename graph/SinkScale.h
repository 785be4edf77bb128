// SinkScale.h - moves a scalar scale of a MatMul operand past the MatMul, before fusion.
#pragma once

#include "graph/Graph.h"

namespace npuc::graph {

/// MatMul(x * c, B) or MatMul(x / c, B), c a scalar constant and the scaled value used by that
/// MatMul only, becomes MatMul(x, B) * c (or / c); likewise for the right operand. The scale then
/// fuses as the MatMul's epilogue instead of being a pass of its own over the operand (attention
/// as torch exports it scales Q by 1/sqrt(d) before Q x K^T: one elementwise group per layer).
/// Exact in real arithmetic; only the rounding moves (the operand is no longer rounded after
/// scaling). Returns how many scales it moved. The reference executor keeps the original graph,
/// so `npuc ref` checks the rewrite.
int sinkScalesPastMatMul(Graph &g);

} // namespace npuc::graph
