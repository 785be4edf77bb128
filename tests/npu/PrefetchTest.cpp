// PrefetchTest.cpp - cross-group weight prefetch (CompileOptions::crossGroupPrefetch).
//
// Two chained convolutions compiled as one segment of two groups. With prefetch, the second
// group's buffers sit at the top of each on-chip level, disjoint from the first group's, so the
// token pass does not hold its weight load behind the first group's reads: the load engine
// fetches it while the tensor unit still works on the first group. The outputs must not change.
#include "NpuTestUtil.h"

#include "graph/Reference.h"
#include "npu/isel/Sync.h"

#include <algorithm>
#include <cmath>
#include <gtest/gtest.h>
#include <stdexcept>

namespace npuc::test {
namespace {

using graph::Graph;

graph::FusedGroup groupOf(const Graph &g, int id, std::vector<graph::NodeId> nodes,
                          graph::ValueId in, graph::ValueId out) {
  graph::FusedGroup grp;
  grp.id = id;
  grp.nodes = std::move(nodes);
  grp.anchor = grp.nodes.front();
  grp.name = g.node(grp.anchor).name;
  grp.inputs = {in};
  grp.outputs = {out};
  grp.placement = graph::Placement::Npu;
  return grp;
}

// x[1,32,28,28] -> conv a (3x3, 64) + relu -> conv b (3x3, 64).
struct TwoConvs {
  Graph g;
  graph::ValueId x, r, y;
  TwoConvs() {
    x = g.addValue("x", {1, 32, 28, 28}, graph::DType::F32);
    g.inputs = {x};
    auto conv = [&](const std::string &name, graph::ValueId in, int64_t c, unsigned seed) {
      auto w =
          g.addConstant(name + ".w", {64, c, 3, 3},
                        halves(randomData(static_cast<size_t>(64 * c * 9), seed, -0.2f, 0.2f)));
      auto out = g.addValue(name + ".y", {1, 64, 28, 28}, graph::DType::F32);
      auto n = g.addNode(graph::OpKind::Conv, name, {in, w}, {out});
      g.node(n).attrs["pads"] = std::vector<int64_t>{1, 1, 1, 1};
      return std::pair{n, out};
    };
    auto [na, ya] = conv("a", x, 32, 2);
    r = g.addValue("r", {1, 64, 28, 28}, graph::DType::F32);
    auto relu = g.addNode(graph::OpKind::Relu, "relu", {ya}, {r});
    auto [nb, yb] = conv("b", r, 64, 3);
    y = yb;
    g.groups = {groupOf(g, 0, {na, relu}, x, r), groupOf(g, 1, {nb}, r, y)};
    g.outputs = {y};
  }
};

struct SegRun {
  npu::Segment seg;
  sim::SimStats stats;
  HostTensor out;
};

SegRun run(const TwoConvs &m, const isa::Target &t, const HostTensor &in, bool prefetch,
           bool bankAlwaysMove = false) {
  npu::CompileOptions opt;
  opt.crossGroupPrefetch = prefetch;
  opt.bankAlwaysMove = bankAlwaysMove;
  // The intermediate goes through DRAM: these tests are about the groups' own buffers, and a
  // tensor resident in L1 is shared by both groups by design (ResidencyTest.cpp).
  opt.residency = false;
  SegRun r;
  r.seg = npu::compileSegment(m.g, {0, 1}, t, opt).value();
  sim::Memory mem(t, r.seg.dramBytes);
  auto &dram = mem.dram();
  std::copy(r.seg.constImage.begin(), r.seg.constImage.end(), dram.begin() + r.seg.constBase);
  auto bytes = npu::packTensor(in, r.seg.inputs.at(0).layout);
  std::copy(bytes.begin(), bytes.end(), dram.begin() + r.seg.inputs.at(0).addr);
  sim::SimOptions so;
  so.trace = true; // the hazard checker stays on: the placement must need no extra tokens
  r.stats = sim::run(t, r.seg.program, mem, so);
  const npu::DramTensor &o = r.seg.outputs.at(0);
  r.out = npu::unpackTensor(dram.data() + o.addr, o.shape, o.layout);
  return r;
}

// Start of the first instruction of `mnemonic` in [begin, end), and the last end of any.
int64_t firstStart(const SegRun &r, int64_t begin, int64_t end, const std::string &mnemonic) {
  int64_t best = INT64_MAX;
  for (const sim::TraceEvent &e : r.stats.trace)
    if (e.index >= begin && e.index < end && e.mnemonic == mnemonic)
      best = std::min(best, e.start);
  return best;
}
int64_t lastEnd(const SegRun &r, int64_t begin, int64_t end, const std::string &mnemonic) {
  int64_t best = -1;
  for (const sim::TraceEvent &e : r.stats.trace)
    if (e.index >= begin && e.index < end && e.mnemonic == mnemonic)
      best = std::max(best, e.end);
  return best;
}

TEST(CrossGroupPrefetch, NextWeightsLoadWhileTheCurrentGroupComputes) {
  isa::Target t = isa::loadTarget(configPath("npu-base.yaml"));
  TwoConvs m;
  HostTensor in({1, 32, 28, 28}, halves(randomData(32 * 28 * 28, 1)));
  SegRun on = run(m, t, in, true), off = run(m, t, in, false);

  // The same instructions in both (only addresses differ), so the outputs are bit-identical...
  ASSERT_EQ(on.out.data.size(), off.out.data.size());
  EXPECT_EQ(on.out.data, off.out.data);
  // ...and they are the reference's to fp16 accuracy (two rounded layers: a loose bound).
  auto ref = graph::runReference(m.g, {{m.x, in}}).at(m.y);
  double maxRef = 0, maxErr = 0;
  for (size_t i = 0; i < ref.data.size(); ++i) {
    maxRef = std::max(maxRef, double(std::fabs(ref.data[i])));
    maxErr = std::max(maxErr, double(std::fabs(ref.data[i] - on.out.data[i])));
  }
  EXPECT_LT(maxErr, 4e-3 * maxRef) << "max |ref| " << maxRef;

  ASSERT_EQ(on.seg.groupInfo.size(), 2u);
  ASSERT_EQ(off.seg.groupInfo.size(), 2u);
  // With prefetch the two groups touch disjoint bytes of L1, where the weights go (the smaller
  // levels may still be shared: each group's double buffers can take more than half of L0)...
  const int l1 = t.findLevel("l1").value();
  auto inL1 = [&](const SegRun &r, const npu::GroupInfo &gi) {
    std::vector<npu::Access> out;
    for (int64_t i = gi.instrBegin; i < gi.instrEnd; ++i)
      for (const npu::Access &x : npu::accessesOf(t, r.seg.program.instrs[size_t(i)]))
        if (x.level == l1 && x.hi > x.lo)
          out.push_back(x);
    return out;
  };
  auto overlapping = [&](const SegRun &r) {
    int64_t n = 0;
    for (const npu::Access &x : inL1(r, r.seg.groupInfo[0]))
      for (const npu::Access &y : inL1(r, r.seg.groupInfo[1]))
        n += x.lo < y.hi && y.lo < x.hi;
    return n;
  };
  EXPECT_EQ(overlapping(on), 0);
  EXPECT_GT(overlapping(off), 0);
  // ...so the second group's first load (its weight block) waits for no token.
  auto firstLoad = [&](const SegRun &r) -> const isa::Instr & {
    const npu::GroupInfo &b = r.seg.groupInfo[1];
    for (int64_t i = b.instrBegin; i < b.instrEnd; ++i)
      if (r.seg.program.instrs[size_t(i)].desc->mnemonic == "ld")
        return r.seg.program.instrs[size_t(i)];
    throw std::runtime_error("the second group has no load");
  };
  EXPECT_EQ(firstLoad(on).get("pop"), 0);
  // It runs while the first group still computes, and nothing gets slower.
  const npu::GroupInfo &a = on.seg.groupInfo[0], &b = on.seg.groupInfo[1];
  EXPECT_LT(firstStart(on, b.instrBegin, b.instrEnd, "ld"),
            lastEnd(on, a.instrBegin, a.instrEnd, "mm"));
  EXPECT_LE(on.stats.totalCycles, off.stats.totalCycles);
}

// The bank-aware placement relocates buffers placed from the top as well: forced to move every
// group's buffers (a test-only option), the second group (from the top) keeps its outputs.
TEST(CrossGroupPrefetch, BankPlacementMovesBuffersPlacedFromTheTop) {
  isa::Target t = isa::loadTarget(configPath("npu-base.yaml"));
  TwoConvs m;
  HostTensor in({1, 32, 28, 28}, halves(randomData(32 * 28 * 28, 1)));
  SegRun base = run(m, t, in, true), moved = run(m, t, in, true, true);
  ASSERT_EQ(moved.seg.groupInfo.size(), 2u);
  EXPECT_FALSE(moved.seg.groupInfo[1].bank.change.empty());
  EXPECT_EQ(base.out.data, moved.out.data);
}

} // namespace
} // namespace npuc::test
