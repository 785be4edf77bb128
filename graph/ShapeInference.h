// ShapeInference.h - static output shapes of every operator the graph IR supports.
//
// The frontend normalises ONNX attributes at import (see frontend/Onnx.h), so the rules here read
// the normalised form: explicit 2-D pads/strides/dilations/kernel_shape on Conv and pools, Clip
// bounds and Squeeze/Unsqueeze axes and Pad pads as attributes, non-negative axes. Shape errors
// (mismatched channels, non-broadcastable operands) are user errors naming the node.
#pragma once

#include "graph/Graph.h"

namespace npuc::graph {

/// Multidirectional (NumPy) broadcast of two shapes; fails naming `what` when incompatible.
Shape broadcastShapes(const Shape &a, const Shape &b, const std::string &what);

/// Checks a 2-D window op's geometry attributes (Conv, ConvTranspose, the window pools) before
/// anything divides by or loops over them: kernel_shape, strides and dilations at least 1, pads
/// non-negative; fails naming the node and the attribute. The frontend calls it too, before it
/// resolves auto_pad (which divides by the strides).
void checkWindowAttrs(const Node &n, const std::vector<int64_t> &kernel,
                      const std::vector<int64_t> &strides, const std::vector<int64_t> &dilations,
                      const std::vector<int64_t> &pads);

/// Computes and stores the shapes (and dtypes) of node n's outputs from its inputs.
void inferNodeShape(Graph &g, NodeId n);

} // namespace npuc::graph
