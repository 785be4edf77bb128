// Extract.h - fused groups cut out of a graph as a standalone graph.
//
// Used for crash reproducers (support/CrashContext.h: `npuc compile` writes the failing group
// as graph text, which `npuc compile` reads back) and wherever a group must be compiled alone.
#pragma once

#include "graph/Graph.h"
#include "support/CrashContext.h"

#include <vector>

namespace npuc::graph {

/// The nodes of groups `groupIds` of `g` (fused), as a graph of their own: values the groups
/// read from outside that are not constants become graph inputs (in the order the groups list
/// them), the constants they read stay constants (data shared, not copied), and the values
/// they give to the rest of the graph, or that are graph outputs, become its outputs. The
/// result has no groups (compiling it fuses again). Names, attributes and shapes are kept.
/// An id that is not a group of `g` is a compiler bug (NPUC_ASSERT).
Graph extractGroups(const Graph &g, const std::vector<int> &groupIds);

/// A CrashScope reproducer writing those groups, extracted, as graph text (docs/GRAPH.md) to
/// DIR/group.graph, which `npuc compile` and `npuc ref` read. `g` must outlive the scope.
CrashScope::Reproduce reproduceGroups(const Graph &g, std::vector<int> groupIds);

} // namespace npuc::graph
