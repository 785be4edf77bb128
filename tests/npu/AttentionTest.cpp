// AttentionTest.cpp - attention in one kernel (npu/kernels/LowerAttention.cpp) and the pass that
// merges attention's groups (graph/FuseAttention.cpp).
//
// Expectations (derived, not copied from the kernel):
//  * Bit-identical to the same graph compiled as three groups (the batched product with its
//    epilogue, the loop-nest kernel's Softmax, the second product): the scores are rounded to
//    fp16 as the first group stores them, Softmax takes the same steps in the same order (row
//    max, exp(s - max) in fp32, the row sum in column order, one division), and the simulator's
//    matmul adds every product in k order whatever the k-chunks. Every legal tiling of the fused
//    kernel is therefore bit-identical to the default one too.
//  * Within the fp16 bound of the fp32 graph reference: each probability carries the scores'
//    fp16 rounding (|s| 2^-11 for the max-subtracted exponent, twice: numerator and sum) and its
//    own (2^-11); the output sums p * v with sum p = 1 and |v| <= 1, then rounds (2^-11 |y|).
//  * The scores never reach DRAM: the simulator's DRAM traffic is the inputs' and the output's.
#include "NpuTestUtil.h"

#include "graph/Passes.h"
#include "graph/Reference.h"
#include "npu/kernels/KernelSpaces.h"

#include <cmath>
#include <gtest/gtest.h>

namespace npuc::test {
namespace {

using graph::Graph;
using graph::NodeId;
using graph::ValueId;

struct Case {
  std::string name, target;
  Shape q, k, v;           // Q [.., S, K], K^T [.., K, S] (or K [.., S, K] with transposeK)
  bool transposeK = false; // K^T = Transpose(K) inside the group
  float scale = 0;         // non-zero: the scores times this scalar
  bool mask = false;       // + a runtime mask [S, S] broadcast over the batch dims
  bool causal = false;     // Min with a constant causal bound (0 kept, -inf above the diagonal)
  friend std::ostream &operator<<(std::ostream &os, const Case &c) {
    return os << c.name << "_" << c.target;
  }
};

struct Built {
  Graph g;
  std::vector<HostTensor> inputs;
  std::vector<NodeId> first; // the scores' group: (Transpose,) MatMul and its epilogue
  NodeId softmax = -1, second = -1;
  ValueId y = graph::kNoValue;
  double maxScore = 0; // a bound on |scores|
};

Built build(const Case &c) {
  Built r;
  Graph &g = r.g;
  auto input = [&](const std::string &name, const Shape &s) {
    ValueId v = g.addValue(name, s, graph::DType::F32);
    g.inputs.push_back(v);
    r.inputs.emplace_back(s, halves(randomData(static_cast<size_t>(numElements(s)),
                                               static_cast<unsigned>(31 + r.inputs.size()))));
    return v;
  };
  ValueId q = input("q", c.q), k = input("k", c.k), v = input("v", c.v);
  if (c.transposeK) {
    Shape ks = c.k;
    std::swap(ks[ks.size() - 1], ks[ks.size() - 2]);
    std::vector<int64_t> perm(ks.size());
    for (size_t i = 0; i < perm.size(); ++i)
      perm[i] = static_cast<int64_t>(i);
    std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
    ValueId kt = g.addValue("kt", ks, graph::DType::F32);
    r.first.push_back(g.addNode(graph::OpKind::Transpose, "tr", {k}, {kt}));
    g.node(r.first.back()).attrs["perm"] = perm;
    k = kt;
  }
  const int64_t K = c.q.back();
  r.maxScore = double(K) * (c.scale != 0 ? std::fabs(c.scale) : 1.0);
  ValueId s = addOp(g, graph::OpKind::MatMul, "qk", {q, k});
  r.first.push_back(static_cast<NodeId>(g.nodes.size() - 1));
  const Shape ss = g.value(s).shape;
  const int64_t S = ss.back();
  if (c.scale != 0) {
    s = addOp(g, graph::OpKind::Mul, "scale", {s, g.addConstant("c", {}, {c.scale})});
    r.first.push_back(static_cast<NodeId>(g.nodes.size() - 1));
  }
  if (c.mask) {
    s = addOp(g, graph::OpKind::Add, "mask", {s, input("m", {ss[ss.size() - 2], S})});
    r.first.push_back(static_cast<NodeId>(g.nodes.size() - 1));
    r.maxScore += 1;
  }
  if (c.causal) {
    const int64_t M = ss[ss.size() - 2];
    std::vector<float> bound(static_cast<size_t>(M * S));
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < S; ++j)
        bound[static_cast<size_t>(i * S + j)] = j <= i ? std::numeric_limits<float>::infinity()
                                                       : -std::numeric_limits<float>::infinity();
    s = addOp(g, graph::OpKind::Min, "causal", {s, g.addConstant("bound", {1, 1, M, S}, bound)});
    r.first.push_back(static_cast<NodeId>(g.nodes.size() - 1));
  }
  const int64_t axis = static_cast<int64_t>(ss.size()) - 1;
  ValueId p = addOp(g, graph::OpKind::Softmax, "softmax", {s}, {{"axis", axis}});
  r.softmax = static_cast<NodeId>(g.nodes.size() - 1);
  r.y = addOp(g, graph::OpKind::MatMul, "pv", {p, v});
  r.second = static_cast<NodeId>(g.nodes.size() - 1);
  g.outputs = {r.y};
  return r;
}

// The built graph as one attention group, or as the three groups fusion leaves.
void group(Built &b, bool fused) {
  Graph &g = b.g;
  auto make = [&](std::vector<NodeId> nodes, NodeId anchor) {
    graph::FusedGroup grp;
    grp.nodes = std::move(nodes);
    grp.anchor = anchor;
    grp.name = g.node(anchor).name;
    grp.placement = graph::Placement::Npu;
    graph::computeGroupBoundary(g, grp);
    return grp;
  };
  NodeId anchor = -1; // the first product, also behind a Transpose
  for (NodeId n : b.first)
    if (g.node(n).kind == graph::OpKind::MatMul)
      anchor = n;
  g.groups.clear();
  if (fused) {
    std::vector<NodeId> all = b.first;
    all.push_back(b.softmax);
    all.push_back(b.second);
    g.groups.push_back(make(all, anchor));
  } else {
    g.groups.push_back(make(b.first, anchor));
    g.groups.push_back(make({b.softmax}, b.softmax));
    g.groups.push_back(make({b.second}, b.second));
  }
  for (size_t i = 0; i < g.groups.size(); ++i)
    g.groups[i].id = static_cast<int>(i);
}

std::vector<int> allGroups(const Graph &g) {
  std::vector<int> ids;
  for (const graph::FusedGroup &grp : g.groups)
    ids.push_back(grp.id);
  return ids;
}

class Attention : public ::testing::TestWithParam<Case> {};

TEST_P(Attention, MatchesTheThreeGroupsAndTheReference) {
  const Case &c = GetParam();
  const isa::Target t = isa::loadTarget(configPath(c.target));
  Built fused = build(c), split = build(c);
  group(fused, true);
  group(split, false);
  ASSERT_EQ(npu::npuRejectReason(fused.g, fused.g.groups[0], t, /*loopNest=*/false), "");
  NpuRun one = compileAndRun(fused.g, {0}, t, fused.inputs);
  NpuRun three = compileAndRun(split.g, allGroups(split.g), t, split.inputs);
  const npu::GroupInfo &gi = one.seg.groupInfo.at(0);
  EXPECT_NE(gi.tiling.find("fused attention"), std::string::npos) << gi.tiling;
  EXPECT_EQ(gi.schedule.strategy, npu::Strategy::Attention);
  // Both products' MACs, on the tensor unit.
  const Shape &ys = fused.g.value(fused.y).shape;
  const int64_t S = c.v[c.v.size() - 2], K = c.q.back();
  EXPECT_EQ(gi.macs, numElements(ys) / ys.back() * S * (K + ys.back()));
  ASSERT_EQ(one.out.shape, three.out.shape);
  for (size_t i = 0; i < one.out.data.size(); ++i)
    ASSERT_EQ(one.out.data[i], three.out.data[i]) << "element " << i;
  std::map<ValueId, HostTensor> ins;
  for (size_t i = 0; i < fused.inputs.size(); ++i)
    ins[fused.g.inputs[i]] = fused.inputs[i];
  const HostTensor want = graph::runReference(fused.g, ins).at(fused.y);
  const double pErr = 2 * fused.maxScore * std::ldexp(1.0, -11) + std::ldexp(1.0, -10);
  for (size_t i = 0; i < want.data.size(); ++i) {
    const double w = want.data[i];
    ASSERT_NEAR(one.out.data[i], w, std::ldexp(std::fabs(w), -11) + pErr) << "element " << i;
  }
}

std::vector<Case> cases() {
  std::vector<Case> v;
  for (const char *t : {"npu-transformer.yaml", "npu-rtl.yaml"}) {
    v.push_back({"plain3d", t, {2, 24, 8}, {2, 8, 40}, {2, 40, 16}});
    v.push_back(
        {"heads_scale_mask", t, {1, 3, 37, 16}, {1, 3, 37, 16}, {1, 3, 37, 20}, true, 0.25f, true});
    v.push_back({"causal_broadcast_v",
                 t,
                 {1, 2, 70, 24},
                 {1, 2, 24, 70},
                 {1, 1, 70, 24},
                 false,
                 0.2f,
                 false,
                 true});
  }
  // More score columns than one tile and rows than one block.
  v.push_back({"long",
               "npu-transformer.yaml",
               {1, 2, 300, 32},
               {1, 2, 32, 300},
               {1, 2, 300, 32},
               false,
               0.17f,
               false,
               true});
  return v;
}

INSTANTIATE_TEST_SUITE_P(Kernels, Attention, ::testing::ValuesIn(cases()), [](const auto &info) {
  std::string s = info.param.name + "_" + info.param.target;
  for (char &ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch)))
      ch = '_';
  return s;
});

// Every tiling the space lists (a fixed-seed sample) gives the default's output bit for bit, and
// K and V whole (kv 1, 2) or streamed (kv 0), one buffer or two, are among them.
TEST(AttentionSpace, EveryPointMatchesTheDefault) {
  const isa::Target t = isa::loadTarget(configPath("npu-transformer.yaml"));
  Case c{"space", "", {1, 2, 50, 16}, {1, 2, 16, 90}, {1, 2, 90, 24}, false, 0.3f, false, false};
  Built b = build(c);
  group(b, true);
  NpuRun base = compileAndRun(b.g, {0}, t, b.inputs);
  npu::Hw hw;
  ASSERT_EQ(npu::Hw::derive(t, hw), "");
  npu::GroupPlan plan = npu::planGroup(b.g, b.g.groups[0], hw);
  ASSERT_EQ(plan.kind, npu::KernelKind::Attention) << plan.reject;
  npu::SpaceContext ctx;
  ctx.hw = &hw;
  auto space = npu::makeSpace(npu::Strategy::Attention, plan, b.g, ctx);
  const std::vector<npu::Schedule> points = space->enumerate(10);
  ASSERT_GE(points.size(), 5u);
  std::set<int64_t> kvs, buffers;
  for (const npu::Schedule &s : points) {
    SCOPED_TRACE(s.str());
    kvs.insert(s.get("kv"));
    buffers.insert(s.get("buffers"));
    auto file = std::make_shared<npu::ScheduleFile>();
    file->put(base.seg.groupInfo.at(0).scheduleKey, s, "attention");
    npu::CompileOptions opt;
    opt.schedules = file;
    NpuRun r = compileAndRun(b.g, {0}, t, b.inputs, opt);
    EXPECT_EQ(r.seg.groupInfo.at(0).schedule.str(), s.str());
    for (size_t i = 0; i < r.out.data.size(); ++i)
      ASSERT_EQ(r.out.data[i], base.out.data[i]) << "element " << i;
  }
  EXPECT_EQ(kvs.size(), 3u);
  EXPECT_EQ(buffers.size(), 2u);
}

// Scores of 2 x 1024 x 1024 (4 MB in fp16, four times L1): the DRAM traffic is Q, K, V, the
// causal bound (read once per head) and the output, and the output matches the reference.
TEST(Attention, LongSequenceScoresNeverReachDram) {
  const isa::Target t = isa::loadTarget(configPath("npu-transformer.yaml"));
  const int64_t S = 1024, D = 32, H = 2;
  Case c{"s1024", "", {1, H, S, D}, {1, H, D, S}, {1, H, S, D}, false, 0.17f, false, true};
  Built b = build(c);
  group(b, true);
  NpuRun r = compileAndRun(b.g, {0}, t, b.inputs);
  const int64_t qkv = 3 * H * S * D * 2, bound = S * S * 2, out = H * S * D * 2;
  EXPECT_EQ(r.stats.dramBytesWritten, out);
  EXPECT_LE(r.stats.dramBytesRead, qkv + H * bound + 4096) << "4 KB: the scale constant's line";
  std::map<ValueId, HostTensor> ins;
  for (size_t i = 0; i < b.inputs.size(); ++i)
    ins[b.g.inputs[i]] = b.inputs[i];
  const HostTensor want = graph::runReference(b.g, ins).at(b.y);
  const double pErr = 2 * b.maxScore * std::ldexp(1.0, -11) + std::ldexp(1.0, -10);
  for (size_t i = 0; i < want.data.size(); ++i)
    ASSERT_NEAR(r.out.data[i], want.data[i], std::ldexp(std::fabs(want.data[i]), -11) + pErr);
}

// The pass merges attention's three groups into one when accepted, in the second product's
// place, and leaves them when the probabilities have another reader.
TEST(FuseAttention, MergesTheThreeGroupsItFinds) {
  Case c{"fuse", "", {1, 2, 8, 4}, {1, 2, 4, 8}, {1, 2, 8, 4}, false, 0.5f};
  Built b = build(c);
  graph::fuseOps(b.g);
  ASSERT_EQ(b.g.groups.size(), 3u) << "fusion stops at the Softmax";
  Graph g2 = b.g;
  int asked = 0;
  EXPECT_EQ(graph::fuseAttention(b.g,
                                 [&](const Graph &, const graph::FusedGroup &m,
                                     const std::vector<graph::FusedGroup> &parts) {
                                   ++asked;
                                   EXPECT_EQ(parts.size(), 3u);
                                   EXPECT_EQ(m.nodes.size(), 4u);
                                   return true;
                                 }),
            1);
  EXPECT_EQ(asked, 1);
  ASSERT_EQ(b.g.groups.size(), 1u);
  EXPECT_EQ(b.g.groups[0].outputs, std::vector<ValueId>{b.y});
  EXPECT_EQ(b.g.groups[0].id, 0);
  // Refused: the groups stay.
  EXPECT_EQ(graph::fuseAttention(g2, [](const Graph &, const graph::FusedGroup &,
                                        const std::vector<graph::FusedGroup> &) { return false; }),
            0);
  EXPECT_EQ(g2.groups.size(), 3u);
  // The probabilities also leave the graph: not attention's chain.
  Built o = build(c);
  o.g.outputs.push_back(o.g.node(o.softmax).outputs[0]);
  graph::fuseOps(o.g);
  const size_t before = o.g.groups.size();
  EXPECT_EQ(graph::fuseAttention(o.g, [](const Graph &, const graph::FusedGroup &,
                                         const std::vector<graph::FusedGroup> &) { return true; }),
            0);
  EXPECT_EQ(o.g.groups.size(), before);
}

// Targets without exp, or with int8 operands, keep attention apart, and say why.
TEST(Attention, RejectedWithTheReason) {
  Case c{"reject", "", {1, 2, 8, 4}, {1, 2, 4, 8}, {1, 2, 8, 4}};
  Built b = build(c);
  group(b, true);
  const std::string base =
      npu::npuRejectReason(b.g, b.g.groups[0], isa::loadTarget(configPath("npu-base.yaml")), false);
  EXPECT_NE(base.find("no 'exp' op"), std::string::npos) << base;
  const std::string int8 =
      npu::npuRejectReason(b.g, b.g.groups[0], isa::loadTarget(configPath("npu-int8.yaml")), false);
  EXPECT_NE(int8, "");
}

} // namespace
} // namespace npuc::test
