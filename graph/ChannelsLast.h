// ChannelsLast.h - rewrites channels-last regions of 4-D tensors ([N, H, W, C], as ConvNeXt and
// Swin write their LayerNorm and Linear layers after a Permute) as 3-D ones over [N, H*W, C],
// before fusion, so that their matrix products run on the tensor unit and their Permutes become
// views.
#pragma once

#include "graph/Graph.h"

namespace npuc::graph {

/// A region is a connected set of nodes over 4-D tensors that share dims 1 and 2 (H, W) and treat
/// them alike, so that merging the two into one dim computes the same values:
///  - elementwise and broadcasting maps whose operands are [N, H, W, C]-shaped or broadcast
///    without H and W (both 1 once right-aligned to rank 4, or rank <= 1);
///  - Reduce* over the last axis alone with keepdims;
///  - Softmax, LogSoftmax and LayerNormalization over the last axis (one output);
///  - MatMul of such a tensor by a 2-D matrix.
/// A region grows from a seed - a MatMul of a 4-D tensor by a matrix, or an op over the last axis
/// whose input a Transpose with perm [0, 2, 3, 1] makes channels-last - through such nodes in
/// both directions. Its nodes then compute [N, H*W, C]-shaped values (new values named
/// `<value>.3d`; constants are reshaped, sharing their data; other operands are Reshaped on
/// entry); a value read outside the region, or a graph output, is Reshaped back to its 4-D value,
/// which keeps its id and name. The NPU stores 4-D tensors channels-innermost (NHWC) and 3-D
/// ones row-major, so the Transpose into a region and the one out of it cancel with the Reshapes
/// (zero-copy views), and the MatMul reads its contraction dim contiguously. Returns how many
/// regions it rewrote; the reference executor keeps the 4-D ops, so `npuc ref` checks this.
int channelsLastTo3d(Graph &g);

} // namespace npuc::graph
