// MemoryPlannerTest.cpp - the memory planner (npu/memory/MemoryPlanner.h) and its independent
// checker.
//
// Expected peaks are derived by hand in the comments: the lower bound is the largest total size
// live at one step, and each instance is built so that its optimum is known.
#include "npu/memory/MemoryPlanner.h"

#include "support/Error.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <random>

using namespace npuc;
using npuc::npu::BufferReq;

namespace {

npu::MemoryPlan planChecked(const std::vector<BufferReq> &bufs, int64_t capacity,
                            npu::PlannerOptions opts = {}) {
  npu::MemoryPlan plan = npu::planMemory(bufs, capacity, opts);
  EXPECT_EQ(plan.offsets.size(), bufs.size());
  if (plan.solved) {
    EXPECT_EQ(npu::checkMemoryPlan(bufs, plan.offsets, capacity), "");
    EXPECT_LE(plan.peak, capacity);
  }
  return plan;
}

} // namespace

TEST(MemoryPlanner, EmptyAndDeadBuffers) {
  npu::MemoryPlan plan = planChecked({}, 0);
  EXPECT_TRUE(plan.solved);
  EXPECT_EQ(plan.peak, 0);
  // A zero-size buffer and a never-live one take no memory: capacity 0 still fits.
  plan = planChecked({{0, 5, 0}, {3, 3, 100}}, 0);
  EXPECT_TRUE(plan.solved);
  EXPECT_EQ(plan.peak, 0);
}

TEST(MemoryPlanner, OverlappingBuffersStack) {
  // Both live at step 1: 4 + 6 = 10 bytes is the lower bound, and stacking reaches it.
  npu::MemoryPlan plan = planChecked({{0, 2, 4}, {1, 3, 6}}, 10);
  EXPECT_TRUE(plan.solved);
  EXPECT_EQ(plan.peak, 10);
  EXPECT_EQ(plan.stats.lowerBound, 10);
  EXPECT_NE(plan.offsets[0], plan.offsets[1]);
}

TEST(MemoryPlanner, TouchingLifetimesReuseMemory) {
  // [0, 2) and [2, 4) never overlap (half-open): both can sit at offset 0; peak = 8.
  npu::MemoryPlan plan = planChecked({{0, 2, 8}, {2, 4, 8}, {4, 6, 5}}, 8);
  EXPECT_TRUE(plan.solved);
  EXPECT_EQ(plan.peak, 8);
  EXPECT_EQ(plan.offsets, (std::vector<int64_t>{0, 0, 0}));
}

TEST(MemoryPlanner, OverloadedStepIsInfeasible) {
  // Three buffers live together at step 1 need 12 bytes; capacity 10 cannot hold them.
  npu::MemoryPlan plan = planChecked({{0, 3, 4}, {1, 2, 4}, {1, 4, 4}}, 10);
  EXPECT_FALSE(plan.solved);
  EXPECT_TRUE(plan.stats.provedInfeasible);
  EXPECT_EQ(plan.stats.lowerBound, 12);
  EXPECT_EQ(plan.peak, 12); // the best over-capacity plan is still returned
}

TEST(MemoryPlanner, AlignmentIsHonoured) {
  // Two overlapping 5-byte buffers aligned to 8: offsets 0 and 8, peak 13 (the lower bound
  // 10 is not reachable because of alignment).
  std::vector<BufferReq> bufs = {{0, 2, 5, 8}, {1, 3, 5, 8}};
  npu::MemoryPlan plan = planChecked(bufs, 13);
  EXPECT_TRUE(plan.solved);
  EXPECT_EQ(plan.peak, 13);
  std::vector<int64_t> offs = plan.offsets;
  std::sort(offs.begin(), offs.end());
  EXPECT_EQ(offs, (std::vector<int64_t>{0, 8}));
  // 12 bytes cannot hold them aligned; the planner reports it unsolved.
  plan = planChecked(bufs, 12);
  EXPECT_FALSE(plan.solved);
}

// A perfect packing of a 6-byte x 6-step rectangle, cut by hand into 11 buffers so that every
// step is fully used: the optimum is exactly 6 and every byte must be used. The layout (rows are
// offsets 0..5, columns steps 0..5):
//   offset 5: a a a b b b
//   offset 4: a a a b b b
//   offset 3: c c d d d d
//   offset 2: e f f f g g
//   offset 1: e f f f g g
//   offset 0: h h h i j k
std::vector<BufferReq> perfectPacking() {
  return {
      {0, 3, 2}, // a
      {3, 6, 2}, // b
      {0, 2, 1}, // c
      {2, 6, 1}, // d
      {0, 1, 2}, // e
      {1, 4, 2}, // f
      {4, 6, 2}, // g
      {0, 3, 1}, // h
      {3, 4, 1}, // i
      {4, 5, 1}, // j
      {5, 6, 1}, // k
  };
}

TEST(MemoryPlanner, PerfectPackingFitsExactly) {
  std::vector<BufferReq> bufs = perfectPacking();
  npu::MemoryPlan plan = planChecked(bufs, 6);
  EXPECT_EQ(plan.stats.lowerBound, 6);
  EXPECT_TRUE(plan.solved);
  EXPECT_EQ(plan.peak, 6);
  // One byte less is infeasible (6 bytes are live at every step), and says so.
  plan = planChecked(bufs, 5);
  EXPECT_FALSE(plan.solved);
  EXPECT_TRUE(plan.stats.provedInfeasible);
}

TEST(MemoryPlanner, ExactSearchAloneSolvesPerfectPacking) {
  // The search without the greedy phase: shuffled orders must all find the packing.
  std::vector<BufferReq> bufs = perfectPacking();
  std::mt19937 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    std::shuffle(bufs.begin(), bufs.end(), rng);
    std::vector<int64_t> offs;
    int64_t nodes = 0;
    auto r = npu::detail::searchPlacement(bufs, 6, npu::detail::nowSeconds() + 10, offs, nodes);
    ASSERT_EQ(r, npu::detail::SearchResult::Solved);
    EXPECT_EQ(npu::checkMemoryPlan(bufs, offs, 6), "");
    r = npu::detail::searchPlacement(bufs, 5, npu::detail::nowSeconds() + 10, offs, nodes);
    EXPECT_EQ(r, npu::detail::SearchResult::Infeasible);
  }
}

TEST(MemoryPlanner, MinimizePeakReachesTheLowerBound) {
  // With plenty of capacity the plan only has to fit; asked to minimise, it must reach 6.
  npu::PlannerOptions opts;
  opts.minimizePeak = true;
  for (int64_t capacity : {int64_t(1000), std::numeric_limits<int64_t>::max()}) {
    npu::MemoryPlan plan = planChecked(perfectPacking(), capacity, opts);
    EXPECT_TRUE(plan.solved);
    EXPECT_EQ(plan.peak, 6);
    EXPECT_TRUE(plan.stats.optimal);
  }
}

TEST(MemoryPlanner, BadRequestsNameTheBuffer) {
  try {
    npu::planMemory({{0, 1, 4}, {0, 1, -2}}, 10);
    FAIL() << "negative size accepted";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("buffer 1"), std::string::npos) << e.what();
  }
  EXPECT_THROW(npu::planMemory({{5, 2, 4}}, 10), Error);
  EXPECT_THROW(npu::planMemory({{0, 2, 4, 0}}, 10), Error);
  EXPECT_THROW(npu::planMemory({{0, 2, 4}}, -1), Error);
}

TEST(MemoryPlanChecker, AcceptsValidAndRejectsEachViolation) {
  std::vector<BufferReq> bufs = {{0, 2, 4}, {1, 3, 4}, {2, 4, 4, 4}};
  EXPECT_EQ(npu::checkMemoryPlan(bufs, {0, 4, 0}, 8), "");
  // Buffers 0 and 1 are both live at step 1 and overlap at addresses [2, 4).
  std::string err = npu::checkMemoryPlan(bufs, {0, 2, 4}, 8);
  EXPECT_NE(err.find("buffers 0 and 1 overlap"), std::string::npos) << err;
  // Buffers 0 and 2 share addresses but not time ([0, 2) and [2, 4) only touch): valid.
  EXPECT_EQ(npu::checkMemoryPlan(bufs, {0, 4, 0}, 8), "");
  // Over capacity, misaligned, negative, wrong count.
  EXPECT_NE(npu::checkMemoryPlan(bufs, {0, 5, 0}, 8).find("exceeds capacity"), std::string::npos);
  EXPECT_NE(npu::checkMemoryPlan(bufs, {0, 4, 2}, 8).find("alignment"), std::string::npos);
  EXPECT_NE(npu::checkMemoryPlan(bufs, {-4, 4, 0}, 8).find("negative"), std::string::npos);
  EXPECT_NE(npu::checkMemoryPlan(bufs, {0, 4}, 8), "");
}

TEST(MemoryPlanner, RandomInstancesAgreeWithTheChecker) {
  // Random lifetimes and sizes, planned within their greedy peak's worth of room and within
  // the lower bound: every plan that claims to fit must pass the checker, and a plan can never
  // beat the lower bound.
  std::mt19937 rng(11);
  for (int trial = 0; trial < 30; ++trial) {
    std::vector<BufferReq> bufs;
    int n = 5 + static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) {
      int64_t s = rng() % 30, len = 1 + rng() % 10;
      bufs.push_back({s, s + len, 1 + static_cast<int64_t>(rng() % 64)});
    }
    npu::PlannerOptions opts;
    opts.timeLimitSeconds = 0.2;
    npu::MemoryPlan loose = planChecked(bufs, 1 << 20, opts);
    ASSERT_TRUE(loose.solved);
    EXPECT_GE(loose.peak, loose.stats.lowerBound);
    npu::MemoryPlan tight = planChecked(bufs, loose.stats.lowerBound, opts);
    if (tight.solved) {
      EXPECT_EQ(tight.peak, tight.stats.lowerBound);
    }
  }
}

TEST(MemoryPlanner, MiniMallocInstanceA) {
  // The smallest of the MiniMalloc "challenging" instances (154 buffers, 1 MiB, every byte
  // live at the peak steps), when the shared benchmark folder is present.
  std::filesystem::path file = std::filesystem::path(NPUC_SOURCE_DIR) /
                               "../shared/benchmarks/minimalloc-challenging/A.1048576.csv";
  if (!std::filesystem::exists(file))
    GTEST_SKIP() << file << " not present";
  std::vector<BufferReq> bufs = npu::readBufferCsv(file.string());
  ASSERT_EQ(bufs.size(), 154u);
  npu::PlannerOptions opts;
  opts.timeLimitSeconds = 60;
  npu::MemoryPlan plan = planChecked(bufs, 1048576, opts);
  EXPECT_TRUE(plan.solved);
  EXPECT_EQ(plan.stats.lowerBound, 1048576);
}
