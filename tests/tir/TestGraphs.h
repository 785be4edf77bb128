// TestGraphs.h - small graph builders shared by the tir tests: inputs, constants, single nodes,
// and lowering every node of a graph as a group of its own.
#pragma once

#include "graph/Graph.h"
#include "lowering/LowerOps.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace npuc::tir::testgraphs {

inline graph::ValueId input(graph::Graph &g, const std::string &name, Shape s) {
  graph::ValueId v = g.addValue(name, s, graph::DType::F32);
  g.inputs.push_back(v);
  return v;
}

inline graph::ValueId constant(graph::Graph &g, const std::string &name, Shape s) {
  return g.addConstant(name, s, std::vector<float>(static_cast<size_t>(numElements(s)), 0.5f));
}

inline graph::ValueId node(graph::Graph &g, graph::OpKind op, std::vector<graph::ValueId> ins,
                           Shape out, std::map<std::string, graph::AttrValue> attrs = {}) {
  graph::ValueId o =
      g.addValue(fmt::format("{}_out{}", op, g.values.size()), out, graph::DType::F32);
  graph::NodeId n = g.addNode(op, fmt::format("{}{}", op, g.nodes.size()), ins, {o});
  g.node(n).attrs = std::move(attrs);
  return o;
}

/// Lowers each node of g as a group of its own and hands the function to `check`.
template <typename F> void forEachNodeLowered(graph::Graph &g, F check) {
  for (graph::NodeId n : g.topoOrder()) {
    graph::FusedGroup grp;
    grp.id = static_cast<int>(n);
    grp.name = "g";
    grp.name += std::to_string(n); // appending avoids a GCC 12 -Wrestrict false positive
    grp.nodes = {n};
    for (graph::ValueId v : g.node(n).inputs)
      if (!g.value(v).isConstant())
        grp.inputs.push_back(v);
    grp.outputs = g.node(n).outputs;
    SCOPED_TRACE(g.node(n).kind);
    check(lowerGroup(g, grp));
  }
}

} // namespace npuc::tir::testgraphs
