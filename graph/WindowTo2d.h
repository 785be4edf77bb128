// WindowTo2d.h - rewrites 1-D convolutions and pools ([N, C, W] tensors) as their 2-D forms over
// an [N, C, 1, W] view, before fusion, so that they run on the NPU's 2-D kernels.
#pragma once

#include "graph/Graph.h"

namespace npuc::graph {

/// Every live Conv, MaxPool (without Indices), AveragePool and GlobalAveragePool whose input is
/// [N, C, W] becomes Unsqueeze(axis 2) -> the op over [N, C, 1, W] (kernel_shape [1, k],
/// strides [1, s], dilations [1, d], pads [0, begin, 0, end]; a constant Conv weight is
/// reshaped to [M, C/group, 1, k], a computed one unsqueezed too) -> Squeeze(axis 2), which
/// computes the same values (a height of 1 with a kernel height of 1 and no vertical padding).
/// One-input elementwise ops (Relu, Clip, ...) that alone read the result move before the
/// Squeeze, so that they can fuse as the 2-D op's epilogue. The layout ops are views the NPU's
/// layout handling takes. Returns how many it rewrote; the
/// reference executor keeps the 1-D ops, so `npuc ref` checks this rewrite.
int windowOpsTo2d(Graph &g);

} // namespace npuc::graph
