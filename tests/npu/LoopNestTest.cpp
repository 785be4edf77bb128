// LoopNestTest.cpp - the loop-nest kernel (npu/kernels/LowerLoopNest.cpp): groups no hand-written
// kernel takes, compiled through emit-npu for npu-base, simulated with the hazard checker and
// compared with the reference executor (graph::runReference), and the groups it must refuse.
//
// Tolerance (derived): inputs are fp16 values, so copies (transpose, slice, views) are exact;
// an elementwise op computes in fp32 from exact operands and rounds once to fp16, an error of at
// most 2^-11 * |y| (half an ulp of the 11-bit significand) above fp32's own rounding.
#include "NpuTestUtil.h"

#include "graph/Reference.h"

#include <cmath>
#include <fmt/format.h>
#include <gtest/gtest.h>

namespace npuc::test {
namespace {

using graph::Graph;

isa::Target base() {
  return isa::loadTarget(configPath("npu-base.yaml"));
}

// Compiles the single group for npu-base (it must be accepted, by the loop-nest kernel), runs it,
// compares every element with the reference executor and returns the group's tiling text.
std::string checkGroup(const Graph &g, const std::vector<HostTensor> &inputs, bool exact) {
  isa::Target t = base();
  EXPECT_EQ(npu::npuRejectReason(g, g.groups[0], t), "");
  npu::CompileOptions opt;
  opt.chooseLayouts = false; // a lone Transpose stays a copy (not a host-side layout)
  NpuRun r = compileAndRun(g, t, inputs, opt);
  std::map<graph::ValueId, HostTensor> ins;
  for (size_t i = 0; i < inputs.size(); ++i)
    ins[g.inputs[i]] = inputs[i];
  HostTensor want = graph::runReference(g, ins).at(g.outputs[0]);
  EXPECT_EQ(r.out.shape, want.shape);
  for (size_t i = 0; i < want.data.size(); ++i) {
    const double w = want.data[i];
    const double tol = exact ? 0.0 : std::ldexp(std::fabs(w), -11) + 1e-7;
    EXPECT_NEAR(r.out.data[i], w, tol) << "element " << i;
  }
  const npu::GroupInfo &gi = r.seg.groupInfo.at(0);
  if (::testing::Test::HasFailure())
    ADD_FAILURE() << gi.tiling << "\n" << gi.tir << isa::disassemble(t, r.seg.program);
  EXPECT_NE(gi.tiling.find("loop-nest kernel (emit-npu)"), std::string::npos) << gi.tiling;
  EXPECT_NE(gi.tiling.find("; 0 scalar;"), std::string::npos) << gi.tiling;
  int64_t onChip = 0; // the computation itself: vector ops or on-chip copies
  for (const char *m : {"vop", "mov"})
    onChip += gi.instrCounts.count(m) ? gi.instrCounts.at(m) : 0;
  EXPECT_GT(onChip, 0) << gi.tiling;
  return gi.tiling;
}

HostTensor input(const Shape &s, unsigned seed) {
  return HostTensor(s, halves(randomData(static_cast<size_t>(numElements(s)), seed)));
}

TEST(LoopNest, Transpose3dOddSizes) {
  Graph g;
  auto x = g.addValue("x", {7, 13, 5}, graph::DType::F32);
  g.inputs = {x};
  auto y = g.addValue("y", {5, 7, 13}, graph::DType::F32);
  auto n = g.addNode(graph::OpKind::Transpose, "tr", {x}, {y});
  g.node(n).attrs["perm"] = std::vector<int64_t>{2, 0, 1};
  oneGroup(g, y);
  checkGroup(g, {input({7, 13, 5}, 1)}, true);
}

TEST(LoopNest, SliceStepTwo) {
  Graph g;
  auto x = g.addValue("x", {6, 11}, graph::DType::F32);
  g.inputs = {x};
  auto y = g.addValue("y", {5, 5}, graph::DType::F32); // rows 1..9 step 2, columns 1..10 step 2
  auto n = g.addNode(graph::OpKind::Slice, "sl", {x}, {y});
  g.node(n).attrs["starts"] = std::vector<int64_t>{1, 1};
  g.node(n).attrs["ends"] = std::vector<int64_t>{6, 11};
  g.node(n).attrs["axes"] = std::vector<int64_t>{0, 1};
  g.node(n).attrs["steps"] = std::vector<int64_t>{1, 2};
  oneGroup(g, y);
  checkGroup(g, {input({6, 11}, 2)}, true);
}

// [N, C] + [1, C] with both operands computed at run time (a constant row would be an epilogue
// of the hand-written elementwise kernel).
// A [9, 1] tensor broadcast along rows: the hand kernels take per-channel (last-axis) and scalar
// tensor operands only ([1, 21] runs there), so this one goes to the loop-nest kernel.
TEST(LoopNest, AddBroadcastColumn) {
  Graph g;
  auto a = g.addValue("a", {9, 21}, graph::DType::F32);
  auto b = g.addValue("b", {9, 1}, graph::DType::F32);
  g.inputs = {a, b};
  auto y = g.addValue("y", {9, 21}, graph::DType::F32);
  g.addNode(graph::OpKind::Add, "add", {a, b}, {y});
  oneGroup(g, y);
  checkGroup(g, {input({9, 21}, 3), input({9, 1}, 4)}, false);
}

// A spatial mask ([1, 1, H, W]) over a 4-D tensor: no epilogue operand (those are per channel
// or scalar), so the loop-nest kernel runs it, staging both 4-D tensors out of NHWC.
TEST(LoopNest, MulBySpatialMask4d) {
  Graph g;
  auto x = g.addValue("x", {1, 4, 5, 7}, graph::DType::F32);
  auto m = g.addValue("mask", {1, 1, 5, 7}, graph::DType::F32);
  g.inputs = {x, m};
  auto y = g.addValue("y", {1, 4, 5, 7}, graph::DType::F32);
  g.addNode(graph::OpKind::Mul, "spatial", {x, m}, {y});
  oneGroup(g, y);
  EXPECT_EQ(npu::npuRejectReason(g, g.groups[0], base(), /*loopNest=*/false),
            "spatial (Mul): tensor operand mask broadcasts beyond a per-channel vector");
  checkGroup(g, {input({1, 4, 5, 7}, 5), input({1, 1, 5, 7}, 6)}, false);
}

// A constant that broadcasts along rows ([N, 1]) is not a per-channel vector: the hand kernel
// refuses it, the loop-nest kernel stages it as fp32.
TEST(LoopNest, MulByColumnConstant) {
  Graph g;
  auto a = g.addValue("a", {9, 21}, graph::DType::F32);
  g.inputs = {a};
  auto c = g.addConstant("c", {9, 1}, halves(randomData(9, 5)));
  auto y = g.addValue("y", {9, 21}, graph::DType::F32);
  g.addNode(graph::OpKind::Mul, "mul", {a, c}, {y});
  oneGroup(g, y);
  checkGroup(g, {input({9, 21}, 6)}, false);
}

// A sum the nest accumulates in its output: the kernel computes it in an fp32 working copy and
// rounds once. Bound: 37 exact fp16 terms summed in fp32 (<= 37 * 2^-24 * sum|x| <= 2.3e-6 for
// |x| <= 1) plus the final fp16 rounding (2^-11 * |y|); accumulating in fp16 would round every
// partial sum (up to 2^-11 * |partial| each) and miss it.
TEST(LoopNest, ReduceSumAccumulatesInFp32) {
  Graph g;
  auto x = g.addValue("x", {6, 37}, graph::DType::F32);
  g.inputs = {x};
  auto y = g.addValue("y", {6, 1}, graph::DType::F32);
  auto n = g.addNode(graph::OpKind::ReduceSum, "rs", {x}, {y});
  g.node(n).attrs["axes"] = std::vector<int64_t>{1};
  g.node(n).attrs["keepdims"] = int64_t(1);
  oneGroup(g, y);
  isa::Target t = base();
  ASSERT_EQ(npu::npuRejectReason(g, g.groups[0], t), "");
  HostTensor in = input({6, 37}, 10);
  NpuRun r = compileAndRun(g, t, {in});
  for (int64_t i = 0; i < 6; ++i) {
    double want = 0;
    for (int64_t k = 0; k < 37; ++k)
      want += in.data[static_cast<size_t>(i * 37 + k)];
    EXPECT_NEAR(r.out.data[static_cast<size_t>(i)], want, std::ldexp(std::fabs(want), -11) + 3e-6)
        << "row " << i;
  }
  EXPECT_NE(r.seg.groupInfo.at(0).tir.find("y_f32"), std::string::npos) // the fp32 working copy
      << r.seg.groupInfo.at(0).tir;
}

// Neg is x * -1 + 0: a muladd whose immediates become fp32 bit patterns (exact for fp16 inputs).
TEST(LoopNest, NegUsesImmediates) {
  Graph g;
  auto x = g.addValue("x", {5, 7}, graph::DType::F32);
  g.inputs = {x};
  auto y = g.addValue("y", {5, 7}, graph::DType::F32);
  g.addNode(graph::OpKind::Neg, "neg", {x}, {y});
  oneGroup(g, y);
  checkGroup(g, {input({5, 7}, 9)}, true);
}

// 75000 elements: the collapsed loop exceeds npu-base's 16-bit n0, so the kernel splits it
// (75000 = 2 x 37500) before emission; without that the nest would stay scalar.
TEST(LoopNest, LongLoopsAreSplitForTheSizeFields) {
  Graph g;
  auto x = g.addValue("x", {300, 250}, graph::DType::F32);
  g.inputs = {x};
  auto y = g.addValue("y", {300, 250}, graph::DType::F32);
  g.addNode(graph::OpKind::Neg, "neg", {x}, {y});
  oneGroup(g, y);
  checkGroup(g, {input({300, 250}, 11)}, true);
}

// 4-D in and out: NHWC in DRAM, logical NCHW in L1, on both sides of the kernel.
TEST(LoopNest, Transpose4dStagesNhwc) {
  Graph g;
  auto x = g.addValue("x", {1, 3, 5, 7}, graph::DType::F32);
  g.inputs = {x};
  auto y = g.addValue("y", {1, 5, 7, 3}, graph::DType::F32);
  auto n = g.addNode(graph::OpKind::Transpose, "tr", {x}, {y});
  g.node(n).attrs["perm"] = std::vector<int64_t>{0, 2, 3, 1};
  oneGroup(g, y);
  std::string tiling = checkGroup(g, {input({1, 3, 5, 7}, 7)}, true);
  EXPECT_NE(tiling.find("2 staging"), std::string::npos) << tiling; // one load, one store
}

// Two images: one staging DMA per image each way.
TEST(LoopNest, Transpose4dTwoImages) {
  Graph g;
  auto x = g.addValue("x", {2, 3, 5, 4}, graph::DType::F32);
  g.inputs = {x};
  auto y = g.addValue("y", {2, 5, 3, 4}, graph::DType::F32);
  auto n = g.addNode(graph::OpKind::Transpose, "tr", {x}, {y});
  g.node(n).attrs["perm"] = std::vector<int64_t>{0, 2, 1, 3};
  oneGroup(g, y);
  std::string tiling = checkGroup(g, {input({2, 3, 5, 4}, 8)}, true);
  EXPECT_NE(tiling.find("4 staging"), std::string::npos) << tiling;
}

// One DMA per image stages a 4-D tensor, each before the whole computation: up to the token
// queue's depth (32 on npu-base) that runs whole; more would block the load engine on its token
// pushes before dispatch reaches the consumers, a deadlock, so the kernel tiles instead.
// x[N,3,5,4] transposed to [N,5,3,4]: one staging DMA per image on each side.
Graph batchTranspose(int64_t N) {
  Graph g;
  auto x = g.addValue("x", {N, 3, 5, 4}, graph::DType::F32);
  g.inputs = {x};
  auto y = g.addValue("y", {N, 5, 3, 4}, graph::DType::F32);
  auto n = g.addNode(graph::OpKind::Transpose, "tr", {x}, {y});
  g.node(n).attrs["perm"] = std::vector<int64_t>{0, 2, 1, 3};
  oneGroup(g, y);
  return g;
}

TEST(LoopNest, StagingUpToTheTokenQueueDepthRuns) {
  checkGroup(batchTranspose(32), {input({32, 3, 5, 4}, 11)}, true);
}

// Staged whole, 64 images would need 64 DMAs on a side: the tiled path takes over
// (LoopNestTileTest.cpp runs it) and says why whole staging was not used when it cannot tile.
TEST(LoopNest, MoreStagingDmasThanTheTokenQueueGoToTheTiledPath) {
  Graph g = batchTranspose(64);
  EXPECT_EQ(npu::npuRejectReason(g, g.groups[0], base()), "");
}

// An output the nest reads back is computed in an fp32 working copy, reserved once: here input
// (400,000 B fp16) + output (200,000 B) + working copy (400,000 B) fit the 1 MiB L1 only if the
// copy is not counted twice.
TEST(LoopNest, WorkingCopyIsReservedOnce) {
  Graph g;
  auto x = g.addValue("x", {2, 100000}, graph::DType::F32);
  g.inputs = {x};
  auto y = g.addValue("y", {100000}, graph::DType::F32);
  auto n = g.addNode(graph::OpKind::ReduceSum, "rs", {x}, {y});
  g.node(n).attrs["axes"] = std::vector<int64_t>{0};
  g.node(n).attrs["keepdims"] = int64_t(0);
  oneGroup(g, y);
  checkGroup(g, {input({2, 100000}, 12)}, false);
}

// The elementwise kernel tiles along rows of the innermost dimension, and a row of 70000
// exceeds the 16-bit size fields; the loop-nest kernel splits the long loop and runs the group
// (before, a hand-written kernel's tiling failure sent the group to the CPU).
TEST(LoopNest, TakesAGroupTheHandKernelCannotTile) {
  Graph g;
  auto x = g.addValue("x", {2, 70000}, graph::DType::F32);
  g.inputs = {x};
  auto y = g.addValue("y", {2, 70000}, graph::DType::F32);
  g.addNode(graph::OpKind::Relu, "wide", {x}, {y});
  oneGroup(g, y);
  std::string tiling = checkGroup(g, {input({2, 70000}, 13)}, true);
  EXPECT_NE(tiling.find("(the hand-written kernel found no tiling: wide: an elementwise row of "
                        "70000 channels does not fit the on-chip buffers)"),
            std::string::npos)
      << tiling;
}

TEST(LoopNest, SoftmaxStaysOnTheCpuWithItsReason) {
  Graph g;
  auto x = g.addValue("x", {1, 10}, graph::DType::F32);
  g.inputs = {x};
  auto y = g.addValue("y", {1, 10}, graph::DType::F32);
  g.addNode(graph::OpKind::Softmax, "sm", {x}, {y});
  oneGroup(g, y);
  std::string why = npu::npuRejectReason(g, g.groups[0], base());
  EXPECT_EQ(why.rfind("sm (Softmax): the NPU backend has no kernel for Softmax", 0), 0u) << why;
  EXPECT_NE(why.find("; loop-nest kernel: "), std::string::npos) << why;
  EXPECT_NE(why.find("stay scalar: "), std::string::npos) << why;
}

// Softmax and LayerNormalization lower each stage (fill, reduce, finish, output) as one nest over
// every row, the per-row statistics in buffers indexed by row (LowerOptions::statisticsPerRow), so
// a vector instruction covers all rows at once: the instruction count does not grow with the
// rows (it grew by seven per row when each row was a nest of its own). Outputs against the
// reference: exp and the division within a few fp32 ulp (docs/ISA.md), then the fp16 rounding of
// the stored output (2^-11 |y|); LayerNorm's fp32 statistics of 40 fp16 values add a few 1e-6.
TEST(LoopNest, RowWiseOpsCoverEveryRowPerInstruction) {
  isa::Target t = isa::loadTarget(configPath("npu-transformer.yaml"));
  for (graph::OpKind kind : {graph::OpKind::Softmax, graph::OpKind::LayerNormalization}) {
    std::vector<int64_t> vops;
    for (int64_t rows : {6, 48}) {
      SCOPED_TRACE(fmt::format("{} rows of {}", rows, graph::opName(kind)));
      const int64_t C = 40;
      Graph g;
      auto x = g.addValue("x", {rows, C}, graph::DType::F32);
      g.inputs = {x};
      auto y = g.addValue("y", {rows, C}, graph::DType::F32);
      std::vector<graph::ValueId> ins = {x};
      if (kind == graph::OpKind::LayerNormalization) {
        ins.push_back(g.addConstant("scale", {C}, randomData(static_cast<size_t>(C), 3)));
        ins.push_back(g.addConstant("bias", {C}, randomData(static_cast<size_t>(C), 4)));
      }
      auto n = g.addNode(kind, "op", ins, {y});
      g.node(n).attrs["axis"] = int64_t(1);
      oneGroup(g, y);
      ASSERT_EQ(npu::npuRejectReason(g, g.groups[0], t), "");
      HostTensor in = input({rows, C}, 9);
      for (float &v : in.data)
        v *= 4.0f;
      NpuRun r = compileAndRun(g, t, {in});
      HostTensor want = graph::runReference(g, {{x, in}}).at(y);
      for (size_t i = 0; i < want.data.size(); ++i)
        ASSERT_NEAR(r.out.data[i], want.data[i], std::ldexp(std::fabs(want.data[i]), -10) + 2e-5)
            << "element " << i;
      const npu::GroupInfo &gi = r.seg.groupInfo.at(0);
      EXPECT_NE(gi.tiling.find("staged whole"), std::string::npos) << gi.tiling;
      vops.push_back(gi.instrCounts.at("vop"));
    }
    EXPECT_EQ(vops[0], vops[1]) << graph::opName(kind);
    EXPECT_LT(vops[1], 48) << graph::opName(kind); // fewer than one per row
  }
}

// Indices read at run time address the copy: no instruction form has a data-dependent address.
TEST(LoopNest, GatherIsRejectedForDataDependentAddresses) {
  Graph g;
  auto x = g.addValue("x", {5, 3}, graph::DType::F32);
  g.inputs = {x};
  auto idx = g.addConstantI64("idx", {2}, {4, 1});
  auto y = g.addValue("y", {2, 3}, graph::DType::F32);
  g.addNode(graph::OpKind::Gather, "ga", {x, idx}, {y});
  oneGroup(g, y);
  std::string why = npu::npuRejectReason(g, g.groups[0], base());
  EXPECT_NE(why.find("; loop-nest kernel: "), std::string::npos) << why;
  EXPECT_NE(why.find("is addressed by the values of idx (data-dependent indexing)"),
            std::string::npos)
      << why;
}

// 1024 x 640 fp16 in and out: 2.5 MiB of L1 staged whole, npu-base has 1 MiB, so the tiled path
// runs it (LoopNestTileTest.cpp checks its numbers); the whole-path text is not used.
TEST(LoopNest, TooBigForL1IsTiled) {
  Graph g;
  auto x = g.addValue("x", {1024, 640}, graph::DType::F32);
  g.inputs = {x};
  auto y = g.addValue("y", {640, 1024}, graph::DType::F32);
  auto n = g.addNode(graph::OpKind::Transpose, "tr", {x}, {y});
  g.node(n).attrs["perm"] = std::vector<int64_t>{1, 0};
  oneGroup(g, y);
  std::string tiling = checkGroup(g, {input({1024, 640}, 14)}, true);
  EXPECT_NE(tiling.find(", tiled: "), std::string::npos) << tiling;
}

} // namespace
} // namespace npuc::test
