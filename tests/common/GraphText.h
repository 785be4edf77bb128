// GraphText.h - small graphs for tests: written as graph text (docs/GRAPH.md), which checks every
// declared shape against shape inference, or built node by node with inferred shapes; names
// find the nodes and values back. One copy for every test that used to carry its own builder.
#pragma once

#include "graph/Graph.h"
#include "graph/Ops.h"
#include "graph/ShapeInference.h"
#include "graph/Text.h"
#include "support/Error.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace npuc::test {

/// Parses graph text; a mistake in it is an npuc::Error naming "<test>:LINE:COL".
inline graph::Graph graphFromText(const std::string &text) {
  return graph::parseGraphText(text, {"<test>", 1});
}

/// The live node called `name` (-1, and a test failure, when there is none).
inline graph::NodeId nodeNamed(const graph::Graph &g, const std::string &name) {
  for (const graph::Node &n : g.nodes)
    if (!n.dead && n.name == name)
      return n.id;
  ADD_FAILURE() << "no live node '" << name << "'";
  return -1;
}

/// The value called `name` (-1, and a test failure, when there is none).
inline graph::ValueId valueNamed(const graph::Graph &g, const std::string &name) {
  if (std::optional<graph::ValueId> v = g.findValue(name))
    return *v;
  ADD_FAILURE() << "no value '" << name << "'";
  return -1;
}

/// Uniform [-1, 1) floats from std::mt19937(seed): the data of `random(SEED)` in graph text.
inline std::vector<float> randomData(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float &f : v)
    f = d(rng);
  return v;
}

/// Adds node `name` with one f32 output value called `name + ".out"`, whose shape is inferred.
/// `op` is the ONNX name (tests read like the models they mimic); an unknown name is a test bug.
inline graph::NodeId addNode(graph::Graph &g, const std::string &op, const std::string &name,
                             std::vector<graph::ValueId> ins,
                             std::map<std::string, graph::AttrValue> attrs = {}) {
  std::optional<graph::OpKind> kind = graph::opFromName(op);
  NPUC_ASSERT(kind.has_value(), "tests build graphs from operators of graph/Ops.def: " + op);
  graph::ValueId o = g.addValue(name + ".out", {}, graph::DType::F32);
  graph::NodeId n = g.addNode(*kind, name, std::move(ins), {o});
  g.node(n).attrs = std::move(attrs);
  graph::inferNodeShape(g, n);
  return n;
}

/// The (first) output value of node n.
inline graph::ValueId out(const graph::Graph &g, graph::NodeId n) {
  return g.node(n).outputs[0];
}

} // namespace npuc::test
