// ScheduleSpaceTest.cpp - the tensor-unit and depthwise kernels as schedule spaces
// (npu/schedule/Space.h): every point of a space (a fixed-seed sample where it is large) forced
// through compileSegment lowers to a program the simulator's hazard checker accepts and whose
// outputs match the fp64 reference (ConvCheck.h); cost() is pure; the compile's default records
// defaultPoint(); forced points outside the space are errors naming the decision; and the
// schedule values, keys and files behave as Schedule.h promises.
#include "ConvCheck.h"

#include "npu/kernels/KernelSpaces.h"
#include "npu/kernels/Plan.h"
#include "npu/schedule/Schedule.h"
#include "npu/schedule/Space.h"

#include <gtest/gtest.h>

namespace npuc::test {
namespace {

using npu::Schedule;
using npu::Strategy;

// Every sampled point of `strategy`'s space on case `c` compiles, passes the hazard checker and
// matches the reference; the compile records the forced point. Returns the points checked.
size_t checkEveryPoint(const ConvCase &c, Strategy strategy, size_t limit) {
  SpaceFixture f(c);
  auto space = f.space(strategy);
  std::vector<Schedule> points = space->enumerate(limit);
  for (const Schedule &s : points) {
    SCOPED_TRACE(s.str());
    EXPECT_TRUE(space->legal(s));
    std::string tiling;
    checkConv(c, f.t, &tiling, f.fileWith(s));
    EXPECT_NE(tiling.find("(forced by the schedule file)"), std::string::npos) << tiling;
    EXPECT_EQ(tiling.find("on the vector unit") != std::string::npos,
              strategy == Strategy::DepthwiseVector)
        << tiling;
  }
  return points.size();
}

TEST(TensorUnitSpace, EveryPointOfSmallConvsMatchesTheReference) {
  std::vector<ConvCase> cases = {
      {8, 6, 6, 24, 3, 1, 1, 1, 1, true, true},   // 3x3, padded
      {4, 9, 9, 8, 3, 2, 1, 1, 1, false, true},   // strided
      {40, 4, 4, 24, 1, 1, 0, 1, 1, true, false}, // 1x1 with k-chunks and channel tiles
      {8, 6, 6, 16, 3, 1, 1, 1, 2, true, false},  // grouped
  };
  for (const ConvCase &c : cases) {
    SCOPED_TRACE(::testing::PrintToString(c));
    EXPECT_GE(checkEveryPoint(c, Strategy::TensorUnit, 24), 6u);
  }
  // k-chunks outside the channel blocks (kouter = 1) needs an input loaded once in chunks and
  // several channel blocks: the 1x1 case has such points; the sample above may miss them.
  SpaceFixture f(cases[2]);
  std::vector<Schedule> all = f.space(Strategy::TensorUnit)->enumerate();
  auto kouter =
      std::find_if(all.begin(), all.end(), [](const Schedule &s) { return s.get("kouter") == 1; });
  ASSERT_NE(kouter, all.end());
  std::string tiling;
  checkConv(cases[2], f.t, &tiling, f.fileWith(*kouter));
  EXPECT_NE(tiling.find("k-chunks outermost over"), std::string::npos) << tiling;
}

// Rows outside the output-channel blocks (rowouter = 1): each row tile's input is loaded once and
// every block's weights stream past it, where the blocks-outer order loads the row tile once per
// block. Same products in the same order, so the outputs are bit-identical; the DRAM reads differ
// by the input row tiles read (OCB - 1) times fewer, less the weights read (OHB - 1) times more.
TEST(TensorUnitSpace, RowsOuterLoadsEachInputRowTileOnce) {
  ConvCase c{16, 12, 12, 48, 3, 1, 1, 1, 1, true, true};
  SpaceFixture f(c);
  auto space = f.space(Strategy::TensorUnit);
  std::vector<Schedule> all = space->enumerate();
  auto it = std::find_if(all.begin(), all.end(), [&](const Schedule &s) {
    return s.get("rowouter") == 1 && s.get("toc") == 16 && s.get("toh") == 3 &&
           s.get("tic") == 16 && s.get("buffers") == 2;
  });
  ASSERT_NE(it, all.end());
  const Schedule outer = *it, inner = Schedule(*it).set("rowouter", 0);
  ASSERT_TRUE(space->legal(inner)) << inner.str();
  npu::CompileOptions opt;
  npu::Segment so, si;
  NpuRun ro, ri;
  opt.schedules = f.fileWith(outer);
  checkConvWith(c, f.t, opt, so, &ro); // matches the reference
  opt.schedules = f.fileWith(inner);
  checkConvWith(c, f.t, opt, si, &ri);
  EXPECT_EQ(ro.out.data, ri.out.data);
  const std::string &tiling = so.groupInfo.at(0).tiling;
  EXPECT_NE(tiling.find("4 row tiles outside the 3 output-channel blocks"), std::string::npos)
      << tiling;
  // Row tiles of 3 output rows read input rows [3h - 1, 3h + 4) within the 12: 4 + 5 + 5 + 4.
  const int64_t rowTilesBytes = (4 + 5 + 5 + 4) * c.W * c.C * 2, weightBytes = c.OC * c.C * 9 * 2;
  EXPECT_EQ(ri.stats.dramBytesRead - ro.stats.dramBytesRead,
            (3 - 1) * rowTilesBytes - (4 - 1) * weightBytes);
  // The point's own checks: rows outside need several row tiles and channel blocks.
  Schedule oneBlock = Schedule(outer).set("toc", 48);
  std::optional<npu::Reject> why = space->whyIllegal(oneBlock);
  ASSERT_TRUE(why);
  EXPECT_NE(why->message.find("rowouter = 1 needs more than one row tile"), std::string::npos)
      << why->message;
}

TEST(DepthwiseSpace, EveryPointMatchesTheReference) {
  ConvCase c{24, 7, 7, 24, 3, 1, 1, 1, 24, true, true};
  EXPECT_EQ(checkEveryPoint(c, Strategy::DepthwiseVector, 0), 2u * 2u * 7u); // buffers x tc x toh
}

// The sketch: a depthwise conv forced onto the tensor unit (the default picks the vector unit on
// npu-base) runs there, with the tensor unit's MACs, and still matches.
TEST(DepthwiseSpace, TheSketchCanBeForcedToTheTensorUnit) {
  ConvCase c{24, 7, 7, 24, 3, 1, 1, 1, 24, true, false};
  SpaceFixture f(c);
  ASSERT_EQ(npu::strategiesFor(f.plan, f.hw),
            (std::vector<Strategy>{Strategy::TensorUnit, Strategy::DepthwiseVector}));
  std::string dflt, forced;
  checkConv(c, f.t, &dflt);
  EXPECT_NE(dflt.find("on the vector unit"), std::string::npos) << dflt;
  Expected<Schedule, npu::Reject> pt = f.space(Strategy::TensorUnit)->defaultPoint();
  ASSERT_TRUE(pt);
  checkConv(c, f.t, &forced, f.fileWith(*pt));
  EXPECT_EQ(forced.rfind("implicit GEMM", 0), 0u) << forced;
}

TEST(ScheduleSpaces, CostIsPure) {
  ConvCase c{16, 8, 8, 32, 3, 1, 1, 1, 1, true, true};
  SpaceFixture f(c);
  auto space = f.space(Strategy::TensorUnit);
  std::vector<Schedule> points = space->enumerate(20);
  ASSERT_GE(points.size(), 5u);
  std::vector<double> first;
  for (const Schedule &s : points)
    first.push_back(space->cost(s));
  // Lowering a point into a builder (buffers reserved, constants placed) changes no estimate,
  // and another space over the same group estimates the same.
  npu::Builder b(f.hw);
  npu::DramCtx d{[](graph::ValueId) { return int64_t(0); },
                 [](const npu::ConstBytes &) { return int64_t(0); },
                 {}};
  ASSERT_TRUE(space->lower(points.back(), b, d).ok());
  auto again = f.space(Strategy::TensorUnit);
  for (size_t i = 0; i < points.size(); ++i) {
    EXPECT_EQ(space->cost(points[i]), first[i]) << points[i].str();
    EXPECT_EQ(again->cost(points[i]), first[i]) << points[i].str();
  }
  // Distinct points are distinguished: the model does not return one constant.
  EXPECT_NE(*std::min_element(first.begin(), first.end()),
            *std::max_element(first.begin(), first.end()));
}

// The default compile lowers defaultPoint() and records it; the point is among enumerate()'s.
TEST(ScheduleSpaces, TheCompileRecordsTheDefaultPoint) {
  for (const ConvCase &c : {ConvCase{16, 8, 8, 32, 3, 1, 1, 1, 1, true, true},
                            ConvCase{24, 7, 7, 24, 3, 1, 1, 1, 24, true, false}}) {
    SpaceFixture f(c);
    npu::CompileOptions opt;
    NpuRun r = compileAndRun(f.cg.g, f.t, {f.cg.in}, opt);
    const npu::GroupInfo &gi = r.seg.groupInfo.at(0);
    EXPECT_EQ(gi.scheduleKey, f.key);
    Strategy s = c.G == 1 ? Strategy::TensorUnit : Strategy::DepthwiseVector;
    Expected<Schedule, npu::Reject> pt = f.space(s)->defaultPoint();
    ASSERT_TRUE(pt);
    EXPECT_EQ(gi.schedule, *pt) << gi.schedule.str() << " vs " << pt->str();
    std::vector<Schedule> all = f.space(s)->enumerate();
    EXPECT_NE(std::find(all.begin(), all.end(), *pt), all.end());
  }
}

// The old heuristic's choice for a 3x3 conv of 16 -> 32 channels on 8x8 (a fixture of
// ConvFoldTest's era): one tile of all 8 rows and 32 channels, the k-chunk one kernel row's 16
// channels, double-buffered; the tiling text spells the same numbers.
TEST(ScheduleSpaces, DefaultPointIsTheHeuristicsChoice) {
  ConvCase c{16, 8, 8, 32, 3, 1, 1, 1, 1, true, true};
  SpaceFixture f(c);
  Expected<Schedule, npu::Reject> pt = f.space(Strategy::TensorUnit)->defaultPoint();
  ASSERT_TRUE(pt);
  std::string tiling;
  checkConv(c, f.t, &tiling);
  EXPECT_NE(tiling.find(fmt::format("tile = {} output rows x 8 cols x {} channels", pt->get("toh"),
                                    pt->get("toc"))),
            std::string::npos)
      << tiling << " vs " << pt->str();
  EXPECT_NE(tiling.find(fmt::format("k-chunk {} of", pt->get("tk"))), std::string::npos) << tiling;
  EXPECT_EQ(pt->get("buffers"), 2);
}

TEST(ScheduleSpaces, IllegalPointsNameTheDecisionAndItsValues) {
  ConvCase c{8, 6, 6, 24, 3, 1, 1, 1, 1, true, true};
  SpaceFixture f(c);
  auto space = f.space(Strategy::TensorUnit);
  Schedule s = *space->defaultPoint();
  s.set("toc", 13); // the array has 16 columns: tiles of 16 channels, or the group's 24
  std::optional<npu::Reject> why = space->whyIllegal(s);
  ASSERT_TRUE(why);
  EXPECT_EQ(why->message, "tensor-unit: decision 'toc' = 13 is not one of its values [16, 24]");
  // Through the compile: a ScheduleError naming the group.
  try {
    checkConv(c, f.t, nullptr, f.fileWith(s));
    FAIL() << "an illegal forced point compiled";
  } catch (const npu::ScheduleError &e) {
    EXPECT_EQ(std::string(e.what()),
              "group 'conv': the forced schedule " + s.str() +
                  " is illegal: tensor-unit: decision 'toc' = 13 is not one of its values [16, "
                  "24]");
  }
  // A point too big for the window: capacity, named as such.
  Schedule big = *space->defaultPoint();
  npu::SpaceContext tiny = f.ctx;
  tiny.window.range[f.hw.l1] = {0, 2048};
  std::optional<npu::Reject> cap =
      npu::makeSpace(Strategy::TensorUnit, f.plan, f.cg.g, tiny)->whyIllegal(big);
  ASSERT_TRUE(cap);
  EXPECT_EQ(cap->kind, npu::RejectKind::Capacity);
  // A strategy the group cannot take.
  Schedule pool;
  pool.strategy = Strategy::Pool;
  EXPECT_THROW(checkConv(c, f.t, nullptr, f.fileWith(pool)), npu::ScheduleError);
}

TEST(Schedule, JsonIsStableAndRoundTrips) {
  Schedule s;
  s.strategy = Strategy::TensorUnit;
  s.set("toh", 7).set("buffers", 2).set("toc", 64);
  EXPECT_EQ(s.toJson().dump(),
            R"({"decisions":{"buffers":2,"toc":64,"toh":7},"strategy":"tensor-unit"})");
  Expected<Schedule, std::string> back = Schedule::fromJson(s.toJson());
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, s);
  EXPECT_EQ(Schedule::fromJson(nlohmann::json::parse(R"({"strategy":"tiles"})")).error(),
            "unknown strategy 'tiles' (known: tensor-unit, depthwise-vector, batch-matmul, "
            "attention, pool, "
            "global-pool, eltwise, concat, loop-nest, view)");
  EXPECT_EQ(
      Schedule::fromJson(nlohmann::json::parse(R"({"strategy":"pool","decisions":{"a":1.5}})"))
          .error(),
      "decision 'a' must be an integer");
}

TEST(Schedule, KeysFollowStructureNotNamesOrValues) {
  ConvCase c{8, 6, 6, 24, 3, 1, 1, 1, 1, true, true};
  SpaceFixture a(c), b(c);
  b.cg.g.node(0).name = "another_conv";
  b.cg.g.value(1).f32 = std::make_shared<const std::vector<float>>(b.cg.wdata.size(), 0.5f);
  EXPECT_EQ(npu::groupHash(a.cg.g, a.cg.g.groups[0]), npu::groupHash(b.cg.g, b.cg.g.groups[0]));
  ConvCase wider = c;
  wider.OC = 32;
  SpaceFixture w(wider);
  EXPECT_NE(w.key.group, a.key.group);
  ConvCase strided = c;
  strided.S = 2;
  EXPECT_NE(SpaceFixture(strided).key.group, a.key.group);
  // The target's name and YAML text do not count; its capacities do.
  isa::Target t2 = a.t;
  t2.name = "renamed";
  t2.sourceText += "\n# a comment\n";
  EXPECT_EQ(npu::targetHash(t2), a.key.target);
  t2.levels.at(static_cast<size_t>(a.hw.l1)).size /= 2;
  EXPECT_NE(npu::targetHash(t2), a.key.target);
  EXPECT_NE(a.key.target, npu::targetHash(isa::loadTarget(configPath("npu-32x32.yaml"))));
  std::optional<npu::ScheduleKey> parsed = npu::ScheduleKey::parse(a.key.str());
  ASSERT_TRUE(parsed);
  EXPECT_EQ(*parsed, a.key);
  EXPECT_FALSE(npu::ScheduleKey::parse("0123-4567"));
}

TEST(Schedule, FileErrorsNameTheEntry) {
  auto parse = [](const char *text) {
    return npu::ScheduleFile::fromJson(nlohmann::json::parse(text), "s.json");
  };
  try {
    parse(R"({"version":1,"schedules":[{"key":"xyz","schedule":{"strategy":"pool"}}]})");
    FAIL();
  } catch (const Error &e) {
    EXPECT_EQ(std::string(e.what()),
              "s.json: schedules[0]: key 'xyz' is not <16 hex digits>-<16 hex digits>");
  }
  try {
    parse(R"({"version":1,"schedules":[{"key":"0000000000000001-0000000000000002",)"
          R"("schedule":{"strategy":"pool","decisions":{"x":"big"}}}]})");
    FAIL();
  } catch (const Error &e) {
    EXPECT_EQ(std::string(e.what()),
              "s.json: schedules[0].schedule: decision 'x' must be an integer");
  }
  npu::ScheduleFile f = parse(R"({"version":1,"schedules":[{"key":"0000000000000001-)"
                              R"(0000000000000002","group":"g","schedule":{"strategy":"view"}}]})");
  ASSERT_EQ(f.entries().size(), 1u);
  EXPECT_EQ(f.toJson().dump(),
            R"({"schedules":[{"group":"g","key":"0000000000000001-)"
            R"(0000000000000002","schedule":{"decisions":{},"strategy":"view"}}],)"
            R"("version":1})");
}

} // namespace
} // namespace npuc::test
