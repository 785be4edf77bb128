// KernelSelectTest.cpp - selectKernel's ordered attempts (npu/kernels/KernelSelect.h) on one
// conv in L1 windows of chosen sizes: the single-buffered retry when double buffers do not fit,
// the Reject of the last attempt when none fits, the loop-nest attempt after the hand-written
// kernel, a forced point's Reject ending the walk, and undo() between attempts.
//
// Expectations come from the tensor-unit space in the same window (npu/schedule/Space.h): the
// smallest window in which its single-buffered default point exists is found by bisection over
// the window's size; there the double-buffered space has no point (two copies of each tile need
// more room), so the default attempt must fail with the space's reason and the single-buffered
// one must lower the space's single-buffered point.
#include "ConvCheck.h"

#include "npu/kernels/KernelSelect.h"
#include "npu/kernels/KernelSpaces.h"

#include <gtest/gtest.h>

namespace npuc::test {
namespace {

using npu::Attempt;
using npu::Schedule;
using npu::Strategy;

const ConvCase kConv{32, 12, 12, 32, 3, 1, 1, 1, 1, true, false};

struct Selector {
  SpaceFixture f{kConv};
  npu::DramCtx d{[](graph::ValueId) { return int64_t(0); },
                 [](const npu::ConstBytes &) { return int64_t(0); },
                 {}}; // every tensor in DRAM, constants nowhere: only decisions matter here
  int undos = 0;

  npu::Window window(int64_t bytes) const {
    npu::Window w;
    w.range[f.hw.l1] = {0, bytes};
    return w;
  }
  std::unique_ptr<npu::KernelSpace> space(int64_t bytes, bool doubleBuffer) const {
    npu::SpaceContext ctx = f.ctx;
    ctx.window = window(bytes);
    ctx.doubleBuffer = doubleBuffer;
    return npu::makeTensorUnitSpace(f.plan, f.cg.g, ctx);
  }
  // The smallest L1 window (a multiple of the level's alignment) in which the single-buffered
  // space has a default point.
  int64_t smallestSingleWindow() const {
    const int64_t align = f.hw.alignment(f.hw.l1);
    int64_t lo = 0, hi = f.hw.capacity(f.hw.l1) / align; // lo fails, hi fits (in alignments)
    EXPECT_TRUE(space(hi * align, false)->defaultPoint());
    while (hi - lo > 1) {
      const int64_t mid = (lo + hi) / 2;
      (space(mid * align, false)->defaultPoint() ? hi : lo) = mid;
    }
    return hi * align;
  }
  npu::Selection select(npu::GroupPlan &p, const npu::KernelOptions &o, int64_t bytes,
                        bool loopNest = true) {
    undos = 0;
    const npu::Window w = window(bytes);
    return npu::selectKernel(p, {.g = f.cg.g,
                                 .grp = f.cg.g.groups.at(0),
                                 .hw = f.hw,
                                 .d = d,
                                 .o = o,
                                 .window = w,
                                 .undo = [this] { ++undos; },
                                 .loopNestFallback = loopNest});
  }
};

TEST(KernelSelect, SingleBuffersWhenDoubleBuffersDoNotFit) {
  Selector s;
  const int64_t bytes = s.smallestSingleWindow();
  Expected<Schedule, npu::Reject> dbl = s.space(bytes, true)->defaultPoint();
  ASSERT_FALSE(dbl) << "double buffers fit where single ones barely do: " << dbl->str();
  Expected<Schedule, npu::Reject> single = s.space(bytes, false)->defaultPoint();
  ASSERT_TRUE(single);
  npu::GroupPlan p = s.f.plan;
  npu::Selection sel = s.select(p, {}, bytes);
  ASSERT_TRUE(sel.kernel.ok()) << sel.kernel.rejectText();
  EXPECT_EQ(sel.by, Attempt::SingleBuffered);
  EXPECT_EQ(sel.kernel.schedule, *single) << sel.kernel.schedule.str();
  EXPECT_FALSE(sel.used.doubleBuffer);
  const std::string suffix = " (double buffers did not fit: " + dbl.error().message + ")";
  ASSERT_GE(sel.kernel.tiling.size(), suffix.size());
  EXPECT_EQ(sel.kernel.tiling.substr(sel.kernel.tiling.size() - suffix.size()), suffix)
      << sel.kernel.tiling;
  EXPECT_EQ(s.undos, 1) << "the failed double-buffered attempt's constants are dropped once";
  EXPECT_TRUE(sel.tunedIgnored.empty());
}

// One alignment below the smallest window, no hand-written tiling fits: without the loop-nest
// fallback the walk ends with the single-buffered attempt's Reject.
TEST(KernelSelect, TheLastAttemptsRejectIsReturned) {
  Selector s;
  const int64_t bytes = s.smallestSingleWindow() - s.f.hw.alignment(s.f.hw.l1);
  Expected<Schedule, npu::Reject> single = s.space(bytes, false)->defaultPoint();
  ASSERT_FALSE(single);
  npu::GroupPlan p = s.f.plan;
  npu::Selection sel = s.select(p, {}, bytes, /*loopNest=*/false);
  ASSERT_FALSE(sel.kernel.ok());
  EXPECT_EQ(sel.by, Attempt::SingleBuffered);
  EXPECT_EQ(sel.kernel.rejectText(), single.error().message);
  EXPECT_EQ(p.kind, npu::KernelKind::Matmul);
  EXPECT_EQ(s.undos, 1);
}

// With the fallback, the loop-nest kernel is tried next: the plan becomes its plan, carrying the
// hand-written kernel's reason, whether or not the loop nest then fits.
TEST(KernelSelect, TheLoopNestKernelComesAfterTheHandWrittenOne) {
  Selector s;
  const int64_t bytes = s.smallestSingleWindow() - s.f.hw.alignment(s.f.hw.l1);
  Expected<Schedule, npu::Reject> single = s.space(bytes, false)->defaultPoint();
  ASSERT_FALSE(single);
  npu::GroupPlan p = s.f.plan;
  npu::Selection sel = s.select(p, {}, bytes);
  EXPECT_EQ(sel.by, Attempt::LoopNest);
  EXPECT_EQ(p.kind, npu::KernelKind::LoopNest);
  EXPECT_EQ(p.handReject, "conv: " + single.error().message);
  EXPECT_EQ(s.undos, 2);
  if (sel.kernel.ok())
    EXPECT_NE(sel.kernel.tiling.find(" (the hand-written kernel found no tiling: conv: "),
              std::string::npos)
        << sel.kernel.tiling;
  else
    EXPECT_EQ(sel.kernel.schedule.strategy, Strategy::LoopNest);
}

// A forced point that does not fit the window is the user's Reject: no other attempt runs.
TEST(KernelSelect, AForcedPointsRejectEndsTheWalk) {
  Selector s;
  const int64_t bytes = s.smallestSingleWindow();
  Expected<Schedule, npu::Reject> whole = s.space(s.f.hw.capacity(s.f.hw.l1), true)->defaultPoint();
  ASSERT_TRUE(whole);
  ASSERT_TRUE(s.space(bytes, true)->whyIllegal(*whole)) << "the whole-L1 point is too big here";
  npu::KernelOptions o;
  o.forced = s.f.fileWith(*whole);
  npu::GroupPlan p = s.f.plan;
  npu::Selection sel = s.select(p, o, bytes);
  ASSERT_FALSE(sel.kernel.ok());
  EXPECT_EQ(sel.by, Attempt::Forced);
  EXPECT_EQ(sel.kernel.rejectText().rfind(
                "the forced schedule " + whole->str() + " does not fit here: ", 0),
            0u)
      << sel.kernel.rejectText();
  EXPECT_EQ(s.undos, 0);
  ASSERT_TRUE(sel.used.schedule);
  EXPECT_EQ(*sel.used.schedule, *whole);
}

// The same point tuned instead of forced is ignored (with the reason) and the default attempts
// run: the single-buffered point here.
TEST(KernelSelect, ATunedPointThatDoesNotFitFallsThrough) {
  Selector s;
  const int64_t bytes = s.smallestSingleWindow();
  Expected<Schedule, npu::Reject> whole = s.space(s.f.hw.capacity(s.f.hw.l1), true)->defaultPoint();
  ASSERT_TRUE(whole);
  std::optional<npu::Reject> why = s.space(bytes, true)->whyIllegal(*whole);
  ASSERT_TRUE(why);
  npu::KernelOptions o;
  o.tuned = s.f.fileWith(*whole);
  npu::GroupPlan p = s.f.plan;
  npu::Selection sel = s.select(p, o, bytes);
  ASSERT_TRUE(sel.kernel.ok()) << sel.kernel.rejectText();
  EXPECT_EQ(sel.by, Attempt::SingleBuffered);
  EXPECT_EQ(sel.tunedIgnored, "tuning record " + whole->str() + " ignored: " + why->message);
  EXPECT_FALSE(sel.used.schedule) << "the default attempts replay without a point";
  EXPECT_EQ(s.undos, 2); // after the tuned attempt, after the double-buffered one
}

} // namespace
} // namespace npuc::test
