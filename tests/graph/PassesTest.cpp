// PassesTest.cpp - graph passes on small hand-built graphs: simplify (no-op removal, constant
// folding), BN folding (numerics against the unfolded graph's reference run), MatMul operand
// scales moved onto the product, fusion grouping and placement smoothing.
#include "graph/Passes.h"
#include "graph/Reference.h"
#include "graph/ShapeInference.h"
#include "graph/SinkScale.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace npuc;
using namespace npuc::graph;

namespace {

std::vector<float> randomData(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float &f : v)
    f = d(rng);
  return v;
}

std::vector<float> positive(int64_t n, unsigned seed) {
  std::vector<float> v = randomData(n, seed);
  for (float &f : v)
    f = 0.5f + std::fabs(f);
  return v;
}

NodeId add(Graph &g, graph::OpKind op, const std::string &name, std::vector<ValueId> ins,
           std::map<std::string, AttrValue> attrs = {}) {
  ValueId out = g.addValue(name + ".out", {}, DType::F32);
  NodeId n = g.addNode(op, name, std::move(ins), {out});
  g.node(n).attrs = std::move(attrs);
  inferNodeShape(g, n);
  return n;
}

ValueId out(const Graph &g, NodeId n) {
  return g.node(n).outputs[0];
}

// conv(3->4, 3x3, pad 1) -> BN -> relu, plus a second BN after a conv whose output has two
// consumers (cannot fold into the conv) and a BN directly on the graph input.
Graph bnGraph() {
  Graph g;
  ValueId x = g.addValue("x", {1, 3, 6, 6}, DType::F32);
  g.inputs = {x};
  auto bnParams = [&](const std::string &p, int64_t c, unsigned seed) {
    return std::vector<ValueId>{g.addConstant(p + ".scale", {c}, randomData(c, seed)),
                                g.addConstant(p + ".bias", {c}, randomData(c, seed + 1)),
                                g.addConstant(p + ".mean", {c}, randomData(c, seed + 2)),
                                g.addConstant(p + ".var", {c}, positive(c, seed + 3))};
  };
  std::map<std::string, AttrValue> convAttrs{{"pads", std::vector<int64_t>{1, 1, 1, 1}},
                                             {"kernel_shape", std::vector<int64_t>{3, 3}}};
  ValueId w = g.addConstant("w", {4, 3, 3, 3}, randomData(108, 1));
  ValueId b = g.addConstant("b", {4}, randomData(4, 2));
  NodeId conv = add(g, graph::OpKind::Conv, "conv", {x, w, b}, convAttrs);
  auto p1 = bnParams("bn1", 4, 10);
  NodeId bn1 = add(g, graph::OpKind::BatchNormalization, "bn1",
                   {out(g, conv), p1[0], p1[1], p1[2], p1[3]}, {{"epsilon", 1e-3}});
  NodeId relu = add(g, graph::OpKind::Relu, "relu", {out(g, bn1)});
  ValueId w2 = g.addConstant("w2", {4, 4, 3, 3}, randomData(144, 3));
  NodeId conv2 = add(g, graph::OpKind::Conv, "conv2", {out(g, relu), w2}, convAttrs);
  auto p2 = bnParams("bn2", 4, 20);
  NodeId bn2 =
      add(g, graph::OpKind::BatchNormalization, "bn2", {out(g, conv2), p2[0], p2[1], p2[2], p2[3]});
  NodeId other =
      add(g, graph::OpKind::Sigmoid, "other", {out(g, conv2)}); // second consumer of conv2
  NodeId sum = add(g, graph::OpKind::Add, "sum", {out(g, bn2), out(g, other)});
  auto p3 = bnParams("bn3", 3, 30);
  NodeId bn3 = add(g, graph::OpKind::BatchNormalization, "bn3", {x, p3[0], p3[1], p3[2], p3[3]});
  g.outputs = {out(g, sum), out(g, bn3)};
  return g;
}

TEST(Passes, FoldBatchNormPreservesNumerics) {
  Graph g = bnGraph();
  HostTensor x({1, 3, 6, 6}, randomData(108, 99));
  auto before = runReference(g, {{g.inputs[0], x}});
  foldBatchNorm(g);
  inferShapes(g);
  int bns = 0, muls = 0, adds = 0;
  for (NodeId n : g.topoOrder()) {
    bns += g.node(n).kind == graph::OpKind::BatchNormalization;
    muls += g.node(n).kind == graph::OpKind::Mul;
    adds += g.node(n).kind == graph::OpKind::Add;
  }
  EXPECT_EQ(bns, 0);
  EXPECT_EQ(muls, 2) << "bn2 (shared conv output) and bn3 (graph input) become Mul+Add";
  EXPECT_EQ(adds, 3);
  auto after = runReference(g, {{g.inputs[0], x}});
  ASSERT_EQ(before.size(), after.size());
  for (const auto &[v, t] : before) {
    const HostTensor &u = after.at(v);
    ASSERT_EQ(t.shape, u.shape);
    for (int64_t i = 0; i < t.size(); ++i)
      EXPECT_NEAR(t.data[i], u.data[i], 1e-5 * std::max(1.0f, std::fabs(t.data[i])));
  }
}

TEST(Passes, FoldBatchNormUsesChannelBroadcastShape) {
  Graph g = bnGraph();
  foldBatchNorm(g);
  for (NodeId n : g.topoOrder()) {
    if (g.node(n).kind == graph::OpKind::Mul) {
      EXPECT_EQ(g.value(g.node(n).inputs[1]).shape.size(), 3u); // [C,1,1]
    }
  }
}

TEST(Passes, SimplifyRemovesNoOpsAndFoldsConstants) {
  Graph g;
  ValueId x = g.addValue("x", {2, 2}, DType::F32);
  g.inputs = {x};
  ValueId c1 = g.addConstant("c1", {2, 2}, {1, 2, 3, 4});
  ValueId c2 = g.addConstant("c2", {2}, {10, 20});
  NodeId k = add(g, graph::OpKind::Add, "k", {c1, c2}); // constant: folds to [[11,22],[13,24]]
  NodeId id = add(g, graph::OpKind::Identity, "id", {x});
  NodeId m = add(g, graph::OpKind::Mul, "m", {out(g, id), out(g, k)});
  g.outputs = {out(g, m)};
  simplify(g);
  std::vector<NodeId> order = g.topoOrder();
  ASSERT_EQ(order.size(), 1u);
  EXPECT_EQ(order[0], m);
  EXPECT_EQ(g.node(m).inputs[0], x);
  const Value &folded = g.value(g.node(m).inputs[1]);
  ASSERT_TRUE(folded.f32);
  EXPECT_EQ(*folded.f32, (std::vector<float>{11, 22, 13, 24}));
}

// conv -> add(bias const) -> relu (r1 used twice) ; conv2(r1) -> add(residual r1) -> relu ->
// reshape -> softmax.
struct FusionGraph {
  Graph g;
  NodeId conv1, addB, relu1, conv2, addRes, relu2, reshape, softmax;
};

FusionGraph fusionGraph() {
  FusionGraph f;
  Graph &g = f.g;
  ValueId x = g.addValue("x", {1, 4, 5, 5}, DType::F32);
  g.inputs = {x};
  std::map<std::string, AttrValue> ca{{"pads", std::vector<int64_t>{1, 1, 1, 1}},
                                      {"kernel_shape", std::vector<int64_t>{3, 3}}};
  f.conv1 = add(g, graph::OpKind::Conv, "conv1",
                {x, g.addConstant("w1", {4, 4, 3, 3}, randomData(144, 5))}, ca);
  f.addB = add(g, graph::OpKind::Add, "addB",
               {out(g, f.conv1), g.addConstant("bias", {4, 1, 1}, randomData(4, 6))});
  f.relu1 = add(g, graph::OpKind::Relu, "relu1", {out(g, f.addB)});
  f.conv2 = add(g, graph::OpKind::Conv, "conv2",
                {out(g, f.relu1), g.addConstant("w2", {4, 4, 3, 3}, randomData(144, 7))}, ca);
  f.addRes = add(g, graph::OpKind::Add, "addRes", {out(g, f.conv2), out(g, f.relu1)});
  f.relu2 = add(g, graph::OpKind::Relu, "relu2", {out(g, f.addRes)});
  f.reshape = add(g, graph::OpKind::Reshape, "reshape",
                  {out(g, f.relu2), g.addConstantI64("spec", {2}, {1, -1})});
  f.softmax =
      add(g, graph::OpKind::Softmax, "softmax", {out(g, f.reshape)}, {{"axis", int64_t{1}}});
  g.outputs = {out(g, f.softmax)};
  return f;
}

TEST(Passes, FuseOpsGroupsAnchorChains) {
  FusionGraph f = fusionGraph();
  Graph &g = f.g;
  fuseOps(g);
  ASSERT_EQ(g.groups.size(), 4u);
  for (size_t i = 0; i < g.groups.size(); ++i)
    EXPECT_EQ(g.groups[i].id, static_cast<int>(i));
  EXPECT_EQ(g.groups[0].nodes, (std::vector<NodeId>{f.conv1, f.addB, f.relu1}));
  EXPECT_EQ(g.groups[0].anchor, f.conv1);
  EXPECT_EQ(g.groups[0].inputs, (std::vector<ValueId>{g.inputs[0]}));
  EXPECT_EQ(g.groups[0].outputs, (std::vector<ValueId>{out(g, f.relu1)}));
  // The residual (same shape, produced outside) is a link; it is a group input.
  EXPECT_EQ(g.groups[1].nodes, (std::vector<NodeId>{f.conv2, f.addRes, f.relu2}));
  EXPECT_EQ(g.groups[1].inputs, (std::vector<ValueId>{out(g, f.relu1)}));
  EXPECT_EQ(g.groups[2].nodes, (std::vector<NodeId>{f.reshape}));
  EXPECT_EQ(g.groups[3].nodes, (std::vector<NodeId>{f.softmax}));
  EXPECT_EQ(g.groups[3].outputs, g.outputs);
}

TEST(Passes, FuseOpsStopsAtShapeMismatchAndGraphOutputs) {
  Graph g;
  ValueId x = g.addValue("x", {1, 4, 3, 3}, DType::F32);
  g.inputs = {x};
  NodeId gap = add(g, graph::OpKind::GlobalAveragePool, "gap", {x});
  NodeId sig = add(g, graph::OpKind::Sigmoid, "sig", {out(g, gap)});
  NodeId mul =
      add(g, graph::OpKind::Mul, "mul", {x, out(g, sig)}); // [1,4,3,3] x [1,4,1,1]: ends chain
  NodeId relu = add(g, graph::OpKind::Relu, "relu", {out(g, mul)});
  NodeId tanh = add(g, graph::OpKind::Tanh, "tanh", {out(g, relu)});
  g.outputs = {out(g, relu), out(g, tanh)}; // relu's output is a graph output: chain ends
  fuseOps(g);
  ASSERT_EQ(g.groups.size(), 3u);
  EXPECT_EQ(g.groups[0].nodes, (std::vector<NodeId>{gap, sig}));
  EXPECT_EQ(g.groups[1].nodes, (std::vector<NodeId>{mul, relu}));
  EXPECT_EQ(g.groups[1].inputs, (std::vector<ValueId>{x, out(g, sig)}));
  EXPECT_EQ(g.groups[1].outputs, (std::vector<ValueId>{out(g, relu)}));
  EXPECT_EQ(g.groups[2].nodes, (std::vector<NodeId>{tanh}));
}

TEST(Passes, PlaceSmoothsViewGroups) {
  FusionGraph f = fusionGraph();
  Graph &g = f.g;
  fuseOps(g);
  auto rejectSoftmax = [](const Graph &gr, const FusedGroup &grp) -> std::string {
    return gr.node(grp.anchor).kind == graph::OpKind::Softmax ? "no exp" : "";
  };
  place(g, rejectSoftmax);
  EXPECT_EQ(g.groups[0].placement, Placement::Npu);
  EXPECT_EQ(g.groups[1].placement, Placement::Npu);
  EXPECT_EQ(g.groups[2].placement, Placement::Cpu) << "reshape feeding a CPU group";
  EXPECT_FALSE(g.groups[2].cpuReason.empty());
  EXPECT_EQ(g.groups[3].placement, Placement::Cpu);
  EXPECT_EQ(g.groups[3].cpuReason, "no exp");
  place(g, [](const Graph &, const FusedGroup &) { return std::string(); });
  for (const FusedGroup &grp : g.groups)
    EXPECT_EQ(grp.placement, Placement::Npu) << grp.name;
}

} // namespace

// Q / c feeding Q x K (c scalar) and K * c' on the right: both scales move onto the product and
// the result matches the original graph's reference run (fp32: only the rounding of the scaled
// operand moves, a few ulps of sum|q k| <= K = 7 for |q|, |k| <= 1, so 1e-5 absolute bounds it).
// A scale whose output has another consumer, or whose constant is not a scalar, stays.
TEST(Passes, SinkScalesPastMatMulPreservesNumerics) {
  Graph g;
  ValueId q = g.addValue("q", {2, 5, 7}, DType::F32);
  ValueId k = g.addValue("k", {2, 7, 3}, DType::F32);
  ValueId r = g.addValue("r", {2, 7, 3}, DType::F32);
  g.inputs = {q, k, r};
  NodeId qs = add(g, graph::OpKind::Div, "qs", {q, g.addConstant("c", {}, {4.0f})});
  NodeId ks = add(g, graph::OpKind::Mul, "ks", {g.addConstant("c2", {1}, {0.5f}), k});
  NodeId mm = add(g, graph::OpKind::MatMul, "mm", {out(g, qs), out(g, ks)});
  // Kept: the scaled value is also a graph output; and a per-column (non-scalar) constant.
  NodeId q2 = add(g, graph::OpKind::Mul, "q2", {q, g.addConstant("c3", {}, {3.0f})});
  NodeId mm2 = add(g, graph::OpKind::MatMul, "mm2", {out(g, q2), r});
  NodeId rs = add(g, graph::OpKind::Mul, "rs", {r, g.addConstant("c4", {3}, {1.f, 2.f, 3.f})});
  NodeId mm3 = add(g, graph::OpKind::MatMul, "mm3", {q, out(g, rs)});
  // Kept: one scaled value read by both operands (sinking it once would scale the product by c,
  // not c squared).
  ValueId sq = g.addValue("sq", {2, 4, 4}, DType::F32);
  g.inputs.push_back(sq);
  NodeId ss = add(g, graph::OpKind::Mul, "ss", {sq, g.addConstant("c5", {}, {2.0f})});
  NodeId mm4 = add(g, graph::OpKind::MatMul, "mm4", {out(g, ss), out(g, ss)});
  g.outputs = {out(g, mm), out(g, mm2), out(g, q2), out(g, mm3), out(g, mm4)};
  Graph before = g;
  EXPECT_EQ(sinkScalesPastMatMul(g), 2);
  EXPECT_EQ(g.node(mm).inputs[0], q);
  EXPECT_EQ(g.node(mm).inputs[1], k);
  EXPECT_EQ(g.node(mm2).inputs[0], out(g, q2));
  EXPECT_EQ(g.node(mm3).inputs[1], out(g, rs));
  EXPECT_EQ(g.node(mm4).inputs[0], out(g, ss));
  EXPECT_EQ(g.node(mm4).inputs[1], out(g, ss));
  const Node &last = g.node(g.value(out(before, mm)).producer);
  EXPECT_TRUE(last.kind == graph::OpKind::Div || last.kind == graph::OpKind::Mul) << last.kind;
  std::map<ValueId, HostTensor> ins;
  for (ValueId v : {q, k, r, sq})
    ins[v] = HostTensor(g.value(v).shape,
                        randomData(numElements(g.value(v).shape), static_cast<unsigned>(v) + 40));
  auto want = runReference(before, ins), got = runReference(g, ins);
  for (ValueId o : before.outputs)
    for (size_t i = 0; i < want.at(o).data.size(); ++i)
      EXPECT_NEAR(got.at(o).data[i], want.at(o).data[i], 1e-5) << g.value(o).name << " " << i;
}
