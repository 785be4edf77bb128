// LowerActivations.h - rewrites piecewise-linear activations the NPU has no kernel for into the
// elementwise primitives it runs (Mul, Add, Clip), before fusion.
#pragma once

#include "graph/Graph.h"

namespace npuc::graph {

/// HardSigmoid(x; alpha, beta) becomes Clip(x * alpha + beta, 0, 1), and HardSwish(x) becomes
/// x * Clip(x * (1/6) + 0.5, 0, 1), with scalar constants, so that fusion can attach them to the
/// producing conv's epilogue or stream them through the NPU's vector unit instead of sending
/// each one to the CPU (MobileNetV3 has one after nearly every conv). Returns how many nodes it
/// rewrote. The reference executor keeps the original ops, so `npuc ref` checks this rewrite.
/// Pow(x, 2) of a float x by a one-element constant becomes Mul(x, x), which is exact (pow is
/// correctly rounded at exponent 2): LayerNorm exported below opset 17 squares through Pow, which
/// no vector unit has. Where(cond, k, x) with a constant condition and a constant float branch k
/// (an attention mask filled by masked_fill) becomes Max and/or Min of x with constant bounds
/// that equal k where the condition selects it and are infinite elsewhere, since no vector unit
/// selects; exact except for NaN elements of x.
int lowerActivations(Graph &g);

} // namespace npuc::graph
