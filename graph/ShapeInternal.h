// ShapeInternal.h - diagnostics helpers shared by the shape-inference files
// (ShapeInference.cpp, ExtShapes.cpp) only.
#pragma once

#include "graph/Graph.h"
#include "support/Error.h"

#include <fmt/format.h>
#include <string>

namespace npuc::graph::shape {

/// "node 'conv1' (Conv)", the prefix of every shape error.
inline std::string where(const Node &n) {
  return fmt::format("node '{}' ({})", n.name, n.kind);
}

/// The shape of input i; an omitted required input is a user error naming the node.
inline const Shape &inShape(const Graph &g, const Node &n, size_t i) {
  if (i >= n.inputs.size() || n.inputs[i] == kNoValue)
    fail("{}: missing input {}", where(n), i);
  return g.value(n.inputs[i]).shape;
}

} // namespace npuc::graph::shape
