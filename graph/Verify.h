// Verify.h - structural invariants of a graph, checked between graph passes (graph-opt).
#pragma once

#include "graph/Graph.h"

#include <string>
#include <vector>

namespace npuc::graph {

/// What is wrong with g, empty when nothing: every live node reads values that exist (graph
/// inputs, constants or outputs of live nodes) and is the producer of its outputs; graph outputs
/// exist; and when g.groups is filled, each group's nodes and anchor are live, its boundary is
/// what its nodes give (computeGroupBoundary), and every live node is in exactly one group (a
/// rewrite after fusion leaves groups naming removed nodes).
std::vector<std::string> verifyGraph(const Graph &g);

} // namespace npuc::graph
