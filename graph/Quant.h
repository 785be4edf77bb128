// Quant.h - what the integer product operators (ConvInteger, MatMulInteger) share between shape
// inference, the reference kernels, the CPU lowering and the compile driver: how a zero point
// broadcasts against its operand, and whether fp32 accumulation computes a node exactly.
#pragma once

#include "graph/Graph.h"

namespace npuc::graph {

/// MatMulInteger's zero point of shape `zp` as a shape that broadcasts (numpy rules) against its
/// operand: ONNX gives a 1-D zero point of `a` per row ([M] -> [M, 1]) and of `b` per column
/// ([N] stays [N]); a scalar or an N-D one ([..., M, 1], [..., 1, N]) is kept.
Shape matMulZeroPointShape(const Shape &zp, bool rowWise);

/// Compiled targets compute ConvInteger and MatMulInteger in fp32, exact while every partial sum
/// stays within 2^24. Fails naming the node when its worst-case sum (the reduction length times
/// the largest |operand - zero point| of each side, or the largest sum of a constant operand's
/// |values - zero point| along the reduction times the other side's largest) could exceed it.
void checkExactAccumulation(const Graph &g, const Node &n);

} // namespace npuc::graph
