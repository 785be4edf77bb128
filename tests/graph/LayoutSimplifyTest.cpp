// LayoutSimplifyTest.cpp - algebraic simplification of layout ops (graph/LayoutSimplify.cpp):
// reshape chains collapse, Transpose pairs compose, identity and unit-dim transposes go, graph
// outputs and multi-consumer intermediates are kept. Every case checks the simplified graph's
// reference outputs against the reference run of the graph before simplification.
#include "graph/Passes.h"
#include "graph/Printer.h"
#include "graph/Reference.h"
#include "graph/ShapeInference.h"

#include <gtest/gtest.h>

#include <random>

using namespace npuc;
using namespace npuc::graph;

namespace {

NodeId add(Graph &g, graph::OpKind op, const std::string &name, std::vector<ValueId> ins,
           std::map<std::string, AttrValue> attrs = {}) {
  ValueId out = g.addValue(name, {}, DType::F32);
  NodeId n = g.addNode(op, name, std::move(ins), {out});
  g.node(n).attrs = std::move(attrs);
  inferNodeShape(g, n);
  return n;
}

ValueId out(const Graph &g, NodeId n) {
  return g.node(n).outputs[0];
}

ValueId shapeConst(Graph &g, const std::string &name, std::vector<int64_t> s) {
  return g.addConstantI64(name, {static_cast<int64_t>(s.size())}, s);
}

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
  Graph g;
  ValueId x = g.addValue("x", {2, 3, 4}, DType::F32);
  g.inputs = {x};
  NodeId f = add(g, OpKind::Flatten, "f", {x}, {{"axis", int64_t{1}}}); // 2x12
  NodeId u =
      add(g, OpKind::Unsqueeze, "u", {out(g, f)}, {{"axes", std::vector<int64_t>{0}}}); // 1x2x12
  NodeId r = add(g, OpKind::Reshape, "r", {out(g, u), shapeConst(g, "s", {6, 4})});
  NodeId relu = add(g, OpKind::Relu, "relu", {out(g, r)});
  g.outputs = {out(g, relu)};
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
  Graph g;
  ValueId x = g.addValue("x", {2, 6}, DType::F32);
  g.inputs = {x};
  NodeId a = add(g, OpKind::Reshape, "a", {x, shapeConst(g, "s1", {3, 4})});
  NodeId b = add(g, OpKind::Reshape, "b", {out(g, a), shapeConst(g, "s2", {2, 6})});
  NodeId relu = add(g, OpKind::Relu, "relu", {out(g, b)});
  g.outputs = {out(g, relu)};
  Graph s = simplifiedAndChecked(g);
  EXPECT_EQ(liveOps(s), (std::vector<OpKind>{OpKind::Relu}));
  EXPECT_EQ(s.node(relu).inputs[0], x);
}

TEST(LayoutSimplify, TransposePairComposesAndIdentityDisappears) {
  Graph g;
  ValueId x = g.addValue("x", {2, 3, 4}, DType::F32);
  g.inputs = {x};
  NodeId t1 =
      add(g, OpKind::Transpose, "t1", {x}, {{"perm", std::vector<int64_t>{1, 2, 0}}}); // 3x4x2
  NodeId t2 = add(g, OpKind::Transpose, "t2", {out(g, t1)},
                  {{"perm", std::vector<int64_t>{1, 0, 2}}}); // 4x3x2
  NodeId t3 = add(g, OpKind::Transpose, "t3", {out(g, t1)},
                  {{"perm", std::vector<int64_t>{2, 0, 1}}}); // 2x3x4: t1 undone
  NodeId relu = add(g, OpKind::Relu, "relu", {out(g, t3)});
  g.outputs = {out(g, t2), out(g, relu)};
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
  Graph g;
  ValueId x = g.addValue("x", {5, 1, 8}, DType::F32);
  g.inputs = {x};
  NodeId t =
      add(g, OpKind::Transpose, "t", {x}, {{"perm", std::vector<int64_t>{1, 0, 2}}}); // 1x5x8
  NodeId r = add(g, OpKind::Reshape, "r", {out(g, t), shapeConst(g, "s", {5, 2, 4})});
  NodeId t2 = add(g, OpKind::Transpose, "t2", {out(g, r)},
                  {{"perm", std::vector<int64_t>{1, 0, 2}}}); // moves bytes: stays
  g.outputs = {out(g, t2)};
  Graph s = simplifiedAndChecked(g);
  EXPECT_EQ(liveOps(s), (std::vector<OpKind>{OpKind::Reshape, OpKind::Transpose}));
  EXPECT_EQ(s.node(r).inputs[0], x);
  EXPECT_TRUE(s.node(t).dead);
  EXPECT_EQ(s.node(t2).kind, OpKind::Transpose);
}

TEST(LayoutSimplify, KeepsIntermediatesWithOtherUsesAndGraphOutputs) {
  Graph g;
  ValueId x = g.addValue("x", {2, 3, 4}, DType::F32);
  g.inputs = {x};
  NodeId a = add(g, OpKind::Reshape, "a", {x, shapeConst(g, "s1", {6, 4})});
  NodeId other = add(g, OpKind::Relu, "other", {out(g, a)}); // a second use of a's output
  NodeId b = add(g, OpKind::Reshape, "b", {out(g, a), shapeConst(g, "s2", {24})});
  NodeId c = add(g, OpKind::Reshape, "c", {out(g, b), shapeConst(g, "s3", {4, 6})}); // graph output
  NodeId t = add(g, OpKind::Transpose, "t", {out(g, c)}, {{"perm", std::vector<int64_t>{1, 0}}});
  NodeId back =
      add(g, OpKind::Transpose, "back", {out(g, t)}, {{"perm", std::vector<int64_t>{1, 0}}});
  g.outputs = {out(g, other), out(g, c), out(g, back)};
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
