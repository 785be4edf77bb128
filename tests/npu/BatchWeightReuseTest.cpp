// BatchWeightReuseTest.cpp - batch > 1: the tensor-unit kernel's `nin` decision runs the images
// inside the output-channel blocks, so that each weight block is loaded once per batch
// (npu/kernels/TensorUnit.h, LowerMatmul.cpp).
//
// Every case runs on the simulator with its hazard checker on and is checked against the fp64
// reference (ConvCheck.h). The DRAM traffic is checked by class (simulator/DramTraffic.h) against
// what the shapes say: with the images inside, no constant byte is read twice; with them
// outermost, the weights are read once per image. Both orders compute the same sums in the same
// order, so their outputs agree bit for bit.
#include "ConvCheck.h"

#include "graph/Passes.h"
#include "graph/Reference.h"
#include "graph/ShapeInference.h"

#include <gtest/gtest.h>

namespace npuc::test {
namespace {

using npu::Schedule;
using npu::Strategy;
using sim::DramClass;

bool imagesInside(const std::string &tiling) {
  return tiling.find("images inside each output-channel block") != std::string::npos;
}

int64_t weightBytes(const ConvCase &c) {
  return c.OC * (c.C / c.G) * c.K * c.kw() * 2; // fp16
}

struct Pair {
  NpuRun on, off;
};

// With reuse (checked against the reference) and without (compared with it bit for bit).
Pair runBoth(const ConvCase &c, const isa::Target &t) {
  Pair p;
  npu::Segment seg;
  checkConvWith(c, t, npu::CompileOptions{}, seg, &p.on);
  npu::CompileOptions off;
  off.doubleBuffer = c.doubleBuffer;
  off.batchWeightReuse = false;
  ConvGraph cg = buildConv(c);
  p.off = compileAndRun(cg.g, t, {cg.in}, off);
  return p;
}

void expectSameOutputs(const NpuRun &a, const NpuRun &b) {
  ASSERT_EQ(a.out.data.size(), b.out.data.size());
  for (size_t i = 0; i < a.out.data.size(); ++i)
    ASSERT_EQ(a.out.data[i], b.out.data[i]) << "element " << i;
}

// Weights larger than the batch's activations (ResNet-50's layer3/layer4 shapes at small
// batches): the default keeps each weight block on chip while the images stream through.
TEST(BatchWeightReuse, WeightsLoadOncePerBatch) {
  isa::Target t = isa::loadTarget(configPath("npu-base.yaml"));
  // 384 channels of 3x3x256 fp16 weights (1.7 MiB) need several output-channel blocks in L1;
  // the smaller cases fit one block.
  ConvCase base{256, 7, 7, 384, 3, 1, 1, 1, 1, true, true};
  base.N = 2;
  std::vector<ConvCase> cases = {base};
  ConvCase strided{192, 9, 9, 256, 3, 2, 1, 1, 1, true, false}; // halo rows, odd size
  strided.N = 3;
  cases.push_back(strided);
  ConvCase single{128, 7, 7, 128, 3, 1, 1, 1, 1, true, true}; // single-buffered: no alternation
  single.N = 2;
  single.doubleBuffer = false;
  cases.push_back(single);
  for (const ConvCase &c : cases) {
    SCOPED_TRACE(::testing::PrintToString(c));
    Pair p = runBoth(c, t);
    if (::testing::Test::HasFatalFailure())
      return;
    const std::string &tiling = p.on.seg.groupInfo.at(0).tiling;
    SCOPED_TRACE(tiling);
    EXPECT_TRUE(imagesInside(tiling));
    EXPECT_FALSE(imagesInside(p.off.seg.groupInfo.at(0).tiling));
    expectSameOutputs(p.on, p.off);
    const int64_t w = weightBytes(c);
    // Inside: every constant byte (weights, bias) read at most once, the weights all of them.
    EXPECT_GE(p.on.stats.dramByClass.readOf(DramClass::Constant), w);
    EXPECT_LE(p.on.stats.dramByClass.readOf(DramClass::Constant),
              int64_t(p.on.seg.constImage.size()));
    // Outermost: the weights once per image.
    EXPECT_GE(p.off.stats.dramByClass.readOf(DramClass::Constant), c.N * w);
    EXPECT_LT(p.on.stats.dramBytesRead, p.off.stats.dramBytesRead);
  }
}

// A layer whose input is larger than its weights and needs several output-channel blocks (the
// accumulator holds 196 x 64 fp32 twice): images inside would reload each image's input per
// block, more than the weights they save, so the default keeps the images outermost.
TEST(BatchWeightReuse, ImagesStayOutermostWhenInputsOutweighWeights) {
  isa::Target t = isa::loadTarget(configPath("npu-base.yaml"));
  ConvCase c{1024, 14, 14, 256, 1, 1, 0, 1, 1, false, false};
  c.N = 2;
  std::string tiling;
  checkConv(c, t, &tiling);
  EXPECT_FALSE(imagesInside(tiling)) << tiling;
}

// Forced onto shapes the default would not pick it for: stride, padding, dilation, groups
// (depthwise too), a 1-row output, the stem's folded 7x7 kernel; the lowering must stay correct
// everywhere and agree bit for bit with the same point with the images outermost.
TEST(BatchWeightReuse, ForcedOnAnyShapeMatchesTheReference) {
  std::vector<ConvCase> cases = {
      {16, 9, 11, 24, 3, 2, 1, 1, 1, true, true},  {8, 12, 12, 16, 3, 1, 2, 2, 1, false, true},
      {32, 8, 8, 32, 3, 1, 1, 1, 2, true, false},  {3, 20, 20, 16, 7, 2, 3, 1, 1, true, true},
      {24, 1, 17, 40, 1, 1, 0, 1, 1, true, false}, {64, 5, 5, 96, 5, 1, 2, 1, 1, false, false},
      {9, 10, 7, 9, 3, 2, 1, 1, 9, true, false},
  };
  for (ConvCase c : cases) {
    c.N = 3;
    SCOPED_TRACE(::testing::PrintToString(c));
    SpaceFixture f(c);
    auto space = f.space(Strategy::TensorUnit);
    Schedule s = *space->defaultPoint();
    s.set("nin", 1).set("kouter", 0);
    ASSERT_FALSE(space->whyIllegal(s)) << space->whyIllegal(s)->message;
    NpuRun inside, outside;
    npu::Segment seg;
    npu::CompileOptions opt;
    opt.schedules = f.fileWith(s);
    checkConvWith(c, f.t, opt, seg, &inside);
    if (::testing::Test::HasFatalFailure())
      return;
    opt.schedules = f.fileWith(Schedule(s).set("nin", 0));
    checkConvWith(c, f.t, opt, seg, &outside);
    if (::testing::Test::HasFatalFailure())
      return;
    EXPECT_TRUE(imagesInside(inside.seg.groupInfo.at(0).tiling));
    EXPECT_FALSE(imagesInside(outside.seg.groupInfo.at(0).tiling));
    expectSameOutputs(inside, outside);
  }
}

TEST(BatchWeightReuse, TheDecisionAndItsLimits) {
  // Batch 1: no such decision (schedules of unbatched groups are unchanged).
  {
    SpaceFixture f(ConvCase{16, 8, 8, 16, 3, 1, 1, 1, 1, false, false});
    for (const npu::Decision &d : f.space(Strategy::TensorUnit)->decisions())
      EXPECT_NE(d.name, "nin");
  }
  ConvCase c{256, 7, 7, 384, 3, 1, 1, 1, 1, true, true};
  c.N = 2;
  SpaceFixture f(c);
  auto space = f.space(Strategy::TensorUnit);
  Schedule s = *space->defaultPoint();
  EXPECT_EQ(s.get("nin"), 1) << s.str();
  // Blocked input channels reload the weights per row tile anyway.
  Schedule blocked = s;
  blocked.set("tic", 240).set("tk", 240).set("khg", 1).set("toh", 1);
  std::optional<npu::Reject> why = space->whyIllegal(blocked);
  ASSERT_TRUE(why);
  EXPECT_EQ(why->message, "tensor-unit: nin = 1 (images inside the output-channel blocks) needs "
                          "one input-channel block (tic = 240 makes 2); legal nin: 0");
  Schedule both = s;
  both.set("kouter", 1);
  why = space->whyIllegal(both);
  ASSERT_TRUE(why);
  EXPECT_NE(why->message.find("kouter = 1 keeps an image's input chunks"), std::string::npos)
      << why->message;
  // The ablation: the option takes the point away.
  npu::SpaceContext off = f.ctx;
  off.batchWeightReuse = false;
  auto spaceOff = npu::makeSpace(Strategy::TensorUnit, f.plan, f.cg.g, off);
  EXPECT_EQ(spaceOff->defaultPoint()->get("nin"), 0);
  why = spaceOff->whyIllegal(s);
  ASSERT_TRUE(why);
  EXPECT_EQ(why->message, "tensor-unit: nin = 1 (images inside the output-channel blocks) is off "
                          "(--no-batch-weight-reuse); legal nin: 0");
}

// A residual block (conv -> + x -> Relu, one group): the residual operand's tiles are loaded
// per image inside the blocks too.
TEST(BatchWeightReuse, ResidualEpilogue) {
  isa::Target t = isa::loadTarget(configPath("npu-base.yaml"));
  const int64_t N = 3, C = 128, H = 7, W = 7;
  graph::Graph g;
  auto x = g.addValue("x", {N, C, H, W}, graph::DType::F32);
  g.inputs = {x};
  auto w = g.addConstant("w", {C, C, 3, 3}, halves(randomData(size_t(C * C * 9), 2, -0.1f, 0.1f)));
  auto y = g.addValue("y", {N, C, H, W}, graph::DType::F32);
  auto conv = g.addNode(graph::OpKind::Conv, "conv", {x, w}, {y});
  g.node(conv).attrs["pads"] = std::vector<int64_t>{1, 1, 1, 1};
  auto s = g.addValue("s", {N, C, H, W}, graph::DType::F32);
  g.addNode(graph::OpKind::Add, "add", {y, x}, {s});
  auto r = g.addValue("r", {N, C, H, W}, graph::DType::F32);
  g.addNode(graph::OpKind::Relu, "relu", {s}, {r});
  oneGroup(g, r);
  HostTensor in({N, C, H, W}, halves(randomData(size_t(N * C * H * W), 1)));
  NpuRun on = compileAndRun(g, t, {in});
  npu::CompileOptions offOpt;
  offOpt.batchWeightReuse = false;
  NpuRun off = compileAndRun(g, t, {in}, offOpt);
  const std::string &tiling = on.seg.groupInfo.at(0).tiling;
  EXPECT_TRUE(imagesInside(tiling)) << tiling;
  EXPECT_NE(tiling.find("1 residual"), std::string::npos) << tiling;
  expectSameOutputs(on, off);
  HostTensor ref = graph::runReference(g, {{x, in}}).at(r);
  double maxRef = 0, maxErr = 0;
  for (size_t i = 0; i < ref.data.size(); ++i) {
    maxRef = std::max(maxRef, double(std::fabs(ref.data[i])));
    maxErr = std::max(maxErr, double(std::fabs(ref.data[i] - on.out.data[i])));
  }
  EXPECT_LT(maxErr, 5e-3 * maxRef) << "max |ref| " << maxRef;
}

} // namespace
} // namespace npuc::test
