// RtlProgramTest.cpp - hand-written programs co-simulated on the RTL core and the simulator
// (configs/npu-rtl.yaml): each instruction kind, DMA padding and strides, token chains, token
// FIFO and queue back-pressure, DRAM contention, bank-sharing concurrency. Data must be
// bit-identical and, for these programs, every instruction's start and end cycle identical.
// Expected data and totals are also derived by hand from docs/ISA.md where that is practical.
#include "simulator/rtl/RtlCore.h"
#include "support/Error.h"
#include "support/Half.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

using namespace npuc;

namespace {

isa::Target rtlTarget() {
  return isa::loadTarget(std::string(NPUC_SOURCE_DIR) + "/configs/npu-rtl.yaml");
}

void putHalf(std::vector<uint8_t> &m, int64_t addr, float v) {
  uint16_t h = floatToHalf(v);
  std::memcpy(m.data() + addr, &h, 2);
}
uint16_t getHalfBits(const std::vector<uint8_t> &m, int64_t addr) {
  uint16_t h;
  std::memcpy(&h, m.data() + addr, 2);
  return h;
}

/// Co-simulates and checks the agreement every hand-written program must reach.
rtl::CosimResult expectAgree(const isa::Target &t, const std::string &text,
                             const sim::Memory &mem) {
  isa::Program p = isa::assemble(t, text, "test.s");
  rtl::CosimResult r = rtl::cosim(t, p, mem);
  EXPECT_TRUE(r.dataMatch) << r.dataDivergence;
  EXPECT_TRUE(r.cyclesMatch) << r.summary(t);
  EXPECT_EQ(r.rtl.totalCycles, r.sim.totalCycles);
  for (size_t e = 0; e < t.engines.size(); ++e) {
    EXPECT_EQ(r.rtl.engines[e].busyCycles, r.sim.engines[e].busyCycles) << t.engines[e].name;
    EXPECT_EQ(r.rtl.engines[e].instructions, r.sim.engines[e].instructions) << t.engines[e].name;
  }
  EXPECT_EQ(r.rtl.macs, r.sim.macs);
  EXPECT_EQ(r.rtl.dramBytesRead, r.sim.dramBytesRead);
  EXPECT_EQ(r.rtl.dramBytesWritten, r.sim.dramBytesWritten);
  return r;
}

/// The RTL result alone (to check data derived by hand).
sim::Memory runRtlOnly(const isa::Target &t, const std::string &text, sim::Memory mem,
                       rtl::RtlStats *stats = nullptr) {
  rtl::RtlStats s = rtl::runRtl(t, isa::assemble(t, text, "test.s"), mem);
  if (stats)
    *stats = s;
  return mem;
}

} // namespace

TEST(RtlTarget, BuiltForNpuRtl) {
  isa::Target t = rtlTarget();
  EXPECT_TRUE(rtl::matchesBuiltTarget(t));
  EXPECT_STREQ(rtl::builtTargetName(), "npu-rtl");
  isa::Target other = isa::loadTarget(std::string(NPUC_SOURCE_DIR) + "/configs/npu-base.yaml");
  EXPECT_FALSE(rtl::matchesBuiltTarget(other));
  sim::Memory mem(other, 4096);
  try {
    rtl::runRtl(other, isa::assemble(other, "finish\n", "x.s"), mem);
    FAIL() << "expected an error";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("not the one the RTL core was generated for"),
              std::string::npos)
        << e.what();
  }
}

// DMA with padding in dimension 0 and a row stride: rows of 4 fp16 values from DRAM become rows
// of 6 in L1 with a 1.0 (0x3c00) border, then are stored back contiguously.
TEST(RtlDma, PaddingAndStrides) {
  isa::Target t = rtlTarget();
  sim::Memory mem(t, 4096);
  for (int i = 0; i < 12; ++i)
    putHalf(mem.dram(), 2 * i, float(i + 1));
  const std::string prog = "ld push=0x10 dst_space=l1 dst_addr=0 elem_bytes=2 n0=6 n1=3 n2=1 "
                           "src_addr=0 src_s0=1 src_s1=4 dst_s0=1 dst_s1=6 pad0_lo=1 pad0_hi=1 "
                           "pad_value=0x3c00\n"
                           "st pop=0x1 src_space=l1 src_addr=0 dst_addr=0x100 elem_bytes=2 n0=18 n1=1 n2=1 "
                           "src_s0=1 dst_s0=1\n"
                           "finish\n";
  rtl::CosimResult r = expectAgree(t, prog, mem);
  // ld: 4 + 20 (DRAM latency) + max(ceil(36 B / 16), ceil(24 B read / 8)) = 27;
  // st: 4 + 20 + ceil(36 / 8) = 29 -> ends at 56.
  EXPECT_EQ(r.rtl.totalCycles, 56);
  sim::Memory out = runRtlOnly(t, prog, mem);
  for (int row = 0; row < 3; ++row)
    for (int c = 0; c < 6; ++c) {
      uint16_t want = (c == 0 || c == 5) ? 0x3c00 : floatToHalf(float(4 * row + c));
      EXPECT_EQ(getHalfBits(out.dram(), 0x100 + 2 * (6 * row + c)), want) << row << "," << c;
    }
}
