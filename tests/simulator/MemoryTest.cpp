// MemoryTest.cpp - sim::Memory: a sizes-only Memory serves timing-only runs exactly as one
// with data (same cycles, same access checks) and refuses functional runs.
#include "SimTestUtil.h"

#include "support/Error.h"

#include <gtest/gtest.h>

using namespace simtest;
using namespace npuc;

namespace {

isa::Program loadProgram(const isa::Target &t, int64_t src, int64_t n) { // n fp16 elements
  isa::Program p;
  p.instrs.push_back(copy1d(t, "ld", DRAM, src, L1, 0, 2 * n));
  return p;
}

sim::SimOptions timingOnly() {
  sim::SimOptions o;
  o.functional = false;
  return o;
}

} // namespace

TEST(SimMemory, SizesOnlyTimesLikeAnImage) {
  auto t = makeTarget();
  isa::Program p = loadProgram(*t, 0x100, 512);
  sim::Memory image(*t, 1 << 16);
  sim::Memory sizes = sim::Memory::sizesOnly(*t, 1 << 16);
  EXPECT_FALSE(sizes.hasData());
  EXPECT_EQ(sizes.size(sizes.dramIndex()), 1 << 16);
  EXPECT_EQ(sizes.size(L1), image.size(L1));
  const sim::SimStats a = sim::run(*t, p, image, timingOnly());
  const sim::SimStats b = sim::run(*t, p, sizes, timingOnly());
  EXPECT_EQ(a.totalCycles, b.totalCycles);
  EXPECT_EQ(a.dramBytesRead, b.dramBytesRead);
}

TEST(SimMemory, SizesOnlyChecksBoundsAndGrows) {
  auto t = makeTarget();
  isa::Program p = loadProgram(*t, 0x1000, 64); // bytes [0x1000, 0x1080)
  sim::Memory sizes = sim::Memory::sizesOnly(*t, 0x1000);
  try {
    sim::run(*t, p, sizes, timingOnly());
    FAIL() << "an access past the DRAM size ran";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("outside its 4096 bytes"), std::string::npos) << e.what();
  }
  sizes.growDram(0x1080);
  sizes.growDram(0x10); // never shrinks
  EXPECT_EQ(sizes.size(sizes.dramIndex()), 0x1080);
  EXPECT_GT(sim::run(*t, p, sizes, timingOnly()).totalCycles, 0);
}

TEST(SimMemory, SizesOnlyRefusesFunctionalRuns) {
  auto t = makeTarget();
  sim::Memory sizes = sim::Memory::sizesOnly(*t, 1 << 16);
  try {
    sim::run(*t, loadProgram(*t, 0, 8), sizes);
    FAIL() << "a functional run on a sizes-only Memory ran";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("a functional run needs a Memory with data"),
              std::string::npos)
        << e.what();
  }
}
