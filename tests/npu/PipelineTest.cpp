// PipelineTest.cpp - the segment pipeline (npu/pipeline/): its phase table, the liveness it
// shares with batch splitting, the verifier's checks (each on a plan a real compile built and a
// test then broke, asserting the message), and the Rejects compileSegment returns.
#include "NpuTestUtil.h"

#include "graph/Passes.h"
#include "graph/ShapeInference.h"
#include "npu/pipeline/Pipeline.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace npuc::test {
namespace {

using graph::ValueId;

// x[N, C, H, W] -> `convs` 1x1 convs of C channels, each but the last followed by a Relu fused
// into it: one group per conv, all on the NPU, one segment.
struct Chain {
  graph::Graph g;
  ValueId x = graph::kNoValue, y = graph::kNoValue;
  std::vector<ValueId> inner; // the intermediates between the convs
  std::vector<int> ids;

  Chain(int64_t N, int64_t C, int64_t H, int64_t W, int convs) {
    x = g.addValue("x", {N, C, H, W}, graph::DType::F32);
    g.inputs = {x};
    ValueId cur = x;
    for (int i = 0; i < convs; ++i) {
      const std::string name = fmt::format("c{}", i);
      auto w = g.addConstant(name + ".w", {C, C, 1, 1},
                             halves(randomData(size_t(C * C), unsigned(i + 1), -0.3f, 0.3f)));
      cur = node(graph::OpKind::Conv, name, {cur, w});
      if (i + 1 < convs) {
        cur = node(graph::OpKind::Relu, name + ".relu", {cur});
        inner.push_back(cur);
      }
    }
    y = cur;
    g.outputs = {y};
    graph::fuseOps(g);
    for (graph::FusedGroup &grp : g.groups) {
      grp.placement = graph::Placement::Npu;
      ids.push_back(grp.id);
    }
  }
  ValueId node(graph::OpKind op, const std::string &name, std::vector<ValueId> ins) {
    ValueId o = g.addValue(name + ".y", {}, graph::DType::F32);
    graph::NodeId n = g.addNode(op, name, std::move(ins), {o});
    graph::inferNodeShape(g, n);
    return o;
  }
};

isa::Target base() {
  return isa::loadTarget(configPath("npu-base.yaml"));
}

// The plan of `c` after `last`, every phase verified on the way.
void planThrough(npu::SegmentPlan &p, const Chain &c, const isa::Target &t, npu::Phase last,
                 npu::CompileOptions opt = {}) {
  opt.verifyPhases = true;
  npu::initSegmentPlan(p, c.g, c.ids, t, opt);
  std::optional<npu::Reject> r = npu::runPhases(p, last);
  ASSERT_FALSE(r.has_value()) << r->message;
  ASSERT_EQ(p.done, last);
  ASSERT_EQ(npu::verifyPlan(p), std::vector<std::string>{});
}

std::string joined(const std::vector<std::string> &v) {
  std::string s;
  for (const std::string &x : v)
    s += x + "\n";
  return s;
}

TEST(Pipeline, PhasesRunInTheTableOrderAndHaveNames) {
  EXPECT_EQ(npu::phaseNames(), "plan-groups, quantise, choose-layouts, liveness, batch-split, "
                               "depth-first, residency, dram, schedule, lower, banks, emit, "
                               "tokens, image");
  for (size_t i = 0; i < npu::kNumPhases; ++i) {
    const npu::Phase p = static_cast<npu::Phase>(i);
    EXPECT_EQ(npu::phaseNamed(npu::phaseName(p)), p);
  }
  EXPECT_EQ(npu::phaseNamed("lowering"), std::nullopt);
}

TEST(Pipeline, RunsPhaseByPhaseToTheSameSegment) {
  Chain c(1, 16, 16, 16, 3);
  isa::Target t = base();
  npu::SegmentPlan p;
  planThrough(p, c, t, npu::Phase::Residency);
  EXPECT_TRUE(p.units.empty()) << "no phase after residency ran";
  EXPECT_FALSE(npu::runPhases(p, npu::Phase::Image).has_value());
  npu::Segment whole = npu::compileSegment(c.g, c.ids, t).value();
  EXPECT_EQ(p.seg.program.instrs.size(), whole.program.instrs.size());
  EXPECT_EQ(p.seg.constImage, whole.constImage);
  EXPECT_EQ(p.seg.dramBytes, whole.dramBytes);
}

// Lifetimes over three steps, written out from the chain: x is read by step 0, each
// intermediate lives from its producer to its reader, y from step 2 and it leaves the run.
TEST(Pipeline, LivenessOfAChain) {
  Chain c(1, 16, 8, 8, 3);
  npu::Liveness l = npu::computeLiveness(c.g, c.ids, [](ValueId v) { return v; });
  const std::map<ValueId, npu::Span> want{
      {c.x, {0, 1}}, {c.inner[0], {0, 2}}, {c.inner[1], {1, 3}}, {c.y, {2, 3}}};
  EXPECT_EQ(l.life, want);
  EXPECT_EQ(l.inputs, std::vector<ValueId>{c.x});
  EXPECT_EQ(l.escaping, std::vector<ValueId>{c.y});
  // Over the first two steps alone, the second intermediate is read after them.
  npu::Liveness two = npu::computeLiveness(c.g, {c.ids[0], c.ids[1]}, [](ValueId v) { return v; });
  EXPECT_EQ(two.escaping, std::vector<ValueId>{c.inner[1]});
}

TEST(Verify, ResidentInsideAStepsWindow) {
  Chain c(1, 16, 16, 16, 3);
  isa::Target t = base();
  npu::SegmentPlan p;
  planThrough(p, c, t, npu::Phase::Residency);
  ASSERT_EQ(p.rp.l1Addr.count(c.inner[0]), 1u) << "16 x 16 x 16 fp16 stays in L1";
  ASSERT_EQ(p.rp.l1Addr.count(c.inner[1]), 1u);
  const int64_t bytes = 16 * 16 * 16 * 2;
  const int64_t at = p.rp.l1Addr.at(c.inner[0]), at1 = p.rp.l1Addr.at(c.inner[1]);
  // Step 1 reads the first and writes the second: give it the first one's bytes as its window.
  p.rp.window[1].range[p.hw.l1] = {at, at + bytes};
  EXPECT_EQ(joined(npu::verifyPlan(p)),
            fmt::format("step 1 (group '{}'): its L1 window [{}, {}) overlaps resident 'c0.relu.y' "
                        "at [{}, {})\n",
                        p.group(1).name, at, at + bytes, at, at + bytes));
  // Without a window, step 1 would tile over the whole of L1, over both.
  p.rp.window[1].range.clear();
  EXPECT_EQ(joined(npu::verifyPlan(p)),
            fmt::format("step 1 (group '{0}') tiles in the whole of L1 while resident 'c0.relu.y' "
                        "is live at [{1}, {2})\n"
                        "step 1 (group '{0}') tiles in the whole of L1 while resident 'c1.relu.y' "
                        "is live at [{3}, {4})\n",
                        p.group(1).name, at, at + bytes, at1, at1 + bytes));
}

TEST(Verify, ResidentsSharingL1BytesWhileBothLive) {
  Chain c(1, 16, 16, 16, 3);
  isa::Target t = base();
  npu::SegmentPlan p;
  planThrough(p, c, t, npu::Phase::Residency);
  ASSERT_EQ(p.rp.l1Addr.count(c.inner[0]), 1u) << "16 x 16 x 16 fp16 stays in L1";
  ASSERT_EQ(p.rp.l1Addr.count(c.inner[1]), 1u);
  // Both are live at step 1 (it reads the first and writes the second). Moving the higher one
  // down onto the lower keeps every window above both, so the overlap is the only problem.
  int64_t &a0 = p.rp.l1Addr.at(c.inner[0]), &a1 = p.rp.l1Addr.at(c.inner[1]);
  (a0 > a1 ? a0 : a1) = std::min(a0, a1);
  EXPECT_EQ(joined(npu::verifyPlan(p)),
            "residents 'c0.relu.y' and 'c1.relu.y' share L1 bytes while both live\n");
}

TEST(Verify, ResidentTheHostReads) {
  Chain c(1, 16, 16, 16, 3);
  isa::Target t = base();
  npu::SegmentPlan p;
  planThrough(p, c, t, npu::Phase::Residency);
  p.hostRoots.insert(c.inner[1]);
  EXPECT_EQ(joined(npu::verifyPlan(p)),
            "'c1.relu.y' is resident in L1, but the host reads or writes it\n");
}

TEST(Verify, LifetimeThatMissesAUse) {
  Chain c(1, 16, 16, 16, 3);
  isa::Target t = base();
  npu::SegmentPlan p;
  planThrough(p, c, t, npu::Phase::Liveness);
  p.live.life.at(c.inner[0]) = {0, 1}; // step 1 reads it
  EXPECT_EQ(joined(npu::verifyPlan(p)),
            fmt::format("the lifetime [0, 1) of 'c0.relu.y' does not cover its use at step 1 "
                        "(group '{}')\n",
                        p.group(1).name));
}

TEST(Verify, ViewOfAnotherSize) {
  Chain c(1, 16, 16, 16, 3);
  isa::Target t = base();
  npu::SegmentPlan p;
  planThrough(p, c, t, npu::Phase::Liveness);
  // A value of 8 x 8 x 16 claims to alias the 16 x 16 x 16 intermediate.
  const ValueId small = c.g.addValue("small", {1, 16, 8, 8}, graph::DType::F32);
  p.aliasOf[small] = c.inner[0];
  EXPECT_EQ(joined(npu::verifyPlan(p)),
            "view 'small' (2048 bytes) aliases 'c0.relu.y' of another size (8192 bytes)\n");
}

TEST(Verify, DramRegionsOfLiveTensorsOverlap) {
  Chain c(1, 16, 16, 16, 3);
  isa::Target t = base();
  npu::CompileOptions opt;
  opt.residency = false; // every intermediate in DRAM
  npu::SegmentPlan p;
  planThrough(p, c, t, npu::Phase::Dram, opt);
  // y (read by the host: steps 0..2) and the first intermediate (steps 0..1) are live
  // together: put the intermediate where y is (the planner kept everything else live at steps
  // 0..1 off y's bytes, so this is the only overlap).
  const int64_t yAt = p.addr.at(c.y), bytes = 16 * 16 * 16 * 2;
  p.addr[c.inner[0]] = yAt;
  EXPECT_EQ(joined(npu::verifyPlan(p)),
            fmt::format("'c0.relu.y' at DRAM [{0}, {1}) and 'c2.y' at [{0}, {1}) overlap while "
                        "both are live (steps [0, 2) and [0, 3))\n",
                        yAt, yAt + bytes));
}

TEST(Verify, TensorWithTwoHomes) {
  Chain c(1, 16, 16, 16, 3);
  isa::Target t = base();
  npu::SegmentPlan p;
  planThrough(p, c, t, npu::Phase::Dram);
  ASSERT_EQ(p.rp.l1Addr.count(c.inner[0]), 1u);
  p.split.residentRoots.insert(c.inner[0]); // and in a split run's L1 too
  EXPECT_EQ(joined(npu::verifyPlan(p)),
            "'c0.relu.y' has 2 homes (DRAM 0, L1 1, a batch-split run's L1 1)\n");
}

// The cross-feature rule batch splitting guards itself (BatchSplitInput::chosenLayout): a run
// re-planned at sub-batch size stores its tensors in their default layout.
TEST(Verify, SplitRunTouchingAChosenLayout) {
  Chain c(2, 16, 96, 96, 3); // splits image by image on npu-base (BatchSplitTest)
  isa::Target t = base();
  npu::SegmentPlan p;
  planThrough(p, c, t, npu::Phase::BatchSplit);
  ASSERT_EQ(p.split.runs.size(), 1u);
  ASSERT_EQ(p.split.runs[0].first, 0u);
  ASSERT_EQ(p.split.runs[0].end, 3u);
  p.chosen.layout[c.inner[1]] = npu::DramLayout::NHWC;
  EXPECT_EQ(joined(npu::verifyPlan(p)),
            fmt::format("split run over steps [0, 3) touches 'c1.relu.y' (group '{}'), "
                        "which is stored in a layout chosen to cancel layout ops\n"
                        "split run over steps [0, 3) touches 'c1.relu.y' (group '{}'), "
                        "which is stored in a layout chosen to cancel layout ops\n",
                        p.group(1).name, p.group(2).name));
}

// A segment whose activations do not fit DRAM: no group is to blame.
TEST(Reject, ActivationsBeyondDram) {
  Chain c(1, 16, 16, 16, 3);
  isa::Target t = base();
  for (isa::MemoryLevel &l : t.levels)
    if (l.name == "dram")
      l.size = 4096;
  npu::CompileOptions opt;
  opt.residency = false;
  auto seg = npu::compileSegment(c.g, c.ids, t, opt);
  ASSERT_FALSE(seg.has_value());
  const npu::Reject &r = seg.error();
  EXPECT_EQ(r.group, -1);
  EXPECT_EQ(r.phase, npu::RejectPhase::Dram);
  EXPECT_EQ(r.kind, npu::RejectKind::Capacity);
  // x and the first intermediate live together: 2 x 8 KiB at least.
  EXPECT_EQ(r.message.rfind("target 'npu-base': the segment's activations need ", 0), 0u)
      << r.message;
  EXPECT_NE(r.message.find("bytes of DRAM at their peak, the target has 4096"), std::string::npos)
      << r.message;
}

} // namespace
} // namespace npuc::test
