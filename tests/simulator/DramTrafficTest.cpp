// DramTrafficTest.cpp - DRAM bytes by class (simulator/DramTraffic.h): each DMA's DRAM bytes go
// to the region holding its DRAM operand's address; addresses outside every region are
// intermediates. Expected counts follow from the boxes by hand.
#include "SimTestUtil.h"

#include "simulator/DramTraffic.h"

#include <gtest/gtest.h>

using namespace simtest;
using namespace npuc;

namespace {

// n fp16 elements DRAM[src] -> L1[0] ("ld") or L1[0] -> DRAM[dst] ("st").
isa::Instr load(const isa::Target &t, int64_t src, int64_t n) {
  return copy1d(t, "ld", DRAM, src, L1, 0, 2 * n);
}

isa::Instr store(const isa::Target &t, int64_t dst, int64_t n) {
  return copy1d(t, "st", L1, 0, DRAM, dst, 2 * n);
}

} // namespace

TEST(SimDramTraffic, RegionsClassifyAddresses) {
  sim::DramRegions r({{0x1000, 0x2000, sim::DramClass::Input, 0, true},
                      {0x100, 0x200, sim::DramClass::Constant},
                      {0x2000, 0x2100, sim::DramClass::Output, 5},
                      {0x3000, 0x3000, sim::DramClass::Output}}); // empty: ignored
  EXPECT_EQ(r.access(0, 0, false), sim::DramClass::Intermediate);
  EXPECT_EQ(r.access(0x100, 0, false), sim::DramClass::Constant);
  EXPECT_EQ(r.access(0x1ff, 0, false), sim::DramClass::Constant);
  EXPECT_EQ(r.access(0x200, 0, false), sim::DramClass::Intermediate);
  EXPECT_EQ(r.access(0x1fff, 0, false), sim::DramClass::Input);
  EXPECT_EQ(r.access(0x3000, 0, true), sim::DramClass::Intermediate);
  // An output's bytes before its producer's first instruction hold something else.
  EXPECT_EQ(r.access(0x2000, 4, true), sim::DramClass::Intermediate);
  EXPECT_EQ(r.access(0x2000, 5, true), sim::DramClass::Output);
  // The first write into an input's bytes reuses them: it and every later access are not the
  // input's.
  EXPECT_EQ(r.access(0x1800, 7, true), sim::DramClass::Intermediate);
  EXPECT_EQ(r.access(0x1000, 8, false), sim::DramClass::Intermediate);
  EXPECT_EQ(r.access(0x100, 9, false), sim::DramClass::Constant);
  EXPECT_STREQ(sim::dramClassName(sim::DramClass::Intermediate), "intermediate");
}

TEST(SimDramTraffic, EachDmaCountsForItsDramOperandsClass) {
  auto t = makeTarget();
  isa::Program p;
  p.instrs.push_back(load(*t, 0x100, 64));   // constant: 128 B
  p.instrs.push_back(load(*t, 0x100, 64));   // the same constant again: 128 B more
  p.instrs.push_back(load(*t, 0x1000, 32));  // input: 64 B
  p.instrs.push_back(store(*t, 0x4000, 16)); // intermediate written: 32 B
  p.instrs.push_back(load(*t, 0x4000, 16));  // and read back: 32 B
  p.instrs.push_back(store(*t, 0x2000, 8));  // output: 16 B
  sim::SimOptions o;
  o.functional = false; // decoded fields only: a timing-only run counts the same
  o.check = false;      // the loads and stores share L1 bytes unordered: no data here
  o.dramRegions = sim::DramRegions({{0x100, 0x200, sim::DramClass::Constant},
                                    {0x1000, 0x2000, sim::DramClass::Input, 0, true},
                                    {0x2000, 0x2100, sim::DramClass::Output}});
  sim::Memory mem(*t, 1 << 16);
  sim::SimStats s = sim::run(*t, p, mem, o);
  const sim::DramTraffic &d = s.dramByClass;
  EXPECT_EQ(d.readOf(sim::DramClass::Constant), 256);
  EXPECT_EQ(d.readOf(sim::DramClass::Input), 64);
  EXPECT_EQ(d.readOf(sim::DramClass::Intermediate), 32);
  EXPECT_EQ(d.writtenOf(sim::DramClass::Intermediate), 32);
  EXPECT_EQ(d.writtenOf(sim::DramClass::Output), 16);
  EXPECT_EQ(d.readOf(sim::DramClass::Output), 0);
  // The classes partition the run's DRAM traffic.
  int64_t read = 0, written = 0;
  for (size_t c = 0; c < sim::kDramClasses; ++c) {
    read += d.read[c];
    written += d.written[c];
  }
  EXPECT_EQ(read, s.dramBytesRead);
  EXPECT_EQ(written, s.dramBytesWritten);
  // Without regions nothing is classified.
  sim::Memory mem2(*t, 1 << 16);
  sim::SimOptions plain;
  plain.functional = false;
  plain.check = false;
  sim::SimStats s2 = sim::run(*t, p, mem2, plain);
  EXPECT_EQ(s2.dramByClass.readOf(sim::DramClass::Intermediate), 0);
  EXPECT_EQ(s2.dramBytesRead, s.dramBytesRead);
}
