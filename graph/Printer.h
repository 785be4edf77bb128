// Printer.h - human-readable text dumps of a graph (values, nodes, fused groups), used for
// debugging and by `npuc inspect`. The format is stable enough to FileCheck against.
#pragma once

#include "graph/Graph.h"

#include <string>

namespace npuc::graph {

/// "%name: f32[1x3x32x32]" (plus " const" for constants).
std::string printValue(const Graph &g, ValueId v);
/// "Conv 'name'(%x, %w) -> %y {group=1, pads=[1,1,1,1]}".
std::string printNode(const Graph &g, NodeId n);
/// Inputs, outputs and every live node in topological order.
std::string printGraph(const Graph &g);
/// One block per fused group: placement, reason, nodes, boundary values.
std::string printGroups(const Graph &g);

} // namespace npuc::graph
