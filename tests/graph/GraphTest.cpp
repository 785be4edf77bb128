// GraphTest.cpp - graph container operations: topological order (model order on ties, valid
// order when the model lists nodes out of order), use lists, replaceAllUses, DCE, printing.
#include "graph/Graph.h"
#include "graph/Printer.h"
#include "support/Error.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace npuc;
using namespace npuc::graph;

namespace {

TEST(Graph, TopoOrderKeepsModelOrderWhenAlreadySorted) {
  Graph g;
  ValueId x = g.addValue("x", {1, 4}, DType::F32);
  g.inputs = {x};
  ValueId a = g.addValue("a", {1, 4}, DType::F32), b = g.addValue("b", {1, 4}, DType::F32);
  ValueId c = g.addValue("c", {1, 4}, DType::F32);
  g.addNode(OpKind::Relu, "n0", {x}, {a});
  g.addNode(OpKind::Sigmoid, "n1", {x}, {b}); // independent of n0: a tie
  g.addNode(OpKind::Add, "n2", {a, b}, {c});
  g.outputs = {c};
  EXPECT_EQ(g.topoOrder(), (std::vector<NodeId>{0, 1, 2}));
}

TEST(Graph, TopoOrderFixesOutOfOrderModels) {
  Graph g;
  ValueId x = g.addValue("x", {4}, DType::F32);
  g.inputs = {x};
  ValueId a = g.addValue("a", {4}, DType::F32), b = g.addValue("b", {4}, DType::F32);
  ValueId c = g.addValue("c", {4}, DType::F32);
  // Listed consumer-first: node 0 reads b produced by node 2, which reads a from node 1.
  g.addNode(OpKind::Relu, "last", {b}, {c});
  g.addNode(OpKind::Relu, "first", {x}, {a});
  g.addNode(OpKind::Relu, "middle", {a}, {b});
  g.outputs = {c};
  EXPECT_EQ(g.topoOrder(), (std::vector<NodeId>{1, 2, 0}));
  g.node(2).dead = true;
  std::vector<NodeId> live = g.topoOrder();
  EXPECT_EQ(live.size(), 2u);
  EXPECT_TRUE(std::find(live.begin(), live.end(), 2) == live.end());
}

TEST(Graph, CycleIsAnError) {
  Graph g;
  ValueId a = g.addValue("a", {4}, DType::F32), b = g.addValue("b", {4}, DType::F32);
  g.addNode(OpKind::Relu, "p", {b}, {a});
  g.addNode(OpKind::Relu, "q", {a}, {b});
  g.outputs = {b};
  EXPECT_THROW(g.topoOrder(), Error);
}

TEST(Graph, UseListsAreEveryValuesConsumers) {
  // x feeds r twice (one consumer) and m; a feeds t and the dead node; nothing reads b or d.
  Graph g;
  ValueId x = g.addValue("x", {4}, DType::F32);
  g.inputs = {x};
  ValueId a = g.addValue("a", {4}, DType::F32), b = g.addValue("b", {4}, DType::F32);
  ValueId c = g.addValue("c", {4}, DType::F32), d = g.addValue("d", {4}, DType::F32);
  g.addNode(OpKind::Add, "r", {x, x}, {a});
  g.addNode(OpKind::Tanh, "t", {a}, {b});
  g.addNode(OpKind::Mul, "m", {a, x}, {c});
  g.addNode(OpKind::Exp, "dead", {a}, {d});
  g.node(3).dead = true;
  g.outputs = {b, c};
  const std::vector<std::vector<NodeId>> uses = g.useLists();
  ASSERT_EQ(uses.size(), g.values.size());
  EXPECT_EQ(uses[static_cast<size_t>(x)], (std::vector<NodeId>{0, 2}));
  EXPECT_EQ(uses[static_cast<size_t>(a)], (std::vector<NodeId>{1, 2}));
  EXPECT_TRUE(uses[static_cast<size_t>(b)].empty());
  EXPECT_TRUE(uses[static_cast<size_t>(d)].empty());
  for (const Value &v : g.values)
    EXPECT_EQ(uses[static_cast<size_t>(v.id)], g.consumers(v.id)) << v.name;
}

TEST(Graph, ConsumersReplaceAndDce) {
  Graph g;
  ValueId x = g.addValue("x", {4}, DType::F32);
  g.inputs = {x};
  ValueId a = g.addValue("a", {4}, DType::F32), b = g.addValue("b", {4}, DType::F32);
  ValueId d = g.addValue("d", {4}, DType::F32);
  g.addNode(OpKind::Relu, "r", {x}, {a});
  g.addNode(OpKind::Tanh, "t", {a}, {b});
  g.addNode(OpKind::Exp, "unused", {a}, {d});
  g.outputs = {b};
  EXPECT_EQ(g.consumers(a), (std::vector<NodeId>{1, 2}));
  EXPECT_TRUE(g.isGraphOutput(b));
  EXPECT_FALSE(g.isGraphOutput(a));
  g.removeDeadNodes();
  EXPECT_TRUE(g.node(2).dead);
  EXPECT_FALSE(g.node(0).dead);
  g.replaceAllUses(a, x); // bypass the Relu: it becomes dead too
  EXPECT_EQ(g.node(1).inputs[0], x);
  g.removeDeadNodes();
  EXPECT_TRUE(g.node(0).dead);
  EXPECT_EQ(g.topoOrder(), (std::vector<NodeId>{1}));
  EXPECT_EQ(g.findValue("b"), b);
  EXPECT_FALSE(g.findValue("zzz").has_value());
}

TEST(Graph, ReplacingAnOutputsValueKeepsItsName) {
  // A graph built in code names its outputs by their values until a pass replaces one: then
  // every output's name is pinned, and the replaced one keeps the name it had.
  Graph g;
  ValueId x = g.addValue("x", {4}, DType::F32);
  g.inputs = {x};
  ValueId a = g.addValue("a", {4}, DType::F32), b = g.addValue("b", {4}, DType::F32);
  g.addNode(OpKind::Relu, "r", {x}, {a});
  g.addNode(OpKind::Identity, "i", {a}, {b});
  g.outputs = {b, a};
  EXPECT_TRUE(g.outputNames.empty());
  EXPECT_EQ(g.outputName(0), "b");
  g.replaceAllUses(x, a); // not an output: nothing to pin
  EXPECT_TRUE(g.outputNames.empty());
  g.node(0).inputs = {x};
  g.replaceAllUses(b, a);
  EXPECT_EQ(g.outputs, (std::vector<ValueId>{a, a}));
  EXPECT_EQ(g.outputNames, (std::vector<std::string>{"b", "a"}));
  g.replaceAllUses(a, x); // both outputs now read the input; the names stay
  EXPECT_EQ(g.outputs, (std::vector<ValueId>{x, x}));
  EXPECT_EQ(g.outputName(0), "b");
  EXPECT_EQ(g.outputName(1), "a");
  EXPECT_NE(printGraph(g).find("output %x: f32[4] as 'b'"), std::string::npos) << printGraph(g);
}

TEST(Graph, AttributesAndPrinter) {
  Graph g;
  g.name = "p";
  ValueId x = g.addValue("x", {1, 2}, DType::F32);
  g.inputs = {x};
  ValueId w = g.addConstant("w", {2}, {1.0f, 2.0f});
  ValueId y = g.addValue("y", {1, 2}, DType::F32);
  NodeId n = g.addNode(OpKind::Mul, "m", {x, w}, {y});
  g.outputs = {y};
  g.node(n).attrs["k"] = int64_t{3};
  g.node(n).attrs["list"] = std::vector<int64_t>{1, 2};
  EXPECT_EQ(g.node(n).attrInt("k", 0), 3);
  EXPECT_EQ(g.node(n).attrInt("missing", 7), 7);
  EXPECT_EQ(g.node(n).attrInts("list"), (std::vector<int64_t>{1, 2}));
  EXPECT_THROW(g.node(n).attrString("k", ""), Error);
  std::string s = printGraph(g);
  EXPECT_NE(s.find("Mul 'm'(%x, %w) -> %y: f32[1x2]"), std::string::npos) << s;
  EXPECT_NE(s.find("list=[1,2]"), std::string::npos) << s;
  EXPECT_NE(printValue(g, w).find("const"), std::string::npos);
}

} // namespace
