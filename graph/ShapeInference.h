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

/// Computes and stores the shapes (and dtypes) of node n's outputs from its inputs.
void inferNodeShape(Graph &g, NodeId n);

} // namespace npuc::graph
