// ChunkedInputTest.cpp - an input loaded once in k-chunks (npu/kernels/LowerMatmul.cpp,
// chunkedInput).
//
// When one row tile and one channel block cover a conv and k is split into several chunks per
// tap, the input is laid out chunk-major in L1 and loaded by one DMA per chunk, so the first
// matmuls wait only for the first chunk. These cases pick that layout (checked on the tiling
// text, so the test fails if the layout is dropped) and must still match the fp64 reference.
#include "ConvCheck.h"

#include "graph/Reference.h"
#include "npu/isel/Sync.h"

#include <gtest/gtest.h>
#include <regex>

namespace npuc::test {
namespace {

int64_t chunksOf(const std::string &tiling) {
  std::smatch m;
  if (!std::regex_search(tiling, m, std::regex("input loaded once in (\\d+) k-chunks")))
    return 0;
  return std::stoll(m[1]);
}

TEST(ChunkedInput, PointwiseConvWithManyChannels) {
  // MobileNetV2's features.7.conv.2 (14x14, 192 -> 64 channels) and features.12.conv.2
  // (576 -> 96): one tile of rows, several k-chunks of 64.
  isa::Target t = isa::loadTarget(configPath("npu-base.yaml"));
  for (ConvCase c : {ConvCase{192, 14, 14, 64, 1, 1, 0, 1, 1, true, true},
                     ConvCase{576, 14, 14, 96, 1, 1, 0, 1, 1, true, false}}) {
    std::string tiling;
    checkConv(c, t, &tiling);
    SCOPED_TRACE(tiling);
    EXPECT_GT(chunksOf(tiling), 1);
    // 192 -> 64: the 4 blocks' accumulator tiles (196 x 16 fp32, two copies) fit the 128 KiB
    // accumulator, so the k-chunks go outermost; 576 -> 96 would need 6 x 2 tiles (150 KB).
    EXPECT_EQ(tiling.find("k-chunks outermost") != std::string::npos, c.OC == 64);
  }
}

TEST(ChunkedInput, FirstMatmulStartsBeforeTheWholeInputArrives) {
  // x[1,192,14,14] -> 1x1 conv to 64 channels. The input's loads are the DMAs reading the input
  // tensor's DRAM range; with the chunk-major layout the first matmul needs only the first.
  isa::Target t = isa::loadTarget(configPath("npu-base.yaml"));
  graph::Graph g;
  auto x = g.addValue("x", {1, 192, 14, 14}, graph::DType::F32);
  g.inputs = {x};
  auto w = g.addConstant("w", {64, 192, 1, 1}, halves(randomData(64 * 192, 2, -0.1f, 0.1f)));
  auto y = g.addValue("y", {1, 64, 14, 14}, graph::DType::F32);
  g.addNode(graph::OpKind::Conv, "conv", {x, w}, {y});
  oneGroup(g, y);
  HostTensor in({1, 192, 14, 14}, halves(randomData(192 * 14 * 14, 1)));
  npu::Segment seg = npu::compileSegment(g, {0}, t).value();
  ASSERT_GT(chunksOf(seg.groupInfo.at(0).tiling), 1) << seg.groupInfo.at(0).tiling;
  sim::Memory mem(t, seg.dramBytes);
  std::copy(seg.constImage.begin(), seg.constImage.end(), mem.dram().begin() + seg.constBase);
  auto bytes = npu::packTensor(in, seg.inputs.at(0).layout);
  std::copy(bytes.begin(), bytes.end(), mem.dram().begin() + seg.inputs.at(0).addr);
  sim::SimOptions so;
  so.trace = true;
  sim::SimStats st = sim::run(t, seg.program, mem, so);
  const int64_t xlo = seg.inputs.at(0).addr, xhi = xlo + seg.inputs.at(0).bytes();
  int64_t lastInputLoadEnd = -1, firstMatmulStart = INT64_MAX, inputLoads = 0;
  for (const sim::TraceEvent &e : st.trace) {
    const isa::Instr &in = seg.program.instrs.at(size_t(e.index));
    if (e.mnemonic == "mm")
      firstMatmulStart = std::min(firstMatmulStart, e.start);
    if (e.mnemonic != "ld")
      continue;
    for (const npu::Access &a : npu::accessesOf(t, in))
      if (a.level == t.dramLevel() && !a.write && a.lo < xhi && xlo < a.hi) {
        lastInputLoadEnd = std::max(lastInputLoadEnd, e.end);
        ++inputLoads;
      }
  }
  EXPECT_EQ(inputLoads, chunksOf(seg.groupInfo.at(0).tiling));
  EXPECT_LT(firstMatmulStart, lastInputLoadEnd);
}

// k-chunks outermost with two images and a residual Add + Relu fused: every block's accumulator
// tile, weights and residual tile are addressed per image and per block, and the tail (residual
// load, epilogue, store per block) runs after the k loop. Compared with the reference executor.
TEST(ChunkedInput, KOuterWithResidualAndTwoImages) {
  isa::Target t = isa::loadTarget(configPath("npu-base.yaml"));
  const int64_t N = 2, C = 192, H = 14, W = 14, OC = 64;
  graph::Graph g;
  auto x = g.addValue("x", {N, C, H, W}, graph::DType::F32);
  auto res = g.addValue("res", {N, OC, H, W}, graph::DType::F32);
  g.inputs = {x, res};
  auto w = g.addConstant("w", {OC, C, 1, 1}, halves(randomData(OC * C, 21, -0.1f, 0.1f)));
  auto bias = g.addConstant("b", {OC}, randomData(OC, 22));
  auto y = g.addValue("y", {N, OC, H, W}, graph::DType::F32);
  g.addNode(graph::OpKind::Conv, "conv", {x, w, bias}, {y});
  auto s = g.addValue("s", {N, OC, H, W}, graph::DType::F32);
  g.addNode(graph::OpKind::Add, "add", {y, res}, {s});
  auto out = g.addValue("out", {N, OC, H, W}, graph::DType::F32);
  g.addNode(graph::OpKind::Relu, "relu", {s}, {out});
  oneGroup(g, out);
  HostTensor in({N, C, H, W}, halves(randomData(N * C * H * W, 23)));
  HostTensor r({N, OC, H, W}, halves(randomData(N * OC * H * W, 24)));
  NpuRun run = compileAndRun(g, t, {in, r});
  ASSERT_NE(run.seg.groupInfo.at(0).tiling.find("k-chunks outermost"), std::string::npos)
      << run.seg.groupInfo.at(0).tiling;
  HostTensor want = graph::runReference(g, {{x, in}, {res, r}}).at(out);
  for (size_t i = 0; i < want.data.size(); ++i) // fp32 sums of 192 exact products, fp16 result
    ASSERT_NEAR(run.out.data[i], want.data[i], std::ldexp(std::fabs(want.data[i]), -10) + 1e-4)
        << i;
}

// More chunks than the token queue (32) and the load engine's dispatch queue (16) are deep:
// issued back to back before any gather, their loads deadlocked the program (the dispatcher
// waited for load-queue room that only the later movs' token pops could make). Naive tiling
// takes 16-wide k-chunks, so a 1x1 conv over 1024 channels has 64 of them.
TEST(ChunkedInput, ManyChunksDoNotDeadlock) {
  isa::Target t = isa::loadTarget(configPath("npu-base.yaml"));
  const int64_t C = 1024, OC = 40;
  graph::Graph g;
  auto x = g.addValue("x", {1, C, 1, 1}, graph::DType::F32);
  g.inputs = {x};
  auto wdata = halves(randomData(static_cast<size_t>(OC * C), 4, -0.1f, 0.1f));
  auto w = g.addConstant("w", {OC, C, 1, 1}, wdata);
  auto y = g.addValue("y", {1, OC, 1, 1}, graph::DType::F32);
  g.addNode(graph::OpKind::Conv, "conv", {x, w}, {y});
  oneGroup(g, y);
  HostTensor in({1, C, 1, 1}, halves(randomData(static_cast<size_t>(C), 5)));
  npu::CompileOptions opt;
  opt.naiveTiling = true;
  NpuRun r = compileAndRun(g, t, {in}, opt);
  ASSERT_GT(chunksOf(r.seg.groupInfo.at(0).tiling), 32) << r.seg.groupInfo.at(0).tiling;
  for (int64_t oc = 0; oc < OC; ++oc) {
    double sum = 0, mag = 0;
    for (int64_t ic = 0; ic < C; ++ic) {
      double p = double(in.data[size_t(ic)]) * wdata[size_t(oc * C + ic)];
      sum += p;
      mag += std::fabs(p);
    }
    // fp32 sums of exact products, rounded to fp16 (ConvCheck.h's bound).
    ASSERT_NEAR(r.out.data[size_t(oc)], sum,
                std::ldexp(std::fabs(sum), -11) + C * std::ldexp(mag, -24) + 1e-7)
        << oc;
  }
}

} // namespace
} // namespace npuc::test
