// FamilySpacesTest.cpp - the schedule spaces of the batched matmul, pooling, global pooling,
// elementwise, Concat, loop-nest and view kernels (npu/kernels/*Space.cpp), on small shapes (the
// tensor-unit and depthwise spaces: ScheduleSpaceTest.cpp).
//
// For each family: the space enumerates legal points (a fixed-seed sample when large); every
// point, forced through CompileOptions::schedules as `npuc compile --schedule` does, lowers to a
// program the simulator runs with its hazard checker on, whose output matches the reference
// executor, and the group reports that point as its schedule; cost() is pure (the same value
// again, before and after lowering); defaultPoint() is the point the default compile records,
// and for shapes small enough to fit whole it is the one-tile point derived here by hand.
//
// Tolerance (derived): inputs are fp16 values. Copies (concat, transpose, max) are exact. An
// elementwise op, an average or a sum computes in fp32 from exact operands and rounds once to
// fp16: 2^-11 |y|, plus fp32's own rounding per op (2^-24 relative of the operands' magnitude,
// at most `terms` of them). A matrix product of K terms of magnitude <= 1 differs from the
// reference only by the fp32 summation order: 2 K 2^-24 K. A wrong index is off by O(1).
#include "NpuTestUtil.h"

#include "graph/Reference.h"
#include "npu/kernels/Plan.h"
#include "npu/schedule/Space.h"

#include <cmath>
#include <gtest/gtest.h>

namespace npuc::test {
namespace {

using graph::Graph;
using graph::ValueId;

struct Built {
  Graph g;
  std::vector<HostTensor> inputs;
  double terms = 1; // fp32 operations summed into one output (the tolerance's K)
};

ValueId addInput(Built &b, const std::string &name, const Shape &s) {
  ValueId v = b.g.addValue(name, s, graph::DType::F32);
  b.g.inputs.push_back(v);
  b.inputs.emplace_back(s, halves(randomData(static_cast<size_t>(numElements(s)),
                                             static_cast<unsigned>(40 + b.inputs.size()))));
  return v;
}

Built maxPool() {
  Built b;
  ValueId x = addInput(b, "x", {1, 20, 9, 9});
  ValueId y = b.g.addValue("y", {1, 20, 5, 5}, graph::DType::F32);
  auto n = b.g.addNode(graph::OpKind::MaxPool, "pool", {x}, {y});
  b.g.node(n).attrs["kernel_shape"] = std::vector<int64_t>{3, 3};
  b.g.node(n).attrs["strides"] = std::vector<int64_t>{2, 2};
  b.g.node(n).attrs["pads"] = std::vector<int64_t>{1, 1, 1, 1};
  oneGroup(b.g, y);
  return b;
}

Built averagePool() {
  Built b;
  ValueId x = addInput(b, "x", {1, 12, 8, 8});
  ValueId y = b.g.addValue("y", {1, 12, 4, 4}, graph::DType::F32);
  auto n = b.g.addNode(graph::OpKind::AveragePool, "pool", {x}, {y});
  b.g.node(n).attrs["kernel_shape"] = std::vector<int64_t>{2, 2};
  b.g.node(n).attrs["strides"] = std::vector<int64_t>{2, 2};
  oneGroup(b.g, y);
  b.terms = 4;
  return b;
}

Built globalPool() {
  Built b;
  ValueId x = addInput(b, "x", {1, 24, 5, 5});
  ValueId y = b.g.addValue("y", {1, 24, 1, 1}, graph::DType::F32);
  b.g.addNode(graph::OpKind::GlobalAveragePool, "gap", {x}, {y});
  oneGroup(b.g, y);
  b.terms = 25;
  return b;
}

// x + r, then Relu: a residual operand staged per tile.
Built addRelu() {
  Built b;
  ValueId x = addInput(b, "x", {1, 16, 6, 6});
  ValueId r = addInput(b, "r", {1, 16, 6, 6});
  ValueId s = b.g.addValue("s", {1, 16, 6, 6}, graph::DType::F32);
  b.g.addNode(graph::OpKind::Add, "add", {x, r}, {s});
  ValueId y = b.g.addValue("y", {1, 16, 6, 6}, graph::DType::F32);
  b.g.addNode(graph::OpKind::Relu, "relu", {s}, {y});
  oneGroup(b.g, y);
  b.terms = 2;
  return b;
}

Built concat() {
  Built b;
  ValueId x0 = addInput(b, "x0", {1, 8, 5, 5});
  ValueId x1 = addInput(b, "x1", {1, 4, 5, 5});
  ValueId y = b.g.addValue("y", {1, 12, 5, 5}, graph::DType::F32);
  auto n = b.g.addNode(graph::OpKind::Concat, "cat", {x0, x1}, {y});
  b.g.node(n).attrs["axis"] = int64_t(1);
  oneGroup(b.g, y);
  return b;
}

// A batched product with a scale: npu-tiny's 8x8 array gives tn, tk three candidates each.
Built batchMatmul() {
  Built b;
  ValueId a = addInput(b, "a", {2, 9, 20});
  ValueId w = addInput(b, "b", {2, 20, 19});
  ValueId y = b.g.addValue("mm", {2, 9, 19}, graph::DType::F32);
  b.g.addNode(graph::OpKind::MatMul, "matmul", {a, w}, {y});
  ValueId s = b.g.addConstant("scale", {}, {0.5f});
  ValueId z = b.g.addValue("scaled", {2, 9, 19}, graph::DType::F32);
  b.g.addNode(graph::OpKind::Mul, "scale", {y, s}, {z});
  oneGroup(b.g, z);
  b.terms = 2 * 20 * 20;
  return b;
}

// A Transpose no hand-written kernel takes: the loop-nest kernel, whole or in chunks.
Built transpose() {
  Built b;
  ValueId x = addInput(b, "x", {7, 13, 5});
  ValueId y = b.g.addValue("y", {5, 7, 13}, graph::DType::F32);
  auto n = b.g.addNode(graph::OpKind::Transpose, "tr", {x}, {y});
  b.g.node(n).attrs["perm"] = std::vector<int64_t>{2, 0, 1};
  oneGroup(b.g, y);
  return b;
}

struct Family {
  std::string name;
  Built (*build)();
  npu::Strategy strategy;
  const char *target;
  // The default point where one tile holds everything (derived from the shapes), or empty.
  std::map<std::string, int64_t> oneTile;
  friend std::ostream &operator<<(std::ostream &os, const Family &f) { return os << f.name; }
};

npu::CompileOptions options() {
  npu::CompileOptions o;
  o.chooseLayouts = false; // a lone Transpose stays a copy on the NPU
  o.bankAware = false;     // addresses as the space's lowering places them
  return o;
}

// The group's plan, target and context as compileSegment gives them to a lone group: the whole
// of each level, every tensor in DRAM, double buffering allowed.
struct Setup {
  Built b;
  isa::Target t;
  npu::Hw hw;
  npu::GroupPlan plan;
  npu::SpaceContext ctx;
  std::unique_ptr<npu::KernelSpace> space;
};

std::unique_ptr<Setup> setup(const Family &f) {
  auto s = std::make_unique<Setup>();
  s->b = f.build();
  s->t = isa::loadTarget(configPath(f.target));
  EXPECT_EQ(npu::Hw::derive(s->t, s->hw), "");
  s->plan = npu::planGroup(s->b.g, s->b.g.groups[0], s->hw);
  s->ctx.hw = &s->hw;
  s->space = npu::makeSpace(f.strategy, s->plan, s->b.g, s->ctx);
  return s;
}

// Compiles the group with `point` forced (none: the default), runs it and compares with the
// reference. Returns the schedule the group reports.
npu::Schedule runPoint(const Setup &s, const std::optional<npu::Schedule> &point) {
  const Graph &g = s.b.g;
  npu::CompileOptions opt = options();
  if (point) {
    auto file = std::make_shared<npu::ScheduleFile>();
    file->put(npu::scheduleKey(g, g.groups[0], s.t), *point, g.groups[0].name);
    opt.schedules = file;
  }
  NpuRun r = compileAndRun(g, s.t, s.b.inputs, opt); // hazard checker on
  std::map<ValueId, HostTensor> ins;
  for (size_t i = 0; i < s.b.inputs.size(); ++i)
    ins[g.inputs[i]] = s.b.inputs[i];
  HostTensor want = graph::runReference(g, ins).at(g.outputs[0]);
  EXPECT_EQ(r.out.shape, want.shape);
  const npu::GroupInfo &gi = r.seg.groupInfo.at(0);
  const double K = s.b.terms;
  for (size_t i = 0; i < want.data.size(); ++i) {
    const double w = want.data[i];
    const double tol = std::ldexp(std::fabs(w), -11) + 2 * K * std::ldexp(K, -24) + 1e-7;
    if (std::fabs(r.out.data[i] - w) > tol) {
      ADD_FAILURE() << (point ? point->str() : "default") << " element " << i << ": "
                    << r.out.data[i] << " vs " << w << "\n"
                    << gi.tiling;
      break;
    }
  }
  return gi.schedule;
}

class Spaces : public ::testing::TestWithParam<Family> {};

TEST_P(Spaces, EveryPointLowersAndMatchesTheReference) {
  auto s = setup(GetParam());
  ASSERT_TRUE(s->space);
  const std::vector<npu::Schedule> points = s->space->enumerate(12);
  ASSERT_FALSE(points.empty());
  for (const npu::Schedule &p : points) {
    ASSERT_FALSE(s->space->whyIllegal(p)) << p.str();
    EXPECT_EQ(runPoint(*s, p).str(), p.str()) << "the group reports the point it was forced to";
  }
}

TEST_P(Spaces, TheDefaultPointIsTheDefaultCompilesChoice) {
  const Family &f = GetParam();
  auto s = setup(f);
  ASSERT_TRUE(s->space);
  Expected<npu::Schedule, npu::Reject> d = s->space->defaultPoint();
  ASSERT_TRUE(d.has_value()) << d.error().message;
  EXPECT_EQ(d->strategy, f.strategy);
  EXPECT_FALSE(s->space->whyIllegal(*d)) << d->str();
  EXPECT_EQ(runPoint(*s, std::nullopt).str(), d->str());
  if (!f.oneTile.empty()) {
    EXPECT_EQ(d->decisions, f.oneTile) << d->str();
  }
}

TEST_P(Spaces, CostIsPure) {
  auto s = setup(GetParam());
  ASSERT_TRUE(s->space);
  const std::vector<npu::Schedule> points = s->space->enumerate(12);
  std::vector<double> first;
  for (const npu::Schedule &p : points) {
    first.push_back(s->space->cost(p));
    EXPECT_GE(first.back(), 0) << p.str();
  }
  // Lowering a point into a builder does not change what the space says.
  npu::Builder b(s->hw);
  npu::DramCtx d{
      [](ValueId) { return int64_t(0); }, [](const npu::ConstBytes &) { return int64_t(0); }, {}};
  s->space->lower(points.front(), b, d);
  for (size_t i = 0; i < points.size(); ++i)
    EXPECT_EQ(s->space->cost(points[i]), first[i]) << points[i].str();
  EXPECT_EQ(s->space->enumerate(12), points);
}

std::vector<Family> families() {
  using S = npu::Strategy;
  return {
      // One tile: all 20 channels and 5 output rows fit L1 double-buffered.
      {"maxPool", maxPool, S::Pool, "npu-base.yaml", {{"buffers", 2}, {"tc", 20}, {"toh", 5}}},
      {"averagePool", averagePool, S::Pool, "npu-tiny.yaml", {}},
      // The pixel tile doubles while the doubled tile fits: 1, 2, ..., 32, clipped to 25.
      {"globalPool",
       globalPool,
       S::GlobalPool,
       "npu-base.yaml",
       {{"buffers", 2}, {"tc", 24}, {"tp", 25}}},
      // 36 pixels of 16 channels: 64 fits, clipped to 36.
      {"addRelu", addRelu, S::Eltwise, "npu-base.yaml", {{"buffers", 2}, {"tp", 36}}},
      // The buffer holds the larger input's block: 8 x 25 elements.
      {"concat", concat, S::Concat, "npu-base.yaml", {{"buffers", 2}, {"elems", 200}}},
      {"batchMatmul", batchMatmul, S::BatchMatmul, "npu-tiny.yaml", {}},
      // Whole tensors fit L1.
      {"transpose",
       transpose,
       S::LoopNest,
       "npu-base.yaml",
       {{"buffers", 1}, {"chunked", 0}, {"depth", 0}, {"rows", 0}}},
  };
}

INSTANTIATE_TEST_SUITE_P(Families, Spaces, ::testing::ValuesIn(families()), ParamName{});

// The chunked points of the loop-nest space are enumerated and lower too (the sample above may
// hold only some): every legal chunking of the transpose, double- and single-buffered.
TEST(LoopNestSpace, EveryChunkingLowers) {
  Family f{"transpose", transpose, npu::Strategy::LoopNest, "npu-base.yaml", {}};
  auto s = setup(f);
  int chunked = 0;
  for (const npu::Schedule &p : s->space->enumerate()) {
    if (p.get("chunked") == 0)
      continue;
    ++chunked;
    EXPECT_EQ(runPoint(*s, p).str(), p.str());
  }
  EXPECT_GT(chunked, 2);
}

// A value outside a decision's candidates is refused with a message naming the decision.
TEST(BatchMatmulSpace, ATileBeyondTheProductIsIllegal) {
  Family f{"batchMatmul", batchMatmul, npu::Strategy::BatchMatmul, "npu-tiny.yaml", {}};
  auto s = setup(f);
  npu::Schedule p;
  p.strategy = npu::Strategy::BatchMatmul;
  p.set("buffers", 2).set("tm", 9).set("tn", 19).set("tk", 20);
  ASSERT_FALSE(s->space->whyIllegal(p)); // 9x20 and 20x19 fp16 slices fit 16 KiB L0 twice
  p.set("tm", 10);                       // beyond M = 9: not a candidate value
  std::optional<npu::Reject> r = s->space->whyIllegal(p);
  ASSERT_TRUE(r);
  EXPECT_NE(r->message.find("decision 'tm' = 10"), std::string::npos) << r->message;
}

// A k-chunk beyond what L0 holds is a candidate value but not a legal point: npu-tiny's 16 KiB
// L0B holds a 700 x 8 fp16 slice (11200 bytes) once, not a 700 x 19 one (26600 bytes), so with
// tk = K = 700 only tn = 8 fits, single-buffered; the reason is a capacity Reject naming the
// point.
TEST(BatchMatmulSpace, ASliceBeyondL0IsACapacityReject) {
  Family f{"kChunks",
           [] {
             Built b;
             ValueId a = addInput(b, "a", {2, 21, 700});
             ValueId w = addInput(b, "b", {2, 700, 19});
             ValueId y = b.g.addValue("mm", {2, 21, 19}, graph::DType::F32);
             b.g.addNode(graph::OpKind::MatMul, "matmul", {a, w}, {y});
             oneGroup(b.g, y);
             return b;
           },
           npu::Strategy::BatchMatmul,
           "npu-tiny.yaml",
           {}};
  auto s = setup(f);
  npu::Schedule p;
  p.strategy = npu::Strategy::BatchMatmul;
  p.set("buffers", 1).set("tm", 1).set("tn", 8).set("tk", 700);
  EXPECT_FALSE(s->space->whyIllegal(p)) << p.str();
  p.set("buffers", 2);
  std::optional<npu::Reject> r = s->space->whyIllegal(p);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->kind, npu::RejectKind::Capacity);
  p.set("buffers", 1).set("tn", 19);
  r = s->space->whyIllegal(p);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->kind, npu::RejectKind::Capacity);
  EXPECT_NE(r->message.find("batch-matmul{buffers=1,tk=700,tm=1,tn=19} does not fit"),
            std::string::npos)
      << r->message;
  // The default point chunks k instead (a multiple of the array's 8 rows below 700).
  Expected<npu::Schedule, npu::Reject> d = s->space->defaultPoint();
  ASSERT_TRUE(d.has_value());
  EXPECT_LT(d->get("tk"), 700);
  EXPECT_EQ(d->get("tk") % 8, 0);
}

// Views have an empty space: one point without decisions, lowered to no code.
TEST(ViewSpace, OnePointWithoutDecisions) {
  Graph g;
  auto x = g.addValue("x", {2, 3, 4}, graph::DType::F32);
  g.inputs = {x};
  auto shape = g.addConstantI64("shape", {2}, {2, 12});
  auto y = g.addValue("y", {2, 12}, graph::DType::F32);
  g.addNode(graph::OpKind::Reshape, "rs", {x, shape}, {y});
  oneGroup(g, y);
  isa::Target t = isa::loadTarget(configPath("npu-base.yaml"));
  npu::Hw hw;
  ASSERT_EQ(npu::Hw::derive(t, hw), "");
  npu::GroupPlan p = npu::planGroup(g, g.groups[0], hw);
  ASSERT_EQ(p.kind, npu::KernelKind::View);
  npu::SpaceContext ctx;
  ctx.hw = &hw;
  auto space = npu::makeSpace(npu::Strategy::View, p, g, ctx);
  ASSERT_TRUE(space);
  EXPECT_TRUE(space->decisions().empty());
  const std::vector<npu::Schedule> points = space->enumerate();
  ASSERT_EQ(points.size(), 1u);
  EXPECT_TRUE(points[0].decisions.empty());
  EXPECT_EQ(space->cost(points[0]), 0);
}

} // namespace
} // namespace npuc::test
