// BatchSplitTest.cpp - batch > 1: runs of groups executed sub-batch by sub-batch so that their
// intermediates stay in L1 (npu/pipeline/BatchSplit.h).
//
// Conv chains whose per-image intermediates fit L1 but whose whole-batch ones do not, compiled
// with and without the split and run on the simulator with its hazard checker on: both match
// the fp32 reference and each other bit for bit (the same kernels at other addresses), and the
// simulated DRAM traffic drops by exactly what the shapes say: each intermediate's write and
// read for every image, less the run's weights loaded once more per extra sub-batch. Batch 1 is
// untouched, and a chain whose weights outweigh the traffic saved stays whole.
#include "NpuTestUtil.h"

#include "graph/Passes.h"
#include "graph/Reference.h"
#include "graph/ShapeInference.h"
#include "npu/hw/Quant.h"

#include <cmath>
#include <fmt/format.h>
#include <gtest/gtest.h>

namespace npuc::test {
namespace {

using graph::Graph;
using graph::NodeId;
using graph::ValueId;

struct Chain {
  Graph g;
  ValueId x = graph::kNoValue, y = graph::kNoValue;
  std::vector<ValueId> inner; // the intermediates between the convs
  std::vector<int> ids;
  int64_t weightBytes = 0; // fp16 weights of all convs
  unsigned seed = 3;

  // x[N, C, H, W] -> `convs` k x k convs of C channels, each but the last followed by a Relu
  // fused into it: one group per conv.
  Chain(int64_t N, int64_t C, int64_t H, int64_t W, int convs, int64_t k) {
    x = g.addValue("x", {N, C, H, W}, graph::DType::F32);
    g.inputs = {x};
    ValueId cur = x;
    for (int i = 0; i < convs; ++i) {
      const std::string name = fmt::format("c{}", i);
      auto w = g.addConstant(name + ".w", {C, C, k, k},
                             halves(randomData(size_t(C * C * k * k), seed++, -0.3f, 0.3f)));
      weightBytes += C * C * k * k * 2;
      const int64_t p = k / 2;
      cur = node(graph::OpKind::Conv, name, {cur, w},
                 {{"pads", std::vector<int64_t>{p, p, p, p}},
                  {"strides", std::vector<int64_t>{1, 1}},
                  {"dilations", std::vector<int64_t>{1, 1}}});
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
  ValueId node(graph::OpKind op, const std::string &name, std::vector<ValueId> ins,
               std::map<std::string, graph::AttrValue> attrs = {}) {
    ValueId o = g.addValue(name + ".y", {}, graph::DType::F32);
    NodeId n = g.addNode(op, name, std::move(ins), {o});
    g.node(n).attrs = std::move(attrs);
    graph::inferNodeShape(g, n);
    return o;
  }
};

struct Outcome {
  npu::Segment seg;
  sim::SimStats stats;
  HostTensor out;
  int64_t dram() const { return stats.dramBytesRead + stats.dramBytesWritten; }
};

Outcome run(const Chain &c, const isa::Target &t, const HostTensor &in, bool split,
            std::shared_ptr<const npu::QuantTable> quant = nullptr, bool evenIfSlower = false) {
  npu::CompileOptions opt;
  opt.batchSplit = split;
  opt.batchSplitEvenIfSlower = evenIfSlower;
  // Batch splitting alone: depth-first runs (npu/pipeline/DepthFirst.h) would take the chain
  // image by image without it, and the exact traffic figures below are the whole batch's.
  opt.depthFirst = false;
  opt.quant = std::move(quant);
  Outcome r;
  r.seg = npu::compileSegment(c.g, c.ids, t, opt).value();
  sim::Memory mem(t, r.seg.dramBytes);
  auto &dram = mem.dram();
  std::copy(r.seg.constImage.begin(), r.seg.constImage.end(), dram.begin() + r.seg.constBase);
  auto bytes = npu::packTensor(in, r.seg.inputs.at(0));
  std::copy(bytes.begin(), bytes.end(), dram.begin() + r.seg.inputs.at(0).addr);
  r.stats = sim::run(t, r.seg.program, mem, sim::SimOptions{}); // hazard checker on
  const npu::DramTensor &o = r.seg.outputs.at(0);
  r.out = npu::unpackTensor(dram.data() + o.addr, o);
  return r;
}

HostTensor inputOf(const Chain &c) {
  const Shape &s = c.g.value(c.x).shape;
  return HostTensor(s, halves(randomData(size_t(numElements(s)), 1)));
}

void expectMatchesReference(const Chain &c, const HostTensor &in, const HostTensor &got) {
  test::expectMatchesReference(c.g, c.x, c.y, in, got);
}

// 16 channels of 96 x 96 fp16 are 288 KiB per image: one image's two intermediates (576 KiB)
// fit npu-base's 1 MiB L1 beside the tiles, two images' one (576 KiB) plus the next group's
// working set (half of L1) do not. 1x1 convs read each input pixel once (no halos), so every
// tensor's traffic is its compulsory bytes and the drop is exact.
void checkSplit(int64_t N) {
  SCOPED_TRACE("batch " + std::to_string(N));
  Chain c(N, 16, 96, 96, 3, 1);
  ASSERT_EQ(c.ids.size(), 3u);
  isa::Target t = isa::loadTarget(configPath("npu-base.yaml"));
  HostTensor in = inputOf(c);
  Outcome on = run(c, t, in, true), off = run(c, t, in, false);
  expectMatchesReference(c, in, on.out);
  expectMatchesReference(c, in, off.out);
  EXPECT_EQ(on.out.data, off.out.data) << "the same kernels at other addresses";
  EXPECT_TRUE(off.seg.batchSplit.empty());
  // Without the split nothing stays in L1 (the whole batch does not fit).
  for (const npu::ResidencyEntry &e : off.seg.residency)
    EXPECT_FALSE(e.dropped.empty()) << e.name;
  ASSERT_EQ(on.seg.batchSplit.size(), 1u);
  const npu::BatchSplitEntry &e = on.seg.batchSplit[0];
  EXPECT_EQ(e.groups, c.ids);
  EXPECT_EQ(e.batch, N);
  EXPECT_EQ(e.subBatch, 1); // two images' intermediates do not fit: one at a time
  const int64_t perImage = 16 * 96 * 96 * 2;
  // Each intermediate is written once and read once per image; the conv kernel loads its weights
  // once per image both ways (it loops over the images outermost), so the split reloads none.
  const int64_t saved = int64_t(c.inner.size()) * N * perImage * 2;
  EXPECT_EQ(e.dramBytesSaved, saved);
  EXPECT_EQ(e.extraDramBytes, 0);
  // Whole batch: x read, a written and read, b written and read, y written; weights per image.
  EXPECT_EQ(off.dram(), 6 * N * perImage + N * c.weightBytes);
  EXPECT_EQ(on.dram(), 2 * N * perImage + N * c.weightBytes);
  EXPECT_EQ(off.dram() - on.dram(), saved);
  // One GroupInfo per group and sub-batch, in execution order: image by image.
  ASSERT_EQ(on.seg.groupInfo.size(), size_t(N) * c.ids.size());
  for (size_t i = 0; i < on.seg.groupInfo.size(); ++i) {
    EXPECT_EQ(on.seg.groupInfo[i].groupId, c.ids[i % c.ids.size()]);
    EXPECT_EQ(on.seg.groupInfo[i].subBatch, int64_t(i / c.ids.size()));
  }
}

TEST(BatchSplit, Batch2ConvChainRunsImageByImage) {
  checkSplit(2);
}

TEST(BatchSplit, Batch4ConvChainRunsImageByImage) {
  checkSplit(4);
}

// Batch 1: nothing to split, and the program is the one compiled without the option.
TEST(BatchSplit, Batch1Unaffected) {
  Chain c(1, 16, 96, 96, 3, 1);
  isa::Target t = isa::loadTarget(configPath("npu-base.yaml"));
  HostTensor in = inputOf(c);
  Outcome on = run(c, t, in, true), off = run(c, t, in, false);
  EXPECT_TRUE(on.seg.batchSplit.empty());
  EXPECT_TRUE(on.seg.batchSplitNotes.empty());
  ASSERT_EQ(on.seg.program.instrs.size(), off.seg.program.instrs.size());
  EXPECT_EQ(on.seg.constImage, off.seg.constImage);
  EXPECT_EQ(on.dram(), off.dram());
  EXPECT_EQ(on.stats.totalCycles, off.stats.totalCycles);
  EXPECT_EQ(on.out.data, off.out.data);
}

// int8 (npu-int8): 32 channels of 96 x 96 int8 are 288 KiB per image, as above. The split
// keeps the same calibrated scales, so the outputs are the unsplit compile's bit for bit, within
// one int8 step of the quantised reference, and each intermediate's traffic is gone. Each
// kernel stages its per-channel dequantisation factors (32 fp32) once per run, so the second
// image loads them again: the simulation finds that a few hundred cycles slower, and the test
// asks for the split regardless (--batch-split-dram-first) to check its mechanics.
TEST(BatchSplit, Int8ConvChainRunsImageByImage) {
  const int64_t N = 2;
  Chain c(N, 32, 96, 96, 3, 1);
  isa::Target t = isa::loadTarget(configPath("npu-int8.yaml"));
  HostTensor in = inputOf(c);
  auto q = std::make_shared<npu::QuantTable>(npu::calibrate(c.g, {{c.x, in}}, "test input"));
  Outcome on = run(c, t, in, true, q, true), off = run(c, t, in, false, q);
  EXPECT_EQ(on.out.data, off.out.data);
  const HostTensor want = npu::runQuantisedReference(c.g, *q, {{c.x, in}}).at(c.y);
  ASSERT_EQ(want.data.size(), on.out.data.size());
  for (size_t i = 0; i < want.data.size(); ++i)
    ASSERT_LE(std::fabs(on.out.data[i] - want.data[i]), q->of(c.y) * 1.001f) << i;
  ASSERT_EQ(on.seg.batchSplit.size(), 1u);
  EXPECT_EQ(on.seg.batchSplit[0].subBatch, 1);
  const int64_t perImage = 32 * 96 * 96; // int8: one byte per element
  EXPECT_EQ(on.seg.batchSplit[0].dramBytesSaved, 2 * N * perImage * 2);
  // Each conv's factors, once more; beyond them the kernels planned at one image may move more
  // (the first conv's two 16-channel blocks run rows-outer, its weights once per row tile and
  // image), which the estimate counts and the simulated traffic confirms.
  const int64_t dequant = (N - 1) * 3 * 32 * 4;
  const int64_t extra = on.seg.batchSplit[0].extraDramBytes;
  EXPECT_GE(extra, dequant);
  EXPECT_LT(extra, on.seg.batchSplit[0].dramBytesSaved / 10);
  EXPECT_GE(off.dram() - on.dram(), 2 * N * perImage * 2 - extra);
}

// A later layer: 128 channels of 14 x 14 are 49 KiB per image, 196 KiB for the batch of 4,
// next to 288 KiB of weights per conv. The whole batch's intermediate already stays in L1, so
// sub-batches would save nothing: the chain keeps the whole batch (each weight tile loaded for
// the whole batch, the larger M for the tensor unit).
TEST(BatchSplit, LaterLayersKeepTheWholeBatch) {
  Chain c(4, 128, 14, 14, 2, 3);
  ASSERT_EQ(c.ids.size(), 2u);
  isa::Target t = isa::loadTarget(configPath("npu-base.yaml"));
  HostTensor in = inputOf(c);
  Outcome r = run(c, t, in, true);
  expectMatchesReference(c, in, r.out);
  EXPECT_TRUE(r.seg.batchSplit.empty());
  ASSERT_EQ(r.seg.batchSplitNotes.size(), 1u);
  EXPECT_NE(r.seg.batchSplitNotes[0].find("no run of groups gains"), std::string::npos)
      << r.seg.batchSplitNotes[0];
  for (const npu::GroupInfo &gi : r.seg.groupInfo)
    EXPECT_EQ(gi.subBatch, -1);
  ASSERT_EQ(r.seg.residency.size(), 1u);
  EXPECT_TRUE(r.seg.residency[0].dropped.empty()) << r.seg.residency[0].dropped;
  EXPECT_EQ(r.seg.residency[0].bytes, 4 * 128 * 14 * 14 * 2);
}

// Attention at batch 2: scores = relu(x) x (x/2)^T, context = scores x relu(x), the heads
// merged ([N,H,S,D] -> Transpose(0,2,1,3) -> Reshape [N,S,H*D]) and projected. The context
// MatMul stores its output in the dim order that makes the head merge a zero-copy view (a chosen
// layout, npu/hw/DramLayout.h). A run re-planned at sub-batch size would store it in the default
// order while the view still reads the chosen one, so the groups touching it keep the whole
// batch (and say so), even when a split is taken regardless of cycles; the result matches the
// reference.
TEST(BatchSplit, RunsTouchingAChosenLayoutKeepTheWholeBatch) {
  const int64_t N = 2, H = 4, S = 256, D = 32;
  Chain c(1, 1, 1, 1, 1, 1); // only for its node() helper: the graph is rebuilt below
  c.g = Graph();
  c.ids.clear();
  c.x = c.g.addValue("x", {N, H, S, D}, graph::DType::F32);
  c.g.inputs = {c.x};
  ValueId a = c.node(graph::OpKind::Relu, "a", {c.x});
  ValueId half = c.g.addConstant("half", {1}, {0.5f});
  ValueId b = c.node(graph::OpKind::Mul, "b", {c.x, half});
  ValueId bt =
      c.node(graph::OpKind::Transpose, "bt", {b}, {{"perm", std::vector<int64_t>{0, 1, 3, 2}}});
  ValueId scores = c.node(graph::OpKind::MatMul, "scores", {a, bt});
  ValueId ctx = c.node(graph::OpKind::MatMul, "ctx", {scores, a});
  ValueId heads = c.node(graph::OpKind::Transpose, "heads", {ctx},
                         {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
  ValueId shape = c.g.addConstantI64("merged.shape", {3}, {N, S, H * D});
  ValueId merged = c.node(graph::OpKind::Reshape, "merged", {heads, shape});
  ValueId w =
      c.g.addConstant("w", {H * D, 64}, halves(randomData(size_t(H * D * 64), 6, -0.2f, 0.2f)));
  c.y = c.node(graph::OpKind::MatMul, "proj", {merged, w});
  c.g.outputs = {c.y};
  isa::Target t = isa::loadTarget(configPath("npu-base.yaml"));
  auto reject = [&t](const Graph &g, const graph::FusedGroup &grp) {
    return npu::npuRejectReason(g, grp, t);
  };
  graph::fuseOps(c.g, graph::preserveRunnable(reject));
  for (graph::FusedGroup &grp : c.g.groups) {
    ASSERT_EQ(reject(c.g, grp), "") << grp.name;
    grp.placement = graph::Placement::Npu;
    c.ids.push_back(grp.id);
  }
  HostTensor in(c.g.value(c.x).shape,
                halves(randomData(size_t(numElements(c.g.value(c.x).shape)), 5, -0.5f, 0.5f)));
  Outcome r = run(c, t, in, true, nullptr, /*evenIfSlower=*/true);
  expectMatchesReference(c, in, r.out);
  bool chosen = false;
  for (const npu::GroupInfo &gi : r.seg.groupInfo)
    chosen = chosen || gi.layout.find("stores 'ctx.y' in layout 0,2,1,3") != std::string::npos;
  EXPECT_TRUE(chosen) << "the context MatMul stores its output in the order that cancels";
  // The MatMul writing the chosen layout, the view reading it, and the MatMul reading the view.
  for (const char *grp : {"ctx", "heads", "proj"}) {
    int said = 0;
    for (const std::string &note : r.seg.batchSplitNotes)
      said += note.rfind(fmt::format("group '{}' keeps the whole batch: ", grp), 0) == 0 &&
              note.find("is stored in a layout chosen to cancel layout ops") != std::string::npos;
    EXPECT_EQ(said, 1) << grp;
  }
  for (const npu::BatchSplitEntry &e : r.seg.batchSplit)
    for (int gid : e.groups)
      for (graph::NodeId n : c.g.groups.at(size_t(gid)).nodes)
        EXPECT_NE(c.g.node(n).name, "ctx") << "a split run would re-plan the chosen layout away";
}

} // namespace
} // namespace npuc::test
