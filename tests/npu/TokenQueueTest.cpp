// TokenQueueTest.cpp - programs from the token pass never deadlock on the bounded queues.
//
// The engines' instruction queues and the token FIFOs (tokens.queue_depth per engine pair) are
// bounded; more tokens outstanding between two engines than both can absorb before the program
// reaches their pops deadlocks the simulator. These tests build that pattern by hand (the
// simulator must report the deadlock), check that insertTokens merges exactly the tokens the
// queues cannot hold, and that whole kernels which produced it (MobileNetV2's features.7.conv.2
// at batch 4) compile, run and match the reference executor.
#include "ConvCheck.h"
#include "NpuTestUtil.h"

#include "graph/Reference.h"
#include "npu/isel/Sync.h"
#include "support/Error.h"

#include <cmath>
#include <gtest/gtest.h>

namespace npuc::test {
namespace {

constexpr int64_t kElems = 64, kBytes = 2 * kElems; // one fp16 row per DMA

/// n loads DRAM -> L1 (disjoint rows), then n movs L1 -> L0a each reading one load's row: every
/// mov needs its load, and all n loads come before the first mov in program order.
isa::Program loadsThenMoves(const isa::Target &t, int64_t n) {
  int dram = t.dramLevel(), l1 = *t.findLevel("l1"), l0a = *t.findLevel("l0a");
  isa::Program p;
  for (int64_t k = 0; k < n; ++k)
    p.instrs.push_back(dma(t, "ld", dram, k * kBytes, l1, k * kBytes, kElems));
  for (int64_t k = 0; k < n; ++k)
    p.instrs.push_back(dma(t, "mov", l1, k * kBytes, l0a, k * kBytes, kElems));
  return p;
}

/// Fills DRAM with a byte pattern, runs `p` with the hazard checker, and checks that L0a holds
/// the n rows the loads brought in (what the program means, independent of its tokens).
void runAndCheckCopies(const isa::Target &t, const isa::Program &p, int64_t n) {
  sim::Memory mem(t, n * kBytes);
  for (size_t b = 0; b < mem.dram().size(); ++b)
    mem.dram()[b] = static_cast<uint8_t>(b * 7 + 3);
  sim::SimOptions o;
  o.check = true;
  ASSERT_NO_THROW(sim::run(t, p, mem, o));
  const std::vector<uint8_t> &l0a = mem.level(*t.findLevel("l0a"));
  for (int64_t b = 0; b < n * kBytes; ++b)
    ASSERT_EQ(l0a[size_t(b)], static_cast<uint8_t>(b * 7 + 3)) << "byte " << b;
}

// npu-base: token FIFOs hold 32, the load engine's queue 16. With the tokens set by hand (every
// load pushes to feed, every mov pops), loads 0..31 push, load 32 waits for a pop, and the
// dispatcher can queue loads 32..47 behind it; with more than 32 + 16 loads it then waits for
// room in the load queue and never reaches the movs that would pop: a deadlock. insertTokens
// must merge exactly the loads beyond 32 + 16 (each merge lets one more load start) and leave
// the tokens of a program that fits alone.
TEST(TokenQueue, MoreTokensThanTheQueuesHoldAreMergedNotDeadlocked) {
  isa::Target t = isa::loadTarget(configPath("npu-base.yaml"));
  const int load = *t.findEngine("load"), feed = *t.findEngine("feed");
  const int64_t fits = t.tokenQueueDepth + t.engines[size_t(load)].queueDepth;
  ASSERT_EQ(fits, 48) << "the derivation above assumes npu-base's depths";
  for (int64_t n : {fits - 8, fits, fits + 1, fits + 16}) {
    SCOPED_TRACE("loads: " + std::to_string(n));
    isa::Program raw = loadsThenMoves(t, n);
    for (int64_t k = 0; k < n; ++k) {
      raw.instrs[size_t(k)].set("push", int64_t(1) << feed);
      raw.instrs[size_t(n + k)].set("pop", int64_t(1) << load);
    }
    const int64_t excess = std::max<int64_t>(0, n - fits);
    sim::Memory mem(t, n * kBytes);
    if (excess > 0) {
      try {
        sim::run(t, raw, mem);
        ADD_FAILURE() << "the simulator ran a program that must deadlock";
      } catch (const npuc::Error &e) {
        std::string msg = e.what();
        EXPECT_NE(msg.find("deadlock"), std::string::npos) << msg;
        EXPECT_NE(msg.find("for room in its token queue to engine 'feed'"), std::string::npos)
            << msg;
      }
      EXPECT_NE(npu::findDeadlock(t, raw).find("for room in its token queue to engine 'feed'"),
                std::string::npos);
    } else {
      EXPECT_NO_THROW(sim::run(t, raw, mem));
      EXPECT_EQ(npu::findDeadlock(t, raw), "");
    }

    isa::Program p = loadsThenMoves(t, n);
    npu::SyncStats st = npu::insertTokens(t, p);
    EXPECT_EQ(st.merged, excess);
    EXPECT_EQ(st.tokens, n - excess);
    EXPECT_EQ(npu::findDeadlock(t, p), "");
    if (excess == 0) // a program that fits keeps one token per mov, as set by hand
      for (size_t i = 0; i < raw.instrs.size(); ++i) {
        EXPECT_EQ(p.instrs[i].get("push"), raw.instrs[i].get("push")) << i;
        EXPECT_EQ(p.instrs[i].get("pop"), raw.instrs[i].get("pop")) << i;
      }
    runAndCheckCopies(t, p, n);
  }
}

// The same with the queues at their smallest (one token per pair, one instruction per engine
// queue): nearly every token is merged, and the copies are still ordered after their loads.
TEST(TokenQueue, DepthOneQueuesStillRunEveryCopyAfterItsLoad) {
  isa::Target t = isa::loadTarget(configPath("npu-base.yaml"));
  t.tokenQueueDepth = 1;
  for (isa::Engine &e : t.engines)
    e.queueDepth = 1;
  const int64_t n = 20;
  isa::Program p = loadsThenMoves(t, n);
  npu::SyncStats st = npu::insertTokens(t, p);
  EXPECT_GT(st.merged, 0);
  EXPECT_EQ(st.tokens + st.merged, n);
  EXPECT_EQ(npu::findDeadlock(t, p), "");
  runAndCheckCopies(t, p, n);
}

// MobileNetV2's features.7.conv.2 (1x1, 192 -> 64 channels, 14x14) at batch 4 on npu-base: the
// input is loaded once per image in k-chunks, k-chunks outermost. Every mov of image i pushes a
// write-after-read token to the load that reuses its L1 row for image i + 2, so two images'
// worth of them (more than the 32 the queue holds) are outstanding before the first such load:
// the compile used to fail with a deadlock in the group's simulation.
TEST(TokenQueue, PointwiseConvAtBatchFourMatchesTheReference) {
  isa::Target t = isa::loadTarget(configPath("npu-base.yaml"));
  const int64_t N = 4, C = 192, H = 14, W = 14, OC = 64;
  graph::Graph g;
  auto x = g.addValue("x", {N, C, H, W}, graph::DType::F32);
  g.inputs = {x};
  auto w = g.addConstant("w", {OC, C, 1, 1}, halves(randomData(OC * C, 31, -0.1f, 0.1f)));
  auto bias = g.addConstant("b", {OC}, randomData(OC, 32));
  auto y = g.addValue("y", {N, OC, H, W}, graph::DType::F32);
  g.addNode(graph::OpKind::Conv, "conv", {x, w, bias}, {y});
  oneGroup(g, y);
  HostTensor in({N, C, H, W}, halves(randomData(N * C * H * W, 33)));
  for (bool bankAware : {true, false}) {
    SCOPED_TRACE(bankAware ? "bank-aware" : "no bank-aware");
    npu::CompileOptions opt;
    opt.bankAware = bankAware;
    // The images outermost, as when the deadlock was found (inside the channel blocks, the
    // default here now, each image's input is loaded per block and never chunked).
    opt.batchWeightReuse = false;
    NpuRun run = compileAndRun(g, t, {in}, opt);
    const std::string &tiling = run.seg.groupInfo.at(0).tiling;
    ASSERT_NE(tiling.find("k-chunks outermost"), std::string::npos) << tiling;
    // The case still needs merges (else it no longer tests them).
    isa::Program again = run.seg.program;
    EXPECT_GT(npu::insertTokens(t, again).merged, 0);
    HostTensor want = graph::runReference(g, {{x, in}}).at(y);
    ASSERT_EQ(run.out.data.size(), want.data.size());
    for (size_t i = 0; i < want.data.size(); ++i) // fp32 sums of 192 exact products, fp16 result
      ASSERT_NEAR(run.out.data[i], want.data[i], std::ldexp(std::fabs(want.data[i]), -10) + 1e-4)
          << i;
  }
}

// Whatever kernel emits the instructions: with every queue at depth 2 (engines and token FIFOs),
// the tokens of these convs (tensor unit, chunked input, depthwise on the vector unit) are merged
// wherever the queues cannot hold them, and each conv still runs under the hazard checker and
// matches ConvCheck.h's fp64 reference.
TEST(TokenQueue, ShallowQueuesKeepConvKernelsCorrect) {
  isa::Target t = isa::loadTarget(configPath("npu-base.yaml"));
  t.tokenQueueDepth = 2;
  for (isa::Engine &e : t.engines)
    e.queueDepth = 2;
  for (ConvCase c : {ConvCase{32, 12, 12, 48, 3, 1, 1, 1, 1, true, true},
                     ConvCase{192, 14, 14, 64, 1, 1, 0, 1, 1, true, false},
                     ConvCase{64, 10, 10, 64, 3, 2, 1, 1, 64, true, true}}) {
    SCOPED_TRACE(::testing::PrintToString(c));
    checkConv(c, t);
  }
}

} // namespace
} // namespace npuc::test
