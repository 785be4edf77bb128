// FusionTest.cpp - the graph optimisation passes added for real models: common-subexpression
// elimination, post-dominator fusion by operator class, cost-aware placement, group splitting
// and the L1-residency analysis. Expected groups and costs are derived by hand in the comments;
// rewrites are checked against the reference executor (before == after), and groupings by
// running the groups one after another in their stored order.
#include "graph/Passes.h"
#include "graph/Reference.h"
#include "graph/ShapeInference.h"
#include "tests/common/GraphText.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>
#include <set>

using namespace npuc;
using namespace npuc::graph;
using namespace npuc::test;

namespace {

std::map<ValueId, HostTensor> randomInputs(const Graph &g, unsigned seed) {
  std::map<ValueId, HostTensor> in;
  for (ValueId v : g.inputs) {
    const Shape &s = g.value(v).shape;
    in[v] = HostTensor(s, randomData(numElements(s), seed++));
  }
  return in;
}

void expectSame(const std::map<ValueId, HostTensor> &a, const std::map<ValueId, HostTensor> &b) {
  ASSERT_EQ(a.size(), b.size());
  for (const auto &[v, t] : a) {
    ASSERT_TRUE(b.count(v)) << "output value " << v;
    EXPECT_EQ(t.shape, b.at(v).shape);
    EXPECT_EQ(t.data, b.at(v).data) << "output value " << v;
  }
}

// Runs g.groups in their stored order, each group's nodes in its order, reading only values
// that earlier groups (or the graph inputs/constants) produced; returns the graph outputs.
std::map<ValueId, HostTensor> runGroups(const Graph &g, const std::map<ValueId, HostTensor> &in) {
  std::map<ValueId, HostTensor> vals = in;
  for (const FusedGroup &grp : g.groups) {
    for (ValueId v : grp.inputs)
      EXPECT_TRUE(vals.count(v)) << "group " << grp.id << " runs before its input " << v;
    for (NodeId id : grp.nodes) {
      const Node &n = g.node(id);
      std::vector<HostTensor> consts;
      consts.reserve(n.inputs.size());
      std::vector<const HostTensor *> ins;
      for (ValueId v : n.inputs) {
        if (v == kNoValue) {
          ins.push_back(nullptr);
        } else if (g.value(v).isConstant()) {
          consts.push_back(constantTensor(g.value(v)));
          ins.push_back(&consts.back());
        } else {
          if (!vals.count(v))
            return {};
          ins.push_back(&vals.at(v));
        }
      }
      std::vector<HostTensor> outs = evalNode(g, n, ins);
      for (size_t i = 0; i < outs.size(); ++i)
        vals[n.outputs[i]] = std::move(outs[i]);
    }
  }
  std::map<ValueId, HostTensor> res;
  for (ValueId v : g.outputs)
    res[v] = vals.at(v);
  return res;
}

std::vector<std::vector<NodeId>> groupNodes(const Graph &g) {
  std::vector<std::vector<NodeId>> r;
  for (const FusedGroup &grp : g.groups)
    r.push_back(grp.nodes);
  return r;
}

std::map<std::string, AttrValue> conv1x1() {
  return {{"kernel_shape", std::vector<int64_t>{1, 1}}};
}

// ---------------------------------------------------------------------------------------------
// Common-subexpression elimination

TEST(Cse, MergesDuplicatedBranches) {
  // Two copies of relu -> mul(by a constant) whose constants are separate values with equal
  // contents, joined by an add: the second branch is the first one again.
  Graph g;
  ValueId x = g.addValue("x", {1, 4, 3, 3}, DType::F32);
  g.inputs = {x};
  std::vector<float> scale = randomData(4, 1);
  ValueId c1 = g.addConstant("c1", {4, 1, 1}, scale);
  ValueId c2 = g.addConstant("c2", {4, 1, 1}, scale);
  NodeId ra = addNode(g, "Relu", "ra", {x});
  NodeId ma = addNode(g, "Mul", "ma", {out(g, ra), c1});
  NodeId rb = addNode(g, "Relu", "rb", {x});
  NodeId mb = addNode(g, "Mul", "mb", {c2, out(g, rb)}); // commutative: operands swapped
  NodeId sum = addNode(g, "Add", "sum", {out(g, ma), out(g, mb)});
  g.outputs = {out(g, sum)};
  auto in = randomInputs(g, 7);
  auto before = runReference(g, in);

  EXPECT_EQ(eliminateCommonSubexpressions(g), 3); // c2, rb, mb
  EXPECT_FALSE(g.node(ra).dead);
  EXPECT_FALSE(g.node(ma).dead);
  EXPECT_TRUE(g.node(rb).dead);
  EXPECT_TRUE(g.node(mb).dead);
  EXPECT_EQ(g.node(sum).inputs, (std::vector<ValueId>{out(g, ma), out(g, ma)}));
  EXPECT_EQ(g.node(ma).inputs[1], c1);
  expectSame(before, runReference(g, in));
  EXPECT_EQ(eliminateCommonSubexpressions(g), 0) << "a second run finds nothing";
}

TEST(Cse, KeepsOpsThatDiffer) {
  Graph g;
  ValueId x = g.addValue("x", {2, 5}, DType::F32);
  ValueId y = g.addValue("y", {2, 5}, DType::F32);
  g.inputs = {x, y};
  NodeId l1 = addNode(g, "LeakyRelu", "l1", {x}, {{"alpha", 0.1}});
  NodeId l2 = addNode(g, "LeakyRelu", "l2", {x}, {{"alpha", 0.2}}); // different attribute
  NodeId s1 = addNode(g, "Sub", "s1", {x, y});
  NodeId s2 = addNode(g, "Sub", "s2", {y, x}); // not commutative
  NodeId c1 = addNode(g, "Relu", "c1", {g.addConstant("k1", {2, 5}, randomData(10, 3))});
  NodeId c2 = addNode(g, "Relu", "c2", {g.addConstant("k2", {2, 5}, randomData(10, 4))});
  NodeId s3 = addNode(g, "Sub", "s3", {x, y}); // a duplicate, but a graph output: kept
  NodeId sum = addNode(g, "Sum", "sum",
                       {out(g, l1), out(g, l2), out(g, s1), out(g, s2), out(g, c1), out(g, c2)});
  g.outputs = {out(g, sum), out(g, s3)};
  auto in = randomInputs(g, 11);
  auto before = runReference(g, in);
  EXPECT_EQ(eliminateCommonSubexpressions(g), 0);
  for (NodeId n : {l1, l2, s1, s2, c1, c2, s3, sum})
    EXPECT_FALSE(g.node(n).dead) << g.node(n).name;
  expectSame(before, runReference(g, in));
}

// ---------------------------------------------------------------------------------------------
// Operator classes and post-dominators

TEST(Fusion, OperatorClasses) {
  Graph g;
  ValueId x = g.addValue("x", {1, 4, 3, 3}, DType::F32);
  g.inputs = {x};
  NodeId relu = addNode(g, "Relu", "relu", {x});
  NodeId same = addNode(g, "Add", "same", {x, out(g, relu)});
  NodeId bc = addNode(g, "Mul", "bc", {x, g.addConstant("c", {4, 1, 1}, randomData(4, 1))});
  NodeId tr = addNode(g, "Transpose", "tr", {x}, {{"perm", std::vector<int64_t>{0, 2, 3, 1}}});
  NodeId red = addNode(g, "ReduceMean", "red", {x},
                       {{"axes", std::vector<int64_t>{2, 3}}, {"keepdims", int64_t{1}}});
  NodeId conv = addNode(g, "Conv", "conv", {x, g.addConstant("w", {4, 4, 1, 1}, randomData(16, 2))},
                        conv1x1());
  NodeId sm = addNode(g, "Softmax", "sm", {x}, {{"axis", int64_t{1}}});
  EXPECT_EQ(opPattern(g, g.node(relu)), OpPattern::ElemWise);
  EXPECT_EQ(opPattern(g, g.node(same)), OpPattern::ElemWise);
  EXPECT_EQ(opPattern(g, g.node(bc)), OpPattern::Broadcast);
  EXPECT_EQ(opPattern(g, g.node(tr)), OpPattern::Injective);
  EXPECT_EQ(opPattern(g, g.node(red)), OpPattern::CommReduce);
  EXPECT_EQ(opPattern(g, g.node(conv)), OpPattern::OutEWiseFusable);
  EXPECT_EQ(opPattern(g, g.node(sm)), OpPattern::Opaque);
}

// conv -> relu -> {sigmoid, tanh} -> add -> output: a diamond below the relu.
struct Diamond {
  Graph g;
  NodeId conv, relu, sig, tanh, sum;
};

Diamond diamond() {
  Diamond d;
  Graph &g = d.g;
  ValueId x = g.addValue("x", {1, 4, 5, 5}, DType::F32);
  g.inputs = {x};
  d.conv = addNode(g, "Conv", "conv", {x, g.addConstant("w", {4, 4, 1, 1}, randomData(16, 3))},
                   conv1x1());
  d.relu = addNode(g, "Relu", "relu", {out(g, d.conv)});
  d.sig = addNode(g, "Sigmoid", "sig", {out(g, d.relu)});
  d.tanh = addNode(g, "Tanh", "tanh", {out(g, d.relu)});
  d.sum = addNode(g, "Add", "sum", {out(g, d.sig), out(g, d.tanh)});
  g.outputs = {out(g, d.sum)};
  return d;
}

TEST(Fusion, PostDominators) {
  Diamond d = diamond();
  std::vector<NodeId> ip = postDominators(d.g);
  EXPECT_EQ(ip[static_cast<size_t>(d.conv)], d.relu);
  EXPECT_EQ(ip[static_cast<size_t>(d.relu)], d.sum); // both branches meet at the add
  EXPECT_EQ(ip[static_cast<size_t>(d.sig)], d.sum);
  EXPECT_EQ(ip[static_cast<size_t>(d.tanh)], d.sum);
  EXPECT_EQ(ip[static_cast<size_t>(d.sum)], -1); // a graph output: only the exit follows
}

TEST(Fusion, DiamondFusesThroughItsPostDominator) {
  Diamond d = diamond();
  auto in = randomInputs(d.g, 5);
  auto want = runReference(d.g, in);
  fuseOps(d.g);
  // conv fuses into relu (elementwise edge); the conv group's ipdom is the add and every path
  // to it is elementwise, so the whole diamond is one group anchored at the conv.
  ASSERT_EQ(d.g.groups.size(), 1u);
  EXPECT_EQ(d.g.groups[0].nodes, (std::vector<NodeId>{d.conv, d.relu, d.sig, d.tanh, d.sum}));
  EXPECT_EQ(d.g.groups[0].anchor, d.conv);
  EXPECT_EQ(d.g.groups[0].outputs, d.g.outputs);
  expectSame(want, runGroups(d.g, in));
}

TEST(Fusion, FilterKeepsDeviceChains) {
  Diamond d = diamond();
  auto in = randomInputs(d.g, 6);
  auto want = runReference(d.g, in);
  // A device that runs any chain: the diamond is not one, so conv+relu stay a chain; sigmoid
  // fuses into the add (the add reads the sigmoid, tanh comes from outside: a chain); tanh
  // would break that chain, so it stays alone. The add's group needs tanh: tanh runs first.
  fuseOps(d.g, preserveRunnable([](const Graph &, const FusedGroup &) { return std::string(); }));
  EXPECT_EQ(groupNodes(d.g),
            (std::vector<std::vector<NodeId>>{{d.conv, d.relu}, {d.tanh}, {d.sig, d.sum}}));
  for (const FusedGroup &grp : d.g.groups)
    EXPECT_TRUE(isNodeChain(d.g, grp)) << grp.name;
  expectSame(want, runGroups(d.g, in));
}

TEST(Fusion, ChainValueReadOutsideTheGroupIsNoChain) {
  // relu -> tanh, and exp also reads relu's output: {relu, tanh} is no chain (relu's output
  // is not single-use), whichever way the reader outside is found; {tanh} alone is.
  Graph g;
  ValueId x = g.addValue("x", {4}, DType::F32);
  g.inputs = {x};
  ValueId a = out(g, addNode(g, "Relu", "relu", {x}));
  ValueId b = out(g, addNode(g, "Tanh", "tanh", {a}));
  ValueId e = out(g, addNode(g, "Exp", "exp", {a}));
  g.outputs = {b, e};
  FusedGroup grp;
  grp.nodes = {0, 1};
  computeGroupBoundary(g, grp);
  EXPECT_EQ(grp.outputs, (std::vector<ValueId>{a, b}));
  EXPECT_FALSE(isNodeChain(g, grp));
  // The same with use lists built once (what fusion does per candidate merge).
  FusedGroup same;
  same.nodes = {0, 1};
  computeGroupBoundary(g, same, g.useLists());
  EXPECT_EQ(same.inputs, grp.inputs);
  EXPECT_EQ(same.outputs, grp.outputs);
  // Without the outside reader the pair is a chain.
  g.node(2).dead = true;
  g.outputs = {b};
  computeGroupBoundary(g, grp);
  EXPECT_EQ(grp.outputs, (std::vector<ValueId>{b}));
  EXPECT_TRUE(isNodeChain(g, grp));
}

TEST(Fusion, ChainReadingAnEarlierChainValueAgainIsAChain) {
  // relu -> sigmoid -> mul(relu, sigmoid): x * f(x), what a device saves the value for. A node
  // that does not read the previous one (tanh of relu after the sigmoid) still breaks it.
  Graph g;
  ValueId x = g.addValue("x", {4}, DType::F32);
  g.inputs = {x};
  ValueId a = out(g, addNode(g, "Relu", "relu", {x}));
  ValueId s = out(g, addNode(g, "Sigmoid", "sig", {a}));
  ValueId m = out(g, addNode(g, "Mul", "mul", {a, s}));
  g.outputs = {m};
  FusedGroup grp;
  grp.nodes = {0, 1, 2};
  computeGroupBoundary(g, grp);
  EXPECT_EQ(grp.outputs, (std::vector<ValueId>{m}));
  EXPECT_TRUE(isNodeChain(g, grp));
  ValueId t = out(g, addNode(g, "Tanh", "tanh", {a}));
  g.node(2).inputs = {t, s};
  FusedGroup broken;
  broken.nodes = {0, 1, 3, 2};
  computeGroupBoundary(g, broken);
  EXPECT_FALSE(isNodeChain(g, broken));
}

TEST(Fusion, MultiConsumerFusesOneConvIntoTheAdd) {
  // relu -> {conv1, conv2} -> add. relu's paths go through convs: it stays alone. conv1 fuses
  // into the add (elementwise edge); conv2's post-dominator is then a group holding a conv,
  // which is not at most broadcast, so conv2 stays alone and runs before the add's group.
  Graph g;
  ValueId x = g.addValue("x", {1, 4, 3, 3}, DType::F32);
  g.inputs = {x};
  NodeId relu = addNode(g, "Relu", "relu", {x});
  NodeId c1 =
      addNode(g, "Conv", "c1", {out(g, relu), g.addConstant("w1", {4, 4, 1, 1}, randomData(16, 1))},
              conv1x1());
  NodeId c2 =
      addNode(g, "Conv", "c2", {out(g, relu), g.addConstant("w2", {4, 4, 1, 1}, randomData(16, 2))},
              conv1x1());
  NodeId sum = addNode(g, "Add", "sum", {out(g, c1), out(g, c2)});
  g.outputs = {out(g, sum)};
  auto in = randomInputs(g, 9);
  auto want = runReference(g, in);
  fuseOps(g);
  EXPECT_EQ(groupNodes(g), (std::vector<std::vector<NodeId>>{{relu}, {c2}, {c1, sum}}));
  EXPECT_EQ(g.groups[2].anchor, c1);
  EXPECT_EQ(g.groups[2].inputs, (std::vector<ValueId>{out(g, relu), out(g, c2)}));
  expectSame(want, runGroups(g, in));
}

TEST(Fusion, ElementwiseFusesIntoReductionButNotAfterIt) {
  // relu -> ReduceMean -> mul(const): the relu joins the reduction (anchor); a reduction does
  // not fuse into its consumer.
  Graph g;
  ValueId x = g.addValue("x", {1, 4, 3, 3}, DType::F32);
  g.inputs = {x};
  NodeId relu = addNode(g, "Relu", "relu", {x});
  NodeId red = addNode(g, "ReduceMean", "red", {out(g, relu)},
                       {{"axes", std::vector<int64_t>{2, 3}}, {"keepdims", int64_t{1}}});
  NodeId mul = addNode(g, "Mul", "mul", {out(g, red), g.addConstant("k", {1}, {3.0f})});
  g.outputs = {out(g, mul)};
  auto in = randomInputs(g, 10);
  auto want = runReference(g, in);
  fuseOps(g);
  EXPECT_EQ(groupNodes(g), (std::vector<std::vector<NodeId>>{{relu, red}, {mul}}));
  EXPECT_EQ(g.groups[0].anchor, red);
  expectSame(want, runGroups(g, in));
}

TEST(Fusion, InjectiveChainsFuseButNotIntoOpaque) {
  // relu -> transpose -> reshape -> softmax. The relu fuses into the transpose (an injective
  // post-dominator), the transpose group into the reshape in the injective phase; the softmax
  // is opaque and stays alone. A second consumer of the relu (a graph output) ends it.
  Graph g;
  ValueId x = g.addValue("x", {1, 2, 3, 4}, DType::F32);
  g.inputs = {x};
  NodeId relu = addNode(g, "Relu", "relu", {x});
  NodeId tr =
      addNode(g, "Transpose", "tr", {out(g, relu)}, {{"perm", std::vector<int64_t>{0, 2, 3, 1}}});
  NodeId rs = addNode(g, "Reshape", "rs", {out(g, tr), g.addConstantI64("spec", {2}, {1, -1})});
  NodeId sm = addNode(g, "Softmax", "sm", {out(g, rs)}, {{"axis", int64_t{1}}});
  NodeId tanh = addNode(g, "Tanh", "tanh", {x});
  NodeId t2 =
      addNode(g, "Transpose", "t2", {out(g, tanh)}, {{"perm", std::vector<int64_t>{0, 2, 3, 1}}});
  g.outputs = {out(g, sm), out(g, tanh), out(g, t2)};
  auto in = randomInputs(g, 12);
  auto want = runReference(g, in);
  fuseOps(g);
  EXPECT_EQ(groupNodes(g), (std::vector<std::vector<NodeId>>{{relu, tr, rs}, {sm}, {tanh}, {t2}}));
  expectSame(want, runGroups(g, in));
}

TEST(Fusion, FilterLetsViewsJoinCpuGroups) {
  // transpose -> reshape -> transpose on a device that only runs the reshape: the reshape is a
  // free view, not device work, so the injective chain fuses into one (CPU) group.
  Graph g;
  ValueId x = g.addValue("x", {1, 2, 3, 4}, DType::F32);
  g.inputs = {x};
  NodeId t1 = addNode(g, "Transpose", "t1", {x}, {{"perm", std::vector<int64_t>{0, 2, 3, 1}}});
  NodeId rs = addNode(g, "Reshape", "rs", {out(g, t1), g.addConstantI64("spec", {3}, {1, 12, 2})});
  NodeId t2 =
      addNode(g, "Transpose", "t2", {out(g, rs)}, {{"perm", std::vector<int64_t>{0, 2, 1}}});
  g.outputs = {out(g, t2)};
  auto in = randomInputs(g, 14);
  auto want = runReference(g, in);
  fuseOps(g, preserveRunnable([](const Graph &gr, const FusedGroup &grp) {
            return isViewOnly(gr, grp) ? std::string() : std::string("no kernel");
          }));
  EXPECT_EQ(groupNodes(g), (std::vector<std::vector<NodeId>>{{t1, rs, t2}}));
  expectSame(want, runGroups(g, in));
}

TEST(Fusion, SplitGroupKeepsAnExecutableOrder) {
  Diamond d = diamond();
  auto in = randomInputs(d.g, 13);
  auto want = runReference(d.g, in);
  fuseOps(d.g);
  ASSERT_EQ(d.g.groups.size(), 1u);
  std::vector<int> ids = splitGroup(d.g, 0);
  EXPECT_EQ(ids, (std::vector<int>{0, 1, 2, 3, 4}));
  ASSERT_EQ(d.g.groups.size(), 5u);
  EXPECT_EQ(d.g.groups[1].nodes, (std::vector<NodeId>{d.relu}));
  EXPECT_EQ(d.g.groups[1].inputs, (std::vector<ValueId>{out(d.g, d.conv)}));
  EXPECT_EQ(d.g.groups[1].outputs, (std::vector<ValueId>{out(d.g, d.relu)}));
  expectSame(want, runGroups(d.g, in));
}

// ---------------------------------------------------------------------------------------------
// Cost-aware placement

std::string rejectSoftmax(const Graph &g, const FusedGroup &grp) {
  return g.node(grp.anchor).kind == graph::OpKind::Softmax ? "no exp" : "";
}

// softmax -> middle -> softmax on [1, 16, 32, 32]; the softmaxes run on the CPU.
Graph sandwich(bool bigConv, NodeId &middle) {
  Graph g;
  ValueId x = g.addValue("x", {1, 16, 32, 32}, DType::F32);
  g.inputs = {x};
  NodeId s1 = addNode(g, "Softmax", "s1", {x}, {{"axis", int64_t{1}}});
  if (bigConv)
    middle = addNode(
        g, "Conv", "mid", {out(g, s1), g.addConstant("w", {16, 16, 3, 3}, randomData(2304, 4))},
        {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  else
    middle = addNode(g, "Relu", "mid", {out(g, s1)});
  NodeId s2 = addNode(g, "Softmax", "s2", {out(g, middle)}, {{"axis", int64_t{1}}});
  g.outputs = {out(g, s2)};
  return g;
}

TEST(Placement, SmallOpBetweenCpuGroupsMovesToTheCpu) {
  // Relu on 16384 elements with npu-base-like figures (DeviceCosts defaults):
  //   NPU: max((32768 B in + 32768 B out) / 16e9, 16384 / 16e9) = 4.1 us, plus two
  //   crossings of 5 us + 65536 B / 16e9 (4.1 us) + 16384 / 1e9 (16.4 us) = 25.5 us each;
  //   CPU: 16384 / 1e9 = 16.4 us and no crossing. 16.4 < 55: CPU.
  NodeId mid;
  Graph g = sandwich(false, mid);
  fuseOps(g);
  ASSERT_EQ(g.groups.size(), 3u);
  place(g, rejectSoftmax);
  EXPECT_EQ(g.groups[1].placement, Placement::Npu) << "without costs the NPU runs what it can";
  DeviceCosts costs;
  place(g, rejectSoftmax, &costs);
  EXPECT_EQ(g.groups[1].placement, Placement::Cpu);
  EXPECT_NE(g.groups[1].cpuReason.find("moved off the NPU by cost"), std::string::npos)
      << g.groups[1].cpuReason;
  EXPECT_NE(g.groups[1].cpuReason.find("CPU 16.38 us"), std::string::npos) << g.groups[1].cpuReason;
}

TEST(Placement, ExpensiveOpBetweenCpuGroupsStaysOnTheNpu) {
  // 3x3 conv 16->16 on 32x32: 2,359,296 MACs = 590 us on a 4 GMAC/s CPU against ~9 us on a
  // 256 GMAC/s NPU plus ~51 us of crossings: stays.
  NodeId mid;
  Graph g = sandwich(true, mid);
  fuseOps(g);
  ASSERT_EQ(g.groups.size(), 3u);
  EXPECT_EQ(groupMacs(g, g.groups[1]), 2359296);
  DeviceCosts costs;
  place(g, rejectSoftmax, &costs);
  EXPECT_EQ(g.groups[1].placement, Placement::Npu) << g.groups[1].cpuReason;
}

TEST(Placement, BackendEstimateReplacesTheRoofline) {
  // The conv that stays by the roofline (ExpensiveOpBetweenCpuGroupsStaysOnTheNpu: ~9 us) moves
  // when the backend says its kernel takes 1 s (> 590 us on the CPU); a backend without an
  // estimate for the group (-1) leaves the roofline in charge.
  NodeId mid;
  Graph g = sandwich(true, mid);
  fuseOps(g);
  ASSERT_EQ(g.groups.size(), 3u);
  DeviceCosts costs;
  costs.npuGroupSeconds = [](const Graph &, const FusedGroup &) { return -1.0; };
  place(g, rejectSoftmax, &costs);
  EXPECT_EQ(g.groups[1].placement, Placement::Npu) << g.groups[1].cpuReason;
  costs.npuGroupSeconds = [](const Graph &, const FusedGroup &) { return 1.0; };
  place(g, rejectSoftmax, &costs);
  EXPECT_EQ(g.groups[1].placement, Placement::Cpu);
  EXPECT_NE(g.groups[1].cpuReason.find("NPU 1000000.00 us"), std::string::npos)
      << g.groups[1].cpuReason;
}

TEST(Placement, LoneOpWithoutCpuNeighboursStaysOnTheNpu) {
  // A single-op model: the CPU would be cheaper, but nothing ping-pongs.
  Graph g;
  ValueId x = g.addValue("x", {1, 16, 32, 32}, DType::F32);
  g.inputs = {x};
  NodeId r = addNode(g, "Relu", "r", {x});
  g.outputs = {out(g, r)};
  fuseOps(g);
  DeviceCosts costs;
  place(g, rejectSoftmax, &costs);
  EXPECT_EQ(g.groups[0].placement, Placement::Npu);
}

// ---------------------------------------------------------------------------------------------
// L1 residency

TEST(Residency, KeepsWhatFitsBetweenConsecutiveGroups) {
  // Three 1x1 convs in a row on [1, 4, 8, 8]: each output is 256 fp16 = 512 bytes; the next
  // group's working set is its 16 weights (32 bytes) + its output (512) = 544 bytes.
  Graph g;
  ValueId x = g.addValue("x", {1, 4, 8, 8}, DType::F32);
  g.inputs = {x};
  ValueId cur = x;
  for (int i = 0; i < 3; ++i)
    cur =
        out(g, addNode(g, "Conv", fmt::format("c{}", i),
                       {cur, g.addConstant(fmt::format("w{}", i), {4, 4, 1, 1}, randomData(16, i))},
                       conv1x1()));
  g.outputs = {cur};
  fuseOps(g);
  ASSERT_EQ(g.groups.size(), 3u);
  // 2048 bytes: 512 + 544 fit for both intermediates (the first is dead once group 1 ran).
  auto kept = findResidentTensors(g, {0, 1, 2}, 2048, 2);
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_EQ(kept[0].producer, 0);
  EXPECT_EQ(kept[0].consumers, (std::vector<int>{1}));
  EXPECT_EQ(kept[0].bytes, 512);
  EXPECT_EQ(kept[0].dramBytesSaved, 1024); // one write + one read
  EXPECT_EQ(kept[1].producer, 1);
  // 1000 bytes: the working set is capped at 500, and 512 + 500 > 1000.
  EXPECT_TRUE(findResidentTensors(g, {0, 1, 2}, 1000, 2).empty());
  // A tensor whose consumer is in another segment is not kept.
  EXPECT_TRUE(findResidentTensors(g, {0}, 1 << 20, 2).empty());
  auto firstTwo = findResidentTensors(g, {0, 1}, 1 << 20, 2);
  ASSERT_EQ(firstTwo.size(), 1u);
  EXPECT_EQ(firstTwo[0].producer, 0);
}

} // namespace
