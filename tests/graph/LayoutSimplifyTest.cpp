// LayoutSimplifyTest.cpp - algebraic simplification of layout ops (graph/LayoutSimplify.cpp):
// reshape chains collapse, Transpose pairs compose, identity and unit-dim transposes go, graph
// outputs and multi-consumer intermediates are kept. Every case checks the simplified graph's
// reference outputs against the reference run of the graph before simplification. Graphs are
// graph text (docs/GRAPH.md), so every intermediate shape written here is checked on reading.
#include "graph/Passes.h"
#include "graph/Printer.h"
#include "graph/Reference.h"
#include "tests/common/GraphText.h"

#include <gtest/gtest.h>

#include <random>

using namespace npuc;
using namespace npuc::graph;
using npuc::test::graphFromText;
using npuc::test::nodeNamed;

namespace {

HostTensor randomInput(const Shape &s) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  HostTensor t(s);
  for (float &f : t.data)
    f = d(rng);
  return t;
}

std::vector<OpKind> liveOps(const Graph &g) {
  std::vector<OpKind> ops;
  for (NodeId n : g.topoOrder())
    ops.push_back(g.node(n).kind);
  return ops;
}

// Simplifies a copy of g and checks that every graph output keeps its value id and name and
// equals (exactly: layout ops only move elements) the reference run of the original graph.
Graph simplifiedAndChecked(const Graph &g) {
  HostTensor x = randomInput(g.value(g.inputs[0]).shape);
  auto before = runReference(g, {{g.inputs[0], x}});
  Graph s = g;
  simplify(s);
  EXPECT_EQ(s.outputs, g.outputs);
  auto after = runReference(s, {{s.inputs[0], x}});
  for (ValueId o : g.outputs) {
    EXPECT_EQ(s.value(o).name, g.value(o).name);
    const HostTensor &a = before.at(o), &b = after.at(o);
    EXPECT_EQ(a.shape, b.shape);
    EXPECT_EQ(a.data, b.data) << g.value(o).name;
  }
  return s;
}

TEST(LayoutSimplify, ReshapeChainCollapsesToOneReshape) {
  Graph g = graphFromText(R"(graph "chain"
    input %x: f32[2x3x4]
    const %s: i64[2] = [6, 4]
    %f: f32[2x12] = Flatten "f"(%x) {axis=1}
    %u: f32[1x2x12] = Unsqueeze "u"(%f) {axes=[0]}
    %r: f32[6x4] = Reshape "r"(%u, %s)
    %y: f32[6x4] = Relu "relu"(%r)
    output %y)");
  ValueId x = g.inputs[0];
  NodeId r = nodeNamed(g, "r");
  Graph s = simplifiedAndChecked(g);
  EXPECT_EQ(liveOps(s), (std::vector<OpKind>{OpKind::Reshape, OpKind::Relu}));
  EXPECT_EQ(s.node(r).inputs[0], x);
  // Golden: the one Reshape reads x with a constant shape of its own output's dims.
  std::string text = printGraph(s);
  EXPECT_NE(text.find("Reshape 'r'(%x, %r/layout_simplify_shape_"), std::string::npos) << text;
  EXPECT_NE(text.find("-> %r: f32[6x4]"), std::string::npos) << text;
  EXPECT_EQ(text.find("Flatten"), std::string::npos) << text;
  EXPECT_EQ(text.find("Unsqueeze"), std::string::npos) << text;
}

TEST(LayoutSimplify, ReshapeBackToTheInputShapeDisappears) {
  Graph g = graphFromText(R"(graph "back"
    input %x: f32[2x6]
    const %s1: i64[2] = [3, 4]
    const %s2: i64[2] = [2, 6]
    %a: f32[3x4] = Reshape "a"(%x, %s1)
    %b: f32[2x6] = Reshape "b"(%a, %s2)
    %y: f32[2x6] = Relu "relu"(%b)
    output %y)");
  ValueId x = g.inputs[0];
  NodeId relu = nodeNamed(g, "relu");
  Graph s = simplifiedAndChecked(g);
  EXPECT_EQ(liveOps(s), (std::vector<OpKind>{OpKind::Relu}));
  EXPECT_EQ(s.node(relu).inputs[0], x);
}

TEST(LayoutSimplify, TransposePairComposesAndIdentityDisappears) {
  // t3 undoes t1.
  Graph g = graphFromText(R"(graph "pairs"
    input %x: f32[2x3x4]
    %t1: f32[3x4x2] = Transpose "t1"(%x) {perm=[1, 2, 0]}
    %t2: f32[4x3x2] = Transpose "t2"(%t1) {perm=[1, 0, 2]}
    %t3: f32[2x3x4] = Transpose "t3"(%t1) {perm=[2, 0, 1]}
    %y: f32[2x3x4] = Relu "relu"(%t3)
    output %t2, %y)");
  ValueId x = g.inputs[0];
  NodeId t1 = nodeNamed(g, "t1"), t2 = nodeNamed(g, "t2"), relu = nodeNamed(g, "relu");
  Graph s = simplifiedAndChecked(g);
  // t2 = one Transpose of x with perm r[i] = p1[p2[i]] = {2, 1, 0}; t3 is the identity and goes;
  // t1 has no use left.
  EXPECT_EQ(liveOps(s), (std::vector<OpKind>{OpKind::Transpose, OpKind::Relu}));
  EXPECT_EQ(s.node(t2).inputs[0], x);
  EXPECT_EQ(s.node(t2).attrInts("perm"), (std::vector<int64_t>{2, 1, 0}));
  EXPECT_EQ(s.node(relu).inputs[0], x);
  EXPECT_TRUE(s.node(t1).dead);
}

TEST(LayoutSimplify, UnitDimTransposeBecomesReshapeAndJoinsTheChain) {
  // vit's self_attention/Transpose: [197,1,768] -> [1,197,768] moves only the unit dim.
  // t2 moves bytes: it stays.
  Graph g = graphFromText(R"(graph "unit"
    input %x: f32[5x1x8]
    const %s: i64[3] = [5, 2, 4]
    %t: f32[1x5x8] = Transpose "t"(%x) {perm=[1, 0, 2]}
    %r: f32[5x2x4] = Reshape "r"(%t, %s)
    %t2: f32[2x5x4] = Transpose "t2"(%r) {perm=[1, 0, 2]}
    output %t2)");
  ValueId x = g.inputs[0];
  NodeId t = nodeNamed(g, "t"), r = nodeNamed(g, "r"), t2 = nodeNamed(g, "t2");
  Graph s = simplifiedAndChecked(g);
  EXPECT_EQ(liveOps(s), (std::vector<OpKind>{OpKind::Reshape, OpKind::Transpose}));
  EXPECT_EQ(s.node(r).inputs[0], x);
  EXPECT_TRUE(s.node(t).dead);
  EXPECT_EQ(s.node(t2).kind, OpKind::Transpose);
}

TEST(LayoutSimplify, KeepsIntermediatesWithOtherUsesAndGraphOutputs) {
  // "other" is a second use of a's output; c is a graph output.
  Graph g = graphFromText(R"(graph "keep"
    input %x: f32[2x3x4]
    const %s1: i64[2] = [6, 4]
    const %s2: i64[1] = [24]
    const %s3: i64[2] = [4, 6]
    %a: f32[6x4] = Reshape "a"(%x, %s1)
    %other: f32[6x4] = Relu "other"(%a)
    %b: f32[24] = Reshape "b"(%a, %s2)
    %c: f32[4x6] = Reshape "c"(%b, %s3)
    %t: f32[6x4] = Transpose "t"(%c) {perm=[1, 0]}
    %back: f32[4x6] = Transpose "back"(%t) {perm=[1, 0]}
    output %other, %c, %back)");
  ValueId x = g.inputs[0];
  NodeId a = nodeNamed(g, "a"), b = nodeNamed(g, "b"), c = nodeNamed(g, "c");
  NodeId t = nodeNamed(g, "t"), back = nodeNamed(g, "back");
  Graph s = simplifiedAndChecked(g);
  EXPECT_FALSE(s.node(a).dead) << "Relu still reads it";
  EXPECT_EQ(s.node(c).inputs[0], x) << "the chain a -> b -> c reads x directly";
  EXPECT_TRUE(s.node(b).dead);
  // back(t(c)) is the identity but a graph output: rewritten in place into a Reshape, which
  // then joins the reshape chain (c is a Reshape of x).
  EXPECT_FALSE(s.node(back).dead);
  EXPECT_EQ(s.node(back).kind, OpKind::Reshape);
  EXPECT_EQ(s.node(back).inputs[0], x);
  EXPECT_TRUE(s.node(t).dead);
}

} // namespace
