// ExtOps.h - the scalar semantics of the wider ONNX operator set (issue 6) that code outside the
// reference kernels reads: the extended unary and binary maps and Resize's coordinate rules.
// Their shape rules and kernels are rows of graph/Ops.def like every other operator's.
//
// Attributes are in the normalised form the frontend produces (see frontend/Onnx.h):
// explicit per-axis Slice starts/ends/steps, Reduce axes as a sorted non-negative attribute,
// Resize output sizes and scales, ConvTranspose explicit pads and output_padding, ...
//
// Runtime dtypes: the executor and the CPU fallback keep every tensor as fp32. Bool tensors hold
// 0/1 and int64 tensors (ArgMax/TopK indices, runtime Casts) hold integers, exact below 2^24;
// int64 values that only shape computations use are constants folded at import.
#pragma once

#include "graph/Graph.h"
#include "support/Tensor.h"

#include <string>
#include <vector>

namespace npuc::graph {

// Which ops these are is the Family column of graph/Ops.def (isExtUnaryOp, isExtBroadcastOp in
// graph/Ops.h).

/// The scalar function of an extended unary op (double precision, node attributes applied).
double evalUnary(const Node &n, double x);
/// The scalar function of an extended binary op (Where is ternary and handled by the kernel).
double evalBinary(const Node &n, double a, double b);

/// Resize's source coordinate of output position xOut along `axis` (before clamping), per the
/// node's coordinate_transformation_mode and scales.
double resizeSourceCoord(const Node &n, size_t axis, int64_t xOut, int64_t inLen, int64_t outLen);
/// Resize's tf_crop_and_resize: whether source coordinate c along an axis of extent inLen lies
/// outside the input, where the output is extrapolation_value (false in every other mode).
bool resizeOutside(const Node &n, double c, int64_t inLen);
/// Resize's nearest input index for source coordinate c (nearest_mode), clamped to the input.
int64_t resizeNearest(const Node &n, double c, int64_t inLen);
/// Resize's cubic kernel (Keys, coefficient a = cubic_coeff_a) at distance x >= 0 from a tap.
double resizeCubicWeight(double a, double x);

} // namespace npuc::graph
