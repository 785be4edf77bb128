// TunedScheduleTest.cpp - tuned schedules (CompileOptions::tuned, what the auto-tuner's records
// become): soft points that KernelSelect's tuned attempt lowers where they are legal in the
// group's context, and ignores with a warning elsewhere; a forced schedule wins over them.
//
// Expectations are derived from the spaces themselves (npu/schedule/Space.h): a point from
// enumerate() other than defaultPoint() is legal and not the default, so the compile must record
// exactly it; a point one output row taller than the tallest legal one for its other decisions is
// too big for the window (enumerate() stops at the first toh that does not fit), and whyIllegal
// names that reason. Outputs are checked against the fp64 reference (ConvCheck.h) in every case.
#include "ConvCheck.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace npuc::test {
namespace {

using npu::Schedule;
using npu::Strategy;

// A 3x3 conv whose tensor-unit space has many legal points.
const ConvCase kConv{16, 8, 8, 32, 3, 1, 1, 1, 1, true, true};

// A legal point of the fixture's tensor-unit space that is not its default: single-buffered
// (the default double-buffers wherever it can) with the smallest tile that enumerate() lists.
Schedule nonDefaultPoint(const SpaceFixture &f) {
  auto space = f.space(Strategy::TensorUnit);
  Expected<Schedule, npu::Reject> dflt = space->defaultPoint();
  EXPECT_TRUE(dflt);
  EXPECT_EQ(dflt->get("buffers"), 2);
  for (const Schedule &s : space->enumerate())
    if (s.get("buffers") == 1 && s != *dflt)
      return s;
  ADD_FAILURE() << "no single-buffered point";
  return *dflt;
}

npu::GroupInfo compileWith(const ConvCase &c, const SpaceFixture &f, npu::CompileOptions opt,
                           npu::Segment &seg) {
  checkConvWith(c, f.t, std::move(opt), seg);
  EXPECT_EQ(seg.groupInfo.size(), 1u);
  return seg.groupInfo.empty() ? npu::GroupInfo{} : seg.groupInfo.front();
}

TEST(TunedSchedule, ALegalPointIsLoweredAndMatchesTheReference) {
  SpaceFixture f(kConv);
  const Schedule pt = nonDefaultPoint(f);
  npu::CompileOptions opt;
  opt.tuned = f.fileWith(pt);
  npu::Segment seg;
  npu::GroupInfo gi = compileWith(kConv, f, opt, seg);
  EXPECT_EQ(gi.schedule, pt) << gi.schedule.str() << " vs " << pt.str();
  EXPECT_NE(gi.tiling.find("single-buffered"), std::string::npos) << gi.tiling;
  EXPECT_NE(gi.tiling.find(" (tuned)"), std::string::npos) << gi.tiling;
  EXPECT_TRUE(seg.warnings.empty()) << seg.warnings.front();
}

// Without tuned points nothing changes: the default point, no warning.
TEST(TunedSchedule, WithoutRecordsTheDefaultIsLowered) {
  SpaceFixture f(kConv);
  npu::Segment seg;
  npu::GroupInfo gi = compileWith(kConv, f, {}, seg);
  Expected<Schedule, npu::Reject> dflt = f.space(Strategy::TensorUnit)->defaultPoint();
  ASSERT_TRUE(dflt);
  EXPECT_EQ(gi.schedule, *dflt);
  EXPECT_EQ(gi.tiling.find("(tuned)"), std::string::npos) << gi.tiling;
  EXPECT_TRUE(seg.warnings.empty());
}

// The accumulator holds toh x 32 x toc fp32 values: with 64 output channels of a 32x32 image,
// the tallest tiles do not fit in it.
TEST(TunedSchedule, APointTooBigForTheWindowIsIgnoredWithAWarning) {
  const ConvCase c{8, 32, 32, 64, 3, 1, 1, 1, 1, true, false};
  SpaceFixture f(c);
  auto space = f.space(Strategy::TensorUnit);
  std::optional<Schedule> tooBig;
  std::optional<npu::Reject> why;
  for (const Schedule &s : space->enumerate()) {
    Schedule taller = s;
    taller.set("toh", s.get("toh") + 1);
    if (taller.get("toh") > 32)
      continue;
    if (std::optional<npu::Reject> r = space->whyIllegal(taller);
        r && r->kind == npu::RejectKind::Capacity) {
      tooBig = taller;
      why = r;
      break;
    }
  }
  ASSERT_TRUE(tooBig) << "some tile is too tall for the accumulator";
  npu::CompileOptions opt;
  opt.tuned = f.fileWith(*tooBig);
  npu::Segment seg;
  npu::GroupInfo gi = compileWith(c, f, opt, seg);
  Expected<Schedule, npu::Reject> dflt = space->defaultPoint();
  ASSERT_TRUE(dflt);
  EXPECT_EQ(gi.schedule, *dflt) << gi.schedule.str();
  EXPECT_EQ(gi.tiling.find("(tuned)"), std::string::npos) << gi.tiling;
  ASSERT_EQ(seg.warnings.size(), 1u);
  EXPECT_EQ(seg.warnings[0],
            "group 'conv': tuning record " + tooBig->str() + " ignored: " + why->message);
  EXPECT_NE(seg.warnings[0].find("does not fit"), std::string::npos) << seg.warnings[0];
}

// The next fastest records of the key (what --tuning-log passes besides the best): where the best
// point does not fit, the first alternative that does is lowered, with no warning; an alternative
// that does not fit either is skipped.
TEST(TunedSchedule, AnAlternativeIsLoweredWhereTheBestDoesNotFit) {
  const ConvCase c{8, 32, 32, 64, 3, 1, 1, 1, 1, true, false};
  SpaceFixture f(c);
  auto space = f.space(Strategy::TensorUnit);
  std::vector<Schedule> tooBig;
  for (const Schedule &s : space->enumerate()) {
    Schedule taller = s;
    taller.set("toh", s.get("toh") + 1);
    if (taller.get("toh") <= 32 && std::find(tooBig.begin(), tooBig.end(), taller) == tooBig.end())
      if (std::optional<npu::Reject> r = space->whyIllegal(taller);
          r && r->kind == npu::RejectKind::Capacity)
        tooBig.push_back(taller);
  }
  ASSERT_GE(tooBig.size(), 2u) << "some tiles are too tall for the accumulator";
  const Schedule alt = nonDefaultPoint(f);
  auto file = std::make_shared<npu::ScheduleFile>();
  file->put(f.key, tooBig[0], "conv");
  file->alternativesOf(f.key) = {tooBig[1], alt};
  npu::CompileOptions opt;
  opt.tuned = file;
  npu::Segment seg;
  npu::GroupInfo gi = compileWith(c, f, opt, seg);
  EXPECT_EQ(gi.schedule, alt) << gi.schedule.str() << " vs " << alt.str();
  EXPECT_NE(gi.tiling.find("(tuned: the record ranked 3 of the key; " + tooBig[0].str() +
                           " did not fit: "),
            std::string::npos)
      << gi.tiling;
  EXPECT_TRUE(seg.warnings.empty()) << seg.warnings.front();
}

// A record for another kind of kernel (the model changed since it was tuned) is ignored too.
TEST(TunedSchedule, AnotherStrategyIsIgnoredWithAWarning) {
  SpaceFixture f(kConv);
  Schedule pool;
  pool.strategy = Strategy::Pool;
  pool.set("buffers", 1).set("tc", 16).set("toh", 1);
  npu::CompileOptions opt;
  opt.tuned = f.fileWith(pool);
  npu::Segment seg;
  npu::GroupInfo gi = compileWith(kConv, f, opt, seg);
  EXPECT_EQ(gi.schedule.strategy, Strategy::TensorUnit);
  ASSERT_EQ(seg.warnings.size(), 1u);
  EXPECT_EQ(seg.warnings[0], "group 'conv': tuning record pool{buffers=1,tc=16,toh=1} ignored: "
                             "strategy 'pool' is not one of this group's (tensor-unit)");
}

// The sketch: a depthwise conv whose default runs on the vector unit takes a tuned point on the
// tensor unit (one of its strategies).
TEST(TunedSchedule, ADepthwiseConvTakesATensorUnitPoint) {
  const ConvCase c{24, 7, 7, 24, 3, 1, 1, 1, 24, true, false};
  SpaceFixture f(c);
  Expected<Schedule, npu::Reject> pt = f.space(Strategy::TensorUnit)->defaultPoint();
  ASSERT_TRUE(pt);
  npu::CompileOptions opt;
  opt.tuned = f.fileWith(*pt);
  npu::Segment seg;
  npu::GroupInfo gi = compileWith(c, f, opt, seg);
  EXPECT_EQ(gi.schedule, *pt);
  EXPECT_EQ(gi.tiling.rfind("implicit GEMM", 0), 0u) << gi.tiling;
  EXPECT_NE(gi.tiling.find(" (tuned)"), std::string::npos) << gi.tiling;
}

TEST(TunedSchedule, TheForcedPointWins) {
  SpaceFixture f(kConv);
  const Schedule tuned = nonDefaultPoint(f);
  Expected<Schedule, npu::Reject> forced = f.space(Strategy::TensorUnit)->defaultPoint();
  ASSERT_TRUE(forced);
  ASSERT_NE(tuned, *forced);
  npu::CompileOptions opt;
  opt.tuned = f.fileWith(tuned);
  opt.schedules = f.fileWith(*forced);
  npu::Segment seg;
  npu::GroupInfo gi = compileWith(kConv, f, opt, seg);
  EXPECT_EQ(gi.schedule, *forced) << gi.schedule.str();
  EXPECT_NE(gi.tiling.find("(forced by the schedule file)"), std::string::npos) << gi.tiling;
  EXPECT_EQ(gi.tiling.find("(tuned)"), std::string::npos) << gi.tiling;
  EXPECT_TRUE(seg.warnings.empty());
}

// The bank-aware placement re-lowers the kernel at the placement it chose; it must lower the
// tuned point again (placeForBanks asserts that the re-lowered program is the relocated one).
TEST(TunedSchedule, BankPlacementReplaysTheTunedPoint) {
  SpaceFixture f(kConv);
  const Schedule pt = nonDefaultPoint(f);
  npu::CompileOptions opt;
  opt.tuned = f.fileWith(pt);
  opt.bankAlwaysMove = true;
  npu::Segment seg;
  npu::GroupInfo gi = compileWith(kConv, f, opt, seg);
  ASSERT_FALSE(gi.bank.change.empty()) << "the placement moved a buffer, so it re-lowered";
  EXPECT_EQ(gi.schedule, pt) << gi.schedule.str();
}

} // namespace
} // namespace npuc::test
