// LoopNestTileTest.cpp - the loop-nest kernel's tiled path (npu/kernels/LoopNestTile.cpp): groups
// whose tensors do not fit L1 whole run their outer loop in chunks. Each case compiles one group,
// simulates it with the hazard checker and compares every element with the reference executor
// (graph::runReference), and checks the DRAM traffic against what the shapes say the chunks
// must move (each input region once per chunk that reads it, each output element once).
//
// Tolerance (derived, as in LoopNestTest.cpp): inputs are fp16 values, so copies are exact; an
// elementwise op computes in fp32 from exact operands and rounds once to fp16 (2^-11 * |y|).
#include "NpuTestUtil.h"

#include "graph/Reference.h"
#include "npu/kernels/LoopNestRegion.h"

#include <cmath>
#include <functional>
#include <gtest/gtest.h>

namespace npuc::test {
namespace {

using graph::Graph;

isa::Target target(const char *yaml = "npu-base.yaml") {
  return isa::loadTarget(configPath(yaml));
}

HostTensor input(const Shape &s, unsigned seed) {
  return HostTensor(s, halves(randomData(static_cast<size_t>(numElements(s)), seed)));
}

// Compiles group 0 (it must be accepted, by the loop-nest kernel's tiled path), runs it with the
// hazard checker, compares with the reference within `tol(want)` and checks the DRAM bytes the
// simulator moved. Returns the tiling text.
std::string checkTiled(const Graph &g, const std::vector<HostTensor> &inputs, int64_t dramRead,
                       int64_t dramWritten, const isa::Target &t,
                       const std::function<double(double)> &tol, bool doubleBuffer = true) {
  EXPECT_EQ(npu::npuRejectReason(g, g.groups[0], t), "");
  npu::CompileOptions opt;
  opt.chooseLayouts = false; // a lone Transpose stays a copy (not a host-side layout)
  opt.doubleBuffer = doubleBuffer;
  NpuRun r = compileAndRun(g, t, inputs, opt);
  std::map<graph::ValueId, HostTensor> ins;
  for (size_t i = 0; i < inputs.size(); ++i)
    ins[g.inputs[i]] = inputs[i];
  HostTensor want = graph::runReference(g, ins).at(g.outputs[0]);
  EXPECT_EQ(r.out.shape, want.shape);
  int bad = 0;
  for (size_t i = 0; i < want.data.size() && bad < 10; ++i)
    if (std::fabs(r.out.data[i] - want.data[i]) > tol(want.data[i])) {
      ADD_FAILURE() << "element " << i << ": " << r.out.data[i] << " vs " << want.data[i];
      ++bad;
    }
  const npu::GroupInfo &gi = r.seg.groupInfo.at(0);
  EXPECT_NE(gi.tiling.find("loop-nest kernel (emit-npu)"), std::string::npos) << gi.tiling;
  EXPECT_NE(gi.tiling.find("; 0 scalar;"), std::string::npos) << gi.tiling;
  EXPECT_NE(gi.tiling.find(", tiled: "), std::string::npos) << gi.tiling;
  EXPECT_EQ(r.stats.dramBytesRead, dramRead) << gi.tiling;
  EXPECT_EQ(r.stats.dramBytesWritten, dramWritten) << gi.tiling;
  return gi.tiling;
}

auto exact = [](double) { return 0.0; };
auto rounded = [](double w) { return std::ldexp(std::fabs(w), -11) + 1e-7; };

// vit_b_16's attention slice: columns [768, 1536) of the [197, 2304] QKV output, reshaped to
// heads. Whole: 0.9 MB of input + an fp32 intermediate + the output exceed npu-base's 1 MiB. The
// chunks read only the slice's columns: 197 x 768 fp16 in, the same out.
Graph sliceReshape() {
  Graph g;
  auto x = g.addValue("x", {197, 2304}, graph::DType::F32);
  g.inputs = {x};
  auto s = g.addValue("s", {197, 768}, graph::DType::F32);
  auto n = g.addNode(graph::OpKind::Slice, "sl", {x}, {s});
  // Every axis explicit, as the importer leaves a Slice (tir::lowerGroup reads them so).
  g.node(n).attrs["starts"] = std::vector<int64_t>{0, 768};
  g.node(n).attrs["ends"] = std::vector<int64_t>{197, 1536};
  g.node(n).attrs["axes"] = std::vector<int64_t>{0, 1};
  g.node(n).attrs["steps"] = std::vector<int64_t>{1, 1};
  auto shape = g.addConstantI64("shape", {3}, {197, 12, 64});
  auto y = g.addValue("y", {197, 12, 64}, graph::DType::F32);
  g.addNode(graph::OpKind::Reshape, "rs", {s, shape}, {y});
  oneGroup(g, y);
  return g;
}

TEST(LoopNestTile, SliceOfQkvReadsOnlyItsColumns) {
  Graph g = sliceReshape();
  const int64_t bytes = 197 * 768 * 2;
  checkTiled(g, {input({197, 2304}, 1)}, bytes, bytes, target(), exact);
}

// npu-tiny has 256 KiB of L1: the same group in smaller chunks.
// The `--no-double-buffer` ablation reaches the tiled path too: the same chunks, one buffer each,
// the same bytes moved and the same values.
TEST(LoopNestTile, SingleBufferedWhenDoubleBufferingIsOff) {
  Graph g = sliceReshape();
  const int64_t bytes = 197 * 768 * 2;
  std::string dbl = checkTiled(g, {input({197, 2304}, 1)}, bytes, bytes, target(), exact);
  EXPECT_NE(dbl.find("double-buffered"), std::string::npos) << dbl;
  std::string one = checkTiled(g, {input({197, 2304}, 1)}, bytes, bytes, target(), exact, false);
  EXPECT_NE(one.find("single-buffered"), std::string::npos) << one;
  EXPECT_EQ(one.find("double-buffered"), std::string::npos) << one;
}

TEST(LoopNestTile, SliceOfQkvOnATightL1) {
  Graph g = sliceReshape();
  const int64_t bytes = 197 * 768 * 2;
  checkTiled(g, {input({197, 2304}, 2)}, bytes, bytes, target("npu-tiny.yaml"), exact);
}

// x[2, 320, 1024] + c[320, 1024]: the constant (fp32 on chip, 1.25 MiB) alone exceeds L1. Chunks
// are rows of one image (the batch loop takes one value per chunk), so every image reads the
// constant's rows once: 2 x 320 x 1024 x 4 bytes of constant, x in and y out at 2 bytes.
TEST(LoopNestTile, AddOfABroadcastConstantLargerThanL1) {
  Graph g;
  auto x = g.addValue("x", {2, 320, 1024}, graph::DType::F32);
  g.inputs = {x};
  auto c = g.addConstant("c", {320, 1024}, halves(randomData(320 * 1024, 3)));
  auto y = g.addValue("y", {2, 320, 1024}, graph::DType::F32);
  g.addNode(graph::OpKind::Add, "pos", {x, c}, {y});
  oneGroup(g, y);
  const int64_t n = 2 * 320 * 1024;
  checkTiled(g, {input({2, 320, 1024}, 4)}, n * 2 + n * 4, n * 2, target(), rounded);
}

// x[1000, 2, 300] * c[2, 300]: every chunk of rows reads all of the constant, so it is staged
// once (600 fp32 values read once), not per chunk.
TEST(LoopNestTile, AConstantEveryChunkReadsIsStagedOnce) {
  Graph g;
  auto x = g.addValue("x", {1000, 2, 300}, graph::DType::F32);
  g.inputs = {x};
  auto c = g.addConstant("c", {2, 300}, halves(randomData(600, 10)));
  auto y = g.addValue("y", {1000, 2, 300}, graph::DType::F32);
  g.addNode(graph::OpKind::Mul, "scale", {x, c}, {y});
  oneGroup(g, y);
  const int64_t n = 1000 * 600;
  checkTiled(g, {input({1000, 2, 300}, 11)}, n * 2 + 600 * 4, n * 2, target(), rounded);
}

// A 4-D transpose (NCHW -> NHWC order) of two images of 64 x 48 x 48: 1.1 MiB in and out.
TEST(LoopNestTile, Transpose4dLargerThanL1) {
  Graph g;
  auto x = g.addValue("x", {2, 64, 48, 48}, graph::DType::F32);
  g.inputs = {x};
  auto y = g.addValue("y", {2, 48, 48, 64}, graph::DType::F32);
  auto n = g.addNode(graph::OpKind::Transpose, "tr", {x}, {y});
  g.node(n).attrs["perm"] = std::vector<int64_t>{0, 2, 3, 1};
  oneGroup(g, y);
  const int64_t bytes = 2 * 64 * 48 * 48 * 2;
  checkTiled(g, {input({2, 64, 48, 48}, 5)}, bytes, bytes, target(), exact);
}

// A flat copy out of an NHWC tensor ([1, 320, 32, 32] -> [1, 320, 1024], 640 KiB each way): a
// chunk's region is a box of the NHWC layout only as whole channel planes (W merged into H), so
// the chunks are one plane of 1024 elements each.
TEST(LoopNestTile, FlatCopyOutOfNhwcInChannelPlanes) {
  Graph g;
  auto x = g.addValue("x", {1, 320, 32, 32}, graph::DType::F32);
  g.inputs = {x};
  auto shape = g.addConstantI64("shape", {3}, {1, 320, 1024});
  auto y = g.addValue("y", {1, 320, 1024}, graph::DType::F32);
  g.addNode(graph::OpKind::Reshape, "rs", {x, shape}, {y});
  oneGroup(g, y);
  const int64_t bytes = 320 * 1024 * 2;
  std::string tiling = checkTiled(g, {input({1, 320, 32, 32}, 9)}, bytes, bytes, target(), exact);
  EXPECT_NE(tiling.find("chunk(s) of 1024 of "), std::string::npos) << tiling;
}

// A 2-D transpose of 1024 x 640 (2.5 MiB staged whole): chunks of output rows read column
// ranges of the input, staged compactly.
TEST(LoopNestTile, Transpose2dLargerThanL1) {
  Graph g;
  auto x = g.addValue("x", {1024, 640}, graph::DType::F32);
  g.inputs = {x};
  auto y = g.addValue("y", {640, 1024}, graph::DType::F32);
  auto n = g.addNode(graph::OpKind::Transpose, "tr", {x}, {y});
  g.node(n).attrs["perm"] = std::vector<int64_t>{1, 0};
  oneGroup(g, y);
  const int64_t bytes = 1024 * 640 * 2;
  checkTiled(g, {input({1024, 640}, 6)}, bytes, bytes, target(), exact);
}

// ReduceSum over axis 0 of [1024, 640]: the kept axis (640 columns) is chunked, the reduced one
// never is (its writes would not move with it). Bound: 1024 exact fp16 terms summed in fp32
// (<= 1024 * 2^-24 * sum|x| <= 6.2e-5 for |x| <= 1) plus the final fp16 rounding.
TEST(LoopNestTile, ReductionTiledAlongItsKeptAxis) {
  Graph g;
  auto x = g.addValue("x", {1024, 640}, graph::DType::F32);
  g.inputs = {x};
  auto y = g.addValue("y", {1, 640}, graph::DType::F32);
  auto n = g.addNode(graph::OpKind::ReduceSum, "rs", {x}, {y});
  g.node(n).attrs["axes"] = std::vector<int64_t>{0};
  g.node(n).attrs["keepdims"] = int64_t(1);
  oneGroup(g, y);
  checkTiled(g, {input({1024, 640}, 7)}, 1024 * 640 * 2, 640 * 2, target(),
             [](double w) { return std::ldexp(std::fabs(w), -11) + 6.2e-5; });
}

// 64 images staged whole need 64 DMAs a side, more than npu-base's token queue holds (32): the
// tiled path stages a few images per chunk instead of refusing.
TEST(LoopNestTile, ManyImagesRunInChunksWithinTheTokenQueue) {
  Graph g;
  auto x = g.addValue("x", {64, 3, 5, 4}, graph::DType::F32);
  g.inputs = {x};
  auto y = g.addValue("y", {64, 5, 3, 4}, graph::DType::F32);
  auto n = g.addNode(graph::OpKind::Transpose, "tr", {x}, {y});
  g.node(n).attrs["perm"] = std::vector<int64_t>{0, 2, 1, 3};
  oneGroup(g, y);
  const int64_t bytes = 64 * 3 * 5 * 4 * 2;
  checkTiled(g, {input({64, 3, 5, 4}, 8)}, bytes, bytes, target(), exact);
}

// A row the reduction cannot split (1.3 MiB of one input row) fits no chunk: the reason says so.
TEST(LoopNestTile, NoChunkFitsIsRejectedWithItsNeed) {
  Graph g;
  auto x = g.addValue("x", {2, 700000}, graph::DType::F32);
  g.inputs = {x};
  auto y = g.addValue("y", {2, 1}, graph::DType::F32);
  auto n = g.addNode(graph::OpKind::ReduceSum, "rs", {x}, {y});
  g.node(n).attrs["axes"] = std::vector<int64_t>{1};
  g.node(n).attrs["keepdims"] = int64_t(1);
  oneGroup(g, y);
  std::string why = npu::npuRejectReason(g, g.groups[0], target());
  EXPECT_NE(why.find("loop-nest kernel: whole tensors need at least 2.7 MiB of l1"),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("one chunk of 1 of 2 rows needs 1.3 MiB of l1"), std::string::npos) << why;
  EXPECT_NE(why.find("has 1.0 MiB free"), std::string::npos) << why;
}

// A nest that stays scalar in any chunk (no instruction computes erf) says that first, then why it
// was compiled in chunks.
TEST(LoopNestTile, ScalarNestsAreTheReasonEvenInChunks) {
  Graph g;
  auto x = g.addValue("x", {2, 400000}, graph::DType::F32);
  g.inputs = {x};
  auto y = g.addValue("y", {2, 400000}, graph::DType::F32);
  g.addNode(graph::OpKind::Erf, "erf", {x}, {y});
  oneGroup(g, y);
  std::string why = npu::npuRejectReason(g, g.groups[0], target());
  EXPECT_NE(why.find("loop-nest kernel: 1 nest(s) stay scalar: "), std::string::npos) << why;
  EXPECT_NE(why.find("(in chunks, since whole tensors need at least 3.1 MiB of l1"),
            std::string::npos)
      << why;
}

// The region analysis on hand-written accesses (LoopNestRegion.h): the boxes below follow from
// the index expressions by hand.
namespace region {
using namespace tir;
using npu::loopnest::Access;
using npu::loopnest::Region;

// The accesses of `b` in `s`.
std::vector<Access> accessesOf(const Stmt &s, const Buffer &b) {
  std::string why;
  auto acc = npu::loopnest::accessesOf(s, {b.get()}, why);
  EXPECT_EQ(why, "");
  return acc[b.get()];
}

// B[4, 10] read at i * 10 + j + 5 for i < 4, j < 3: rows 0..3, columns 5..7, every element.
TEST(LoopNestRegion, ASliceReadIsABoxOfItsColumns) {
  Buffer b = Buffer::make("B", DataType::Float(32), {4, 10}), o = Buffer::make("O", b->dtype, {12});
  Var i = Var::make("i"), j = Var::make("j");
  Stmt s = forLoop(
      i, imm(0), imm(4),
      forLoop(j, imm(0), imm(3),
              store(o, load(b, Expr(i) * imm(10) + Expr(j) + imm(5)), Expr(i) * imm(3) + Expr(j))));
  std::vector<Access> xs = accessesOf(s, b);
  ASSERT_EQ(xs.size(), 1u);
  Region r;
  bool dense = false;
  ASSERT_TRUE(npu::loopnest::boxOf(xs[0], b->shape, r, dense));
  EXPECT_EQ(r.lo, (std::vector<int64_t>{0, 5}));
  EXPECT_EQ(r.hi, (std::vector<int64_t>{3, 7}));
  EXPECT_TRUE(dense);
}

// A flat copy's index r * 24 + k (k < 24) over B[2, 4, 6]: the last digit carries (k reaches 23
// in a dimension of 6), so there is no box until W and H merge ([2, 24]): then rows 0..1 whole.
TEST(LoopNestRegion, AFlatIndexCarriesUntilDimensionsMerge) {
  Buffer b = Buffer::make("B", DataType::Float(32), {2, 4, 6}),
         o = Buffer::make("O", b->dtype, {48});
  Var r = Var::make("r"), k = Var::make("k");
  Expr idx = Expr(r) * imm(24) + Expr(k);
  Stmt s = forLoop(r, imm(0), imm(2), forLoop(k, imm(0), imm(24), store(o, load(b, idx), idx)));
  std::vector<Access> xs = accessesOf(s, b);
  ASSERT_EQ(xs.size(), 1u);
  Region box;
  bool dense = false;
  int carry = -1;
  EXPECT_FALSE(npu::loopnest::boxOf(xs[0], b->shape, box, dense, &carry));
  EXPECT_EQ(carry, 2);
  ASSERT_TRUE(npu::loopnest::boxOf(xs[0], {2, 24}, box, dense));
  EXPECT_EQ(box.lo, (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(box.hi, (std::vector<int64_t>{1, 23}));
  EXPECT_TRUE(dense);
}

// Every other element (2 * i, i < 4) spans 0..6 but writes only 4 of its 7 elements: not dense,
// so a chunk's store of the whole box would overwrite the others.
TEST(LoopNestRegion, AStridedWriteIsNotDense) {
  Buffer b = Buffer::make("B", DataType::Float(32), {8});
  Var i = Var::make("i");
  Stmt s = forLoop(i, imm(0), imm(4), store(b, fimm(1.0), Expr(i) * imm(2)));
  std::vector<Access> xs = accessesOf(s, b);
  ASSERT_EQ(xs.size(), 1u);
  Region r;
  bool dense = true;
  ASSERT_TRUE(npu::loopnest::boxOf(xs[0], b->shape, r, dense));
  EXPECT_EQ(r.hi, (std::vector<int64_t>{6}));
  EXPECT_FALSE(dense);
}

// Two chunks writing rows 0..1 and 1..2 of a [4, 8] buffer share row 1.
TEST(LoopNestRegion, ChunksWritingTheSameElementsOverlap) {
  npu::loopnest::Slot s;
  s.ref = Buffer::make("Y", DataType::Float(32), {4, 8});
  s.writes = true;
  s.view = {4, 8};
  s.regions = {Region{true, {0, 0}, {1, 7}}, Region{true, {2, 0}, {3, 7}}};
  EXPECT_EQ(npu::loopnest::overlap({s}), "");
  s.regions[1].lo[0] = 1;
  EXPECT_EQ(npu::loopnest::overlap({s}), "two chunks write the same elements of Y");
  // Out of order, and boxes sharing rows but not columns: disjoint; a box across both meets them.
  s.regions = {Region{true, {2, 0}, {3, 7}}, Region{true, {0, 0}, {1, 3}},
               Region{true, {0, 4}, {1, 7}}};
  EXPECT_EQ(npu::loopnest::overlap({s}), "");
  s.regions.push_back(Region{true, {1, 6}, {2, 6}});
  EXPECT_EQ(npu::loopnest::overlap({s}), "two chunks write the same elements of Y");
}

} // namespace region

} // namespace
} // namespace npuc::test
