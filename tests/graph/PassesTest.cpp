// PassesTest.cpp - graph passes on small hand-built graphs: simplify (no-op removal, constant
// folding), BN folding (numerics against the unfolded graph's reference run), MatMul operand
// scales moved onto the product, fusion grouping and placement smoothing.
#include "graph/Passes.h"
#include "graph/Reference.h"
#include "graph/ShapeInference.h"
#include "graph/SinkScale.h"
#include "tests/common/GraphText.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace npuc;
using namespace npuc::graph;
using namespace npuc::test;

namespace {

// conv(3->4, 3x3, pad 1) -> BN -> relu, plus a second BN after a conv whose output has two
// consumers (cannot fold into the conv) and a BN directly on the graph input. Variances are
// drawn from [0.5, 1.5).
Graph bnGraph() {
  return graphFromText(R"(graph "bn"
    input %x: f32[1x3x6x6]
    const %w: f32[4x3x3x3] = random(1)
    const %b: f32[4] = random(2)
    const %bn1.scale: f32[4] = random(10)
    const %bn1.bias: f32[4] = random(11)
    const %bn1.mean: f32[4] = random(12)
    const %bn1.var: f32[4] = random(13, 0.5, 1.5)
    const %w2: f32[4x4x3x3] = random(3)
    const %bn2.scale: f32[4] = random(20)
    const %bn2.bias: f32[4] = random(21)
    const %bn2.mean: f32[4] = random(22)
    const %bn2.var: f32[4] = random(23, 0.5, 1.5)
    const %bn3.scale: f32[3] = random(30)
    const %bn3.bias: f32[3] = random(31)
    const %bn3.mean: f32[3] = random(32)
    const %bn3.var: f32[3] = random(33, 0.5, 1.5)
    %c: f32[1x4x6x6] = Conv "conv"(%x, %w, %b) {kernel_shape=[3, 3], pads=[1, 1, 1, 1]}
    %n1: f32[1x4x6x6] = BatchNormalization "bn1"(%c, %bn1.scale, %bn1.bias, %bn1.mean, %bn1.var) {epsilon=0.001}
    %r: f32[1x4x6x6] = Relu "relu"(%n1)
    %c2: f32[1x4x6x6] = Conv "conv2"(%r, %w2) {kernel_shape=[3, 3], pads=[1, 1, 1, 1]}
    %n2: f32[1x4x6x6] = BatchNormalization "bn2"(%c2, %bn2.scale, %bn2.bias, %bn2.mean, %bn2.var)
    %o: f32[1x4x6x6] = Sigmoid "other"(%c2)
    %sum: f32[1x4x6x6] = Add "sum"(%n2, %o)
    %n3: f32[1x3x6x6] = BatchNormalization "bn3"(%x, %bn3.scale, %bn3.bias, %bn3.mean, %bn3.var)
    output %sum, %n3)");
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
  NodeId k = addNode(g, "Add", "k", {c1, c2}); // constant: folds to [[11,22],[13,24]]
  NodeId id = addNode(g, "Identity", "id", {x});
  NodeId m = addNode(g, "Mul", "m", {out(g, id), out(g, k)});
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

// Graph outputs whose producers the passes remove (difftest finding F3): a BatchNormalization
// folded into its Conv, a zero Pad, an Identity of the graph input, and two Identities of one
// value that is an output too. Each output keeps the name it was declared under, and its value.
TEST(Passes, RemovedProducersKeepTheirOutputsNames) {
  Graph g = graphFromText(R"(graph "outs"
    input %x: f32[1x2x4x4]
    const %w: f32[3x2x3x3] = random(1)
    const %s: f32[3] = random(2)
    const %t: f32[3] = random(3)
    const %m: f32[3] = random(4)
    const %v: f32[3] = random(5, 0.5, 1.5)
    %c: f32[1x3x4x4] = Conv "conv"(%x, %w) {kernel_shape=[3, 3], pads=[1, 1, 1, 1]}
    %bn: f32[1x3x4x4] = BatchNormalization "bn"(%c, %s, %t, %m, %v)
    %r: f32[1x2x4x4] = Relu "relu"(%x)
    %p: f32[1x2x4x4] = Pad "pad0"(%r) {pads=[0, 0, 0, 0, 0, 0, 0, 0]}
    %id: f32[1x2x4x4] = Identity "id"(%x)
    %th: f32[1x2x4x4] = Tanh "tanh"(%x)
    %t1: f32[1x2x4x4] = Identity "id1"(%th)
    %t2: f32[1x2x4x4] = Identity "id2"(%th)
    output %bn, %p, %id, %t1, %t2, %th)");
  HostTensor x({1, 2, 4, 4}, randomData(32, 7));
  auto before = runReference(g, {{g.inputs[0], x}});
  std::vector<ValueId> declared = g.outputs;
  simplify(g);
  eliminateCommonSubexpressions(g);
  foldBatchNorm(g);
  g.removeDeadNodes();
  int live = 0;
  for (NodeId n : g.topoOrder()) {
    EXPECT_NE(g.node(n).kind, OpKind::BatchNormalization);
    EXPECT_NE(g.node(n).kind, OpKind::Identity);
    EXPECT_NE(g.node(n).kind, OpKind::Pad);
    ++live;
  }
  EXPECT_EQ(live, 3) << "conv, relu, tanh";
  const std::vector<std::string> names = {"bn", "p", "id", "t1", "t2", "th"};
  ASSERT_EQ(g.outputs.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i)
    EXPECT_EQ(g.outputName(i), names[i]) << i;
  EXPECT_EQ(g.outputs[2], g.inputs[0]) << "the Identity's output is the graph input itself";
  EXPECT_EQ(g.outputs[3], g.outputs[5]);
  EXPECT_EQ(g.outputs[4], g.outputs[5]);
  auto after = runReference(g, {{g.inputs[0], x}});
  for (size_t i = 0; i < names.size(); ++i) {
    const HostTensor &want = before.at(declared[i]), &got = after.at(g.outputs[i]);
    ASSERT_EQ(want.shape, got.shape) << names[i];
    for (int64_t k = 0; k < want.size(); ++k)
      EXPECT_NEAR(got.data[k], want.data[k], 1e-5 * std::max(1.0f, std::fabs(want.data[k])))
          << names[i] << " element " << k;
  }
}

// conv -> add(bias const) -> relu (r1 used twice) ; conv2(r1) -> add(residual r1) -> relu ->
// reshape -> softmax.
struct FusionGraph {
  Graph g;
  NodeId conv1, addB, relu1, conv2, addRes, relu2, reshape, softmax;
};

FusionGraph fusionGraph() {
  FusionGraph f;
  f.g = graphFromText(R"(graph "fusion"
    input %x: f32[1x4x5x5]
    const %w1: f32[4x4x3x3] = random(5)
    const %bias: f32[4x1x1] = random(6)
    const %w2: f32[4x4x3x3] = random(7)
    const %spec: i64[2] = [1, -1]
    %c1: f32[1x4x5x5] = Conv "conv1"(%x, %w1) {kernel_shape=[3, 3], pads=[1, 1, 1, 1]}
    %b1: f32[1x4x5x5] = Add "addB"(%c1, %bias)
    %r1: f32[1x4x5x5] = Relu "relu1"(%b1)
    %c2: f32[1x4x5x5] = Conv "conv2"(%r1, %w2) {kernel_shape=[3, 3], pads=[1, 1, 1, 1]}
    %a2: f32[1x4x5x5] = Add "addRes"(%c2, %r1)
    %r2: f32[1x4x5x5] = Relu "relu2"(%a2)
    %flat: f32[1x100] = Reshape "reshape"(%r2, %spec)
    %sm: f32[1x100] = Softmax "softmax"(%flat) {axis=1}
    output %sm)");
  const Graph &g = f.g;
  f.conv1 = nodeNamed(g, "conv1");
  f.addB = nodeNamed(g, "addB");
  f.relu1 = nodeNamed(g, "relu1");
  f.conv2 = nodeNamed(g, "conv2");
  f.addRes = nodeNamed(g, "addRes");
  f.relu2 = nodeNamed(g, "relu2");
  f.reshape = nodeNamed(g, "reshape");
  f.softmax = nodeNamed(g, "softmax");
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
  NodeId gap = addNode(g, "GlobalAveragePool", "gap", {x});
  NodeId sig = addNode(g, "Sigmoid", "sig", {out(g, gap)});
  NodeId mul = addNode(g, "Mul", "mul", {x, out(g, sig)}); // [1,4,3,3] x [1,4,1,1]: ends chain
  NodeId relu = addNode(g, "Relu", "relu", {out(g, mul)});
  NodeId tanh = addNode(g, "Tanh", "tanh", {out(g, relu)});
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
  NodeId qs = addNode(g, "Div", "qs", {q, g.addConstant("c", {}, {4.0f})});
  NodeId ks = addNode(g, "Mul", "ks", {g.addConstant("c2", {1}, {0.5f}), k});
  NodeId mm = addNode(g, "MatMul", "mm", {out(g, qs), out(g, ks)});
  // Kept: the scaled value is also a graph output; and a per-column (non-scalar) constant.
  NodeId q2 = addNode(g, "Mul", "q2", {q, g.addConstant("c3", {}, {3.0f})});
  NodeId mm2 = addNode(g, "MatMul", "mm2", {out(g, q2), r});
  NodeId rs = addNode(g, "Mul", "rs", {r, g.addConstant("c4", {3}, {1.f, 2.f, 3.f})});
  NodeId mm3 = addNode(g, "MatMul", "mm3", {q, out(g, rs)});
  // Kept: one scaled value read by both operands (sinking it once would scale the product by c,
  // not c squared).
  ValueId sq = g.addValue("sq", {2, 4, 4}, DType::F32);
  g.inputs.push_back(sq);
  NodeId ss = addNode(g, "Mul", "ss", {sq, g.addConstant("c5", {}, {2.0f})});
  NodeId mm4 = addNode(g, "MatMul", "mm4", {out(g, ss), out(g, ss)});
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
