// DepthFirstTest.cpp - chains of groups executed depth-first, band by band of output
// rows, so that their intermediates stay in L1 (npu/pipeline/DepthFirst.h).
//
// The band geometry is checked against rows derived by hand from the conv arithmetic; chains
// compiled with forced bands (every kernel size, stride, padding and dilation here, band heights
// that do not divide the rows) and without are run on the simulator with its hazard checker on:
// both match the fp32 reference and each other bit for bit (each output element sums the same
// products in the same order), residual and concat joins included. On a DRAM-starved target the
// cost model picks bands by itself and the simulated traffic drops by the spilled intermediate.
#include "NpuTestUtil.h"

#include "graph/Passes.h"
#include "graph/Reference.h"
#include "graph/ShapeInference.h"
#include "npu/hw/Quant.h"
#include "npu/pipeline/DepthFirst.h"
#include "support/IntMath.h"

#include <cmath>
#include <fmt/format.h>
#include <gtest/gtest.h>

namespace npuc::test {
namespace {

using graph::Graph;
using graph::NodeId;
using graph::OpKind;
using graph::ValueId;

// A batch-1 network built layer by layer; finish() fuses it into NPU groups.
struct Net {
  Graph g;
  ValueId x = graph::kNoValue, y = graph::kNoValue;
  std::vector<int> ids;
  unsigned seed = 11;
  int layers = 0;

  Net(int64_t C, int64_t H, int64_t W) {
    x = g.addValue("x", {1, C, H, W}, graph::DType::F32);
    g.inputs = {x};
  }
  ValueId node(OpKind op, const std::string &name, std::vector<ValueId> ins,
               std::map<std::string, graph::AttrValue> attrs = {}) {
    return addOp(g, op, name, std::move(ins), std::move(attrs));
  }
  // A k x k conv (stride s, pad p on every side, dilation d) to `oc` channels, with bias and
  // an optional Relu (fused into its group).
  ValueId conv(ValueId in, int64_t oc, int64_t k, int64_t s = 1, int64_t p = 0, int64_t d = 1,
               bool depthwise = false, bool relu = true) {
    const int64_t c = g.value(in).shape[1];
    const std::string name = fmt::format("c{}", layers++);
    const int64_t cin = depthwise ? 1 : c;
    auto w = g.addConstant(name + ".w", {oc, cin, k, k},
                           halves(randomData(size_t(oc * cin * k * k), seed++, -0.4f, 0.4f)));
    auto b = g.addConstant(name + ".b", {oc}, halves(randomData(size_t(oc), seed++, -0.1f, 0.1f)));
    ValueId out = node(OpKind::Conv, name, {in, w, b},
                       {{"pads", std::vector<int64_t>{p, p, p, p}},
                        {"strides", std::vector<int64_t>{s, s}},
                        {"dilations", std::vector<int64_t>{d, d}},
                        {"group", depthwise ? c : int64_t(1)}});
    return relu ? node(OpKind::Relu, name + ".relu", {out}) : out;
  }
  ValueId maxPool(ValueId in, int64_t k, int64_t s, int64_t p) {
    return node(OpKind::MaxPool, fmt::format("p{}", layers++), {in},
                {{"kernel_shape", std::vector<int64_t>{k, k}},
                 {"strides", std::vector<int64_t>{s, s}},
                 {"pads", std::vector<int64_t>{p, p, p, p}}});
  }
  void finish(ValueId out) {
    y = out;
    g.outputs = {y};
    graph::fuseOps(g);
    for (graph::FusedGroup &grp : g.groups) {
      grp.placement = graph::Placement::Npu;
      ids.push_back(grp.id);
    }
  }
};

// Compiles the net's groups as one segment and runs it with the hazard checker on.
NpuRun run(const Net &n, const isa::Target &t, const HostTensor &in, bool depthFirst,
           int64_t forceRows = 0, std::shared_ptr<const npu::QuantTable> quant = nullptr) {
  npu::CompileOptions opt;
  opt.depthFirst = depthFirst;
  opt.depthFirstRows = forceRows;
  opt.quant = std::move(quant);
  return compileAndRun(n.g, n.ids, t, {in}, opt);
}

int64_t dramOf(const NpuRun &r) {
  return r.stats.dramBytesRead + r.stats.dramBytesWritten;
}

HostTensor inputOf(const Net &n) {
  const Shape &s = n.g.value(n.x).shape;
  return HostTensor(s, halves(randomData(size_t(numElements(s)), 1)));
}

void expectMatchesReference(const Net &n, const HostTensor &in, const HostTensor &got) {
  test::expectMatchesReference(n.g, n.x, n.y, in, got);
}

// Forced bands of `rows` output rows over the whole net: one depth-first run of every group,
// the reference's result, and the whole-tensor compile's bit for bit.
void checkForcedBands(const Net &n, int64_t rows) {
  isa::Target t = isa::loadTarget(configPath("npu-base.yaml"));
  HostTensor in = inputOf(n);
  NpuRun on = run(n, t, in, true, rows), off = run(n, t, in, false);
  ASSERT_EQ(on.seg.depthFirst.size(), 1u)
      << (on.seg.depthFirstNotes.empty() ? "" : on.seg.depthFirstNotes[0]);
  const npu::DepthFirstEntry &e = on.seg.depthFirst[0];
  EXPECT_EQ(e.groups, n.ids);
  const int64_t H = n.g.value(n.y).shape[2];
  EXPECT_EQ(e.rows, H);
  EXPECT_EQ(e.bandRows, std::min(rows, H));
  EXPECT_EQ(e.bands, ceilDiv(H, e.bandRows));
  expectMatchesReference(n, in, off.out);
  EXPECT_EQ(on.out.data, off.out.data) << "each output sums the same products in the same order";
  // One GroupInfo per group and band, band by band.
  ASSERT_EQ(on.seg.groupInfo.size(), size_t(e.bands) * n.ids.size());
  for (size_t i = 0; i < on.seg.groupInfo.size(); ++i) {
    EXPECT_EQ(on.seg.groupInfo[i].groupId, n.ids[i % n.ids.size()]);
    EXPECT_EQ(on.seg.groupInfo[i].band, int64_t(i / n.ids.size()));
  }
}

// --- geometry -------------------------------------------------------------------------------

// x[8, 20, 12] -> c0: 3x3 stride 1 pad 1 -> c1: 3x3 stride 2 pad 1 (10 rows). Output rows
// [lo, hi) of c1 read c0 rows [2lo - 1, 2(hi-1) - 1 + 3), which read x rows one more each side.
TEST(DepthFirst, BandGeometryFollowsTheConvArithmetic) {
  Net n(8, 20, 12);
  ValueId a = n.conv(n.x, 8, 3, 1, 1);
  n.finish(n.conv(a, 8, 3, 2, 1));
  std::vector<NodeId> nodes;
  for (int id : n.ids)
    for (NodeId x : n.g.groups.at(size_t(id)).nodes)
      nodes.push_back(x);
  const NodeId c0 = n.g.groups.at(0).anchor;
  const NodeId c1 = n.g.groups.at(1).anchor;
  struct Case {
    npu::RowRange band, mid, in;
    std::pair<int64_t, int64_t> pad1, pad0;
  };
  const Case cases[] = {
      {{3, 6}, {5, 12}, {4, 13}, {0, 0}, {0, 0}},    // inner: no padding at all
      {{0, 3}, {0, 6}, {0, 7}, {1, 0}, {1, 0}},      // top edge: the top pads, clipped reads
      {{8, 10}, {15, 20}, {14, 20}, {0, 0}, {0, 1}}, // bottom: c0 pads, c1's pad is never read
      {{0, 10}, {0, 20}, {0, 20}, {1, 0}, {1, 1}},   // the whole output
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(fmt::format("band [{}, {})", c.band.lo, c.band.hi));
    auto geo = npu::bandGeometry(n.g, nodes, n.y, c.band);
    ASSERT_TRUE(geo.has_value()) << geo.error();
    EXPECT_EQ(geo->rows.at(n.y), c.band);
    EXPECT_EQ(geo->rows.at(a), c.mid);
    EXPECT_EQ(geo->pads.at(c1), c.pad1);
    EXPECT_EQ(geo->pads.at(c0), c.pad0);
    ASSERT_EQ(geo->reads.size(), 1u);
    EXPECT_EQ(geo->reads[0].value, n.x);
    EXPECT_EQ(geo->reads[0].rows, c.in);
  }
}

// A tensor two readers need different rows of (a 3x3 conv: its halo; an Add: its band) takes
// the union of their rows, and the narrower reader reads a crop of it.
TEST(DepthFirst, SharedIntermediateIsCropped) {
  Net n(8, 16, 16);
  ValueId a = n.conv(n.x, 8, 1);
  ValueId b = n.conv(a, 8, 3, 1, 1, 1, false, false);
  n.finish(n.node(OpKind::Add, "join", {a, b}));
  std::vector<NodeId> nodes;
  for (int id : n.ids)
    for (NodeId x : n.g.groups.at(size_t(id)).nodes)
      nodes.push_back(x);
  auto geo = npu::bandGeometry(n.g, nodes, n.y, {4, 8});
  ASSERT_TRUE(geo.has_value()) << geo.error();
  EXPECT_EQ(geo->rows.at(a), (npu::RowRange{3, 9})); // the 3x3 conv's halo
  ASSERT_EQ(geo->crops.size(), 1u);
  EXPECT_EQ(geo->crops[0].value, a);
  EXPECT_EQ(geo->crops[0].rows, (npu::RowRange{4, 8})); // the Add's band
  EXPECT_EQ(n.g.node(geo->crops[0].node).name, "join");
  const auto crops = npu::bandCrops(n.g, *geo);
  ASSERT_EQ(crops.size(), 1u);
  EXPECT_EQ(crops.begin()->second, std::make_pair(a, int64_t(1))); // row 4 is row 1 of [3, 9)
}

TEST(DepthFirst, RowLocalOps) {
  Net n(8, 16, 16);
  ValueId a = n.conv(n.x, 8, 3, 1, 1);
  ValueId gap = n.node(OpKind::GlobalAveragePool, "gap", {a});
  ValueId avg = n.node(OpKind::AveragePool, "avg", {a},
                       {{"kernel_shape", std::vector<int64_t>{2, 2}},
                        {"strides", std::vector<int64_t>{2, 2}},
                        {"ceil_mode", int64_t(1)}});
  ValueId scale = n.node(OpKind::Mul, "scale", {a, gap}); // broadcasts [1, 8, 1, 1] along H
  auto reason = [&](ValueId v) {
    return npu::rowLocalReason(n.g, n.g.node(n.g.value(v).producer));
  };
  EXPECT_EQ(reason(a), "");
  EXPECT_NE(reason(gap).find("does not compute each output row from a window of rows"),
            std::string::npos);
  EXPECT_NE(reason(avg).find("ceil_mode"), std::string::npos) << reason(avg);
  EXPECT_NE(reason(scale).find("broadcasts along the rows"), std::string::npos) << reason(scale);
  // A conv whose weights are computed ([1, 8, 3, 3]: one output channel, so its leading dim is the
  // batch's) has rows only in its input.
  ValueId w = n.node(OpKind::Relu, "w", {n.g.addConstant("w0", {1, 8, 3, 3}, randomData(72, 4))});
  ValueId dyn =
      n.node(OpKind::Conv, "dyn", {a, w},
             {{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"strides", std::vector<int64_t>{1, 1}}});
  EXPECT_NE(reason(dyn).find("operand 'w.y' is not constant"), std::string::npos) << reason(dyn);
}

// --- halos, end to end ----------------------------------------------------------------------

struct Window {
  int64_t k, s, p, d;
};

class DepthFirstHalo : public ::testing::TestWithParam<Window> {};

// x[8, 37, 20] -> conv (the case's window) -> 3x3 conv -> 3x3/2 max pool -> 1x1 conv, in bands of
// 3 output rows (37 rows is odd: the last band is short, and stride 2 leaves rows no band reads).
TEST_P(DepthFirstHalo, MatchesTheWholeTensorsBitForBit) {
  const Window w = GetParam();
  Net n(8, 37, 20);
  ValueId a = n.conv(n.x, 16, w.k, w.s, w.p, w.d);
  ValueId b = n.conv(a, 16, 3, 1, 1);
  ValueId c = n.maxPool(b, 3, 2, 1);
  n.finish(n.conv(c, 8, 1, 1, 0, 1, false, false));
  ASSERT_EQ(n.ids.size(), 4u);
  checkForcedBands(n, 3);
}

INSTANTIATE_TEST_SUITE_P(Windows, DepthFirstHalo,
                         ::testing::Values(Window{1, 1, 0, 1}, Window{3, 1, 1, 1},
                                           Window{3, 2, 1, 1}, Window{3, 1, 0, 1},
                                           Window{3, 2, 0, 1}, Window{5, 1, 2, 1},
                                           Window{5, 2, 2, 1}, Window{7, 2, 3, 1},
                                           Window{3, 1, 2, 2}, Window{1, 2, 0, 1}),
                         [](const ::testing::TestParamInfo<Window> &i) {
                           return fmt::format("k{}s{}p{}d{}", i.param.k, i.param.s, i.param.p,
                                              i.param.d);
                         });

// Batch 2: each image's bands, image by image, on kernels planned at one image; the second image
// replays the first's variants at its own DRAM offsets.
TEST(DepthFirst, BatchOfTwoRunsImageByImage) {
  Net n(8, 19, 12);
  n.g.value(n.x).shape[0] = 2;
  ValueId a = n.conv(n.x, 16, 3, 2, 1);
  ValueId b = n.conv(a, 16, 3, 1, 1);
  n.finish(n.maxPool(b, 3, 1, 1));
  isa::Target t = isa::loadTarget(configPath("npu-base.yaml"));
  HostTensor in = inputOf(n);
  npu::CompileOptions opt;
  opt.batchSplit = false; // depth-first alone
  opt.depthFirstRows = 3;
  NpuRun on = compileAndRun(n.g, n.ids, t, {in}, opt);
  opt.depthFirst = false;
  opt.depthFirstRows = 0;
  NpuRun off = compileAndRun(n.g, n.ids, t, {in}, opt);
  ASSERT_EQ(on.seg.depthFirst.size(), 1u)
      << (on.seg.depthFirstNotes.empty() ? "" : on.seg.depthFirstNotes[0]);
  const npu::DepthFirstEntry &e = on.seg.depthFirst[0];
  EXPECT_EQ(e.images, 2);
  EXPECT_EQ(e.rows, 10);
  EXPECT_EQ(e.bands, 4); // rows [0, 3), [3, 6), [6, 9), [9, 10) of each image
  expectMatchesReference(n, in, off.out);
  EXPECT_EQ(on.out.data, off.out.data);
  ASSERT_EQ(on.seg.groupInfo.size(), 2 * 4 * n.ids.size());
  EXPECT_NE(on.seg.groupInfo.back().tiling.find("output rows [9, 10) of 10 of image 1 of 2"),
            std::string::npos)
      << on.seg.groupInfo.back().tiling;
}

// One band holding every row, and one-row bands: the extremes of the band height.
TEST(DepthFirst, OneBandAndOneRowBands) {
  for (int64_t rows : {1, 100}) {
    SCOPED_TRACE(rows);
    Net n(8, 23, 16);
    ValueId a = n.conv(n.x, 16, 3, 2, 1);
    n.finish(n.conv(a, 8, 3, 1, 1));
    checkForcedBands(n, rows);
  }
}

// --- joins ----------------------------------------------------------------------------------

// MobileNetV2's inverted residual: expand 1x1 -> depthwise 3x3 -> project 1x1 + x. The block
// input is read twice: with the depthwise halo by the expand conv, as the band by the Add.
TEST(DepthFirst, InvertedResidualJoin) {
  Net n(16, 30, 18);
  ValueId a = n.conv(n.x, 64, 1);
  ValueId b = n.conv(a, 64, 3, 1, 1, 1, /*depthwise=*/true);
  ValueId c = n.conv(b, 16, 1, 1, 0, 1, false, false);
  n.finish(n.node(OpKind::Add, "join", {c, n.x}));
  checkForcedBands(n, 4);
}

// ResNet's downsampling bottleneck: 1x1 -> 3x3 stride 2 -> 1x1, plus a 1x1 stride-2 projection
// of the block input, added: the input's reads have different rows (halo against none).
TEST(DepthFirst, DownsamplingResidualJoin) {
  Net n(16, 29, 16);
  ValueId a = n.conv(n.x, 16, 1);
  ValueId b = n.conv(a, 16, 3, 2, 1);
  ValueId c = n.conv(b, 32, 1, 1, 0, 1, false, false);
  ValueId ds = n.conv(n.x, 32, 1, 2, 0, 1, false, false);
  ValueId sum = n.node(OpKind::Add, "join", {c, ds});
  n.finish(n.node(OpKind::Relu, "join.relu", {sum}));
  checkForcedBands(n, 3);
}

// Two ResNet basic blocks in a row: the first block's output is read with the halo of the second
// block's 3x3 conv and as the band by its Add (a crop of the resident tensor).
TEST(DepthFirst, ChainedResidualBlocksReadACrop) {
  Net n(16, 31, 16);
  ValueId cur = n.x;
  for (int blk = 0; blk < 2; ++blk) {
    ValueId a = n.conv(cur, 16, 3, 1, 1);
    ValueId b = n.conv(a, 16, 3, 1, 1, 1, false, false);
    ValueId sum = n.node(OpKind::Add, fmt::format("join{}", blk), {b, cur});
    cur = n.node(OpKind::Relu, fmt::format("join{}.relu", blk), {sum});
  }
  n.finish(cur);
  checkForcedBands(n, 4);
}

// int8 (npu-int8): an inverted residual, then a basic block reading its output with a halo (its
// 3x3 conv) and as the band (its Add: a crop), in bands, with the whole tensors' calibrated
// scales (copies of the block input and crops take their tensor's): the unbanded compile's result
// bit for bit, within one int8 step of the quantised reference.
TEST(DepthFirst, Int8ResidualBlocks) {
  Net n(16, 30, 18);
  ValueId a = n.conv(n.x, 64, 1);
  ValueId b = n.conv(a, 64, 3, 1, 1, 1, /*depthwise=*/true);
  ValueId c = n.conv(b, 16, 1, 1, 0, 1, false, false);
  ValueId block = n.node(OpKind::Add, "join", {c, n.x});
  ValueId d = n.conv(block, 16, 3, 1, 1, 1, false, false);
  n.finish(n.node(OpKind::Add, "join2", {d, block}));
  isa::Target t = isa::loadTarget(configPath("npu-int8.yaml"));
  HostTensor in = inputOf(n);
  auto q = std::make_shared<npu::QuantTable>(npu::calibrate(n.g, {{n.x, in}}, "test input"));
  NpuRun on = run(n, t, in, true, 4, q), off = run(n, t, in, false, 0, q);
  ASSERT_EQ(on.seg.depthFirst.size(), 1u)
      << (on.seg.depthFirstNotes.empty() ? "" : on.seg.depthFirstNotes[0]);
  EXPECT_EQ(on.out.data, off.out.data);
  const HostTensor want = npu::runQuantisedReference(n.g, *q, {{n.x, in}}).at(n.y);
  ASSERT_EQ(want.data.size(), on.out.data.size());
  for (size_t i = 0; i < want.data.size(); ++i)
    ASSERT_LE(std::fabs(on.out.data[i] - want.data[i]), q->of(n.y) * 1.001f) << i;
}

// Two branches joined by a Concat along channels, then a 3x3 conv: each branch computes the
// rows the conv after the Concat needs.
TEST(DepthFirst, ConcatJoin) {
  Net n(8, 26, 16);
  ValueId a = n.conv(n.x, 8, 3, 1, 1);
  ValueId b = n.conv(n.x, 8, 1);
  ValueId cat = n.node(OpKind::Concat, "cat", {a, b}, {{"axis", int64_t(1)}});
  n.finish(n.conv(cat, 8, 3, 1, 1));
  checkForcedBands(n, 4);
}

// --- the decision ---------------------------------------------------------------------------

// npu-base with its DRAM at 4 bytes per cycle: a 3x3 conv to 32 channels of 160 x 160 (1.6 MB of
// fp16, more than L1) then a stride-2 3x3 conv. Whole, the intermediate is written and read
// through DRAM; the cost model runs the chain in bands by itself, which moves at least 90% of that
// traffic less (the input's halo rows and the weights per band are what it reads more) and
// takes fewer cycles. The ablation switch leaves every group on whole tensors.
TEST(DepthFirst, ChosenByCostOnAStarvedTarget) {
  Net n(8, 160, 160);
  ValueId a = n.conv(n.x, 32, 3, 1, 1);
  n.finish(n.conv(a, 16, 3, 2, 1));
  isa::Target t = isa::loadTarget(configPath("npu-base.yaml"));
  t.dram.bytesPerCycle = 4;
  HostTensor in = inputOf(n);
  NpuRun on = run(n, t, in, true), off = run(n, t, in, false);
  ASSERT_EQ(on.seg.depthFirst.size(), 1u)
      << (on.seg.depthFirstNotes.empty() ? "" : on.seg.depthFirstNotes[0]);
  EXPECT_TRUE(off.seg.depthFirst.empty());
  EXPECT_TRUE(off.seg.depthFirstNotes.empty());
  const int64_t spilled = 2 * 32 * 160 * 160 * 2; // written once, read once
  EXPECT_GE(dramOf(off) - dramOf(on), spilled * 9 / 10)
      << "whole " << dramOf(off) << ", bands " << dramOf(on);
  EXPECT_LT(on.stats.totalCycles, off.stats.totalCycles);
  EXPECT_EQ(on.out.data, off.out.data);
  const npu::DepthFirstEntry &e = on.seg.depthFirst[0];
  EXPECT_LT(e.bandDramBytes, e.wholeDramBytes);
  EXPECT_LE(e.bandCycles, e.wholeCycles);
  EXPECT_GT(e.bands, 1);
}

// Intermediates that fit L1 whole stay resident without bands: no chain is a candidate.
TEST(DepthFirst, FittingIntermediatesNeedNoBands) {
  Net n(8, 40, 40);
  ValueId a = n.conv(n.x, 16, 3, 1, 1);
  n.finish(n.conv(a, 16, 3, 1, 1));
  isa::Target t = isa::loadTarget(configPath("npu-base.yaml"));
  HostTensor in = inputOf(n);
  NpuRun on = run(n, t, in, true), off = run(n, t, in, false);
  EXPECT_TRUE(on.seg.depthFirst.empty());
  EXPECT_EQ(on.seg.program.instrs.size(), off.seg.program.instrs.size());
  EXPECT_EQ(on.stats.totalCycles, off.stats.totalCycles);
  EXPECT_EQ(on.out.data, off.out.data);
}

} // namespace
} // namespace npuc::test
