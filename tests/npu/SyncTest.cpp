// SyncTest.cpp - the token pass: conflicting accesses get exactly one token, independent ones
// none, and knowledge gained through a third engine is not re-synchronised.
#include "NpuTestUtil.h"

#include "npu/isel/Sync.h"

#include <gtest/gtest.h>

namespace npuc::test {
namespace {

TEST(Sync, RawGetsOneTokenAndDisjointGetsNone) {
  isa::Target t = isa::loadTarget(configPath("npu-base.yaml"));
  int dram = t.dramLevel(), l1 = *t.findLevel("l1"), l0a = *t.findLevel("l0a");
  int load = *t.findEngine("load"), feed = *t.findEngine("feed");
  isa::Program p;
  p.instrs.push_back(dma(t, "ld", dram, 0, l1, 0, 64));      // writes l1[0,128)
  p.instrs.push_back(dma(t, "ld", dram, 0, l1, 4096, 64));   // writes l1[4096,..)
  p.instrs.push_back(dma(t, "mov", l1, 4096, l0a, 0, 64));   // reads the second load only
  p.instrs.push_back(dma(t, "mov", l1, 1024, l0a, 512, 64)); // touches neither
  npu::SyncStats s = npu::insertTokens(t, p);
  EXPECT_EQ(s.tokens, 1);
  EXPECT_EQ(p.instrs[0].get("push"), 0);
  EXPECT_EQ(p.instrs[1].get("push"), int64_t(1) << feed);
  EXPECT_EQ(p.instrs[2].get("pop"), int64_t(1) << load);
  EXPECT_EQ(p.instrs[3].get("pop"), 0);
}

TEST(Sync, WarOrdersReuseOfABuffer) {
  isa::Target t = isa::loadTarget(configPath("npu-base.yaml"));
  int dram = t.dramLevel(), l1 = *t.findLevel("l1"), l0a = *t.findLevel("l0a");
  int load = *t.findEngine("load"), feed = *t.findEngine("feed");
  isa::Program p;
  p.instrs.push_back(dma(t, "ld", dram, 0, l1, 0, 64));
  p.instrs.push_back(dma(t, "mov", l1, 0, l0a, 0, 64));
  p.instrs.push_back(dma(t, "ld", dram, 512, l1, 0, 64)); // overwrites what the mov reads
  npu::insertTokens(t, p);
  EXPECT_EQ(p.instrs[1].get("push"), int64_t(1) << load);
  EXPECT_EQ(p.instrs[2].get("pop"), int64_t(1) << feed);
  // And the program runs without deadlock on the simulator.
  sim::Memory mem(t, 4096);
  EXPECT_NO_THROW(sim::run(t, p, mem));
}

} // namespace
} // namespace npuc::test
