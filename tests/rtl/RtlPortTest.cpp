// RtlPortTest.cpp - the core's memory port handshake. The harness DRAM normally accepts every
// beat; here it deasserts mem_req_ready on a schedule, so beats wait in their registers and read
// data comes back later than the DMA's tail would allow. The results must not change (the
// simulator's final memory is the independent reference), only the cycle count may grow; and
// a DMA the core has no path for is refused before the run.
#include "simulator/rtl/RtlCore.h"
#include "support/Error.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>

using namespace npuc;

namespace {

isa::Target rtlTarget() {
  return isa::loadTarget(std::string(NPUC_SOURCE_DIR) + "/configs/npu-rtl.yaml");
}

std::string readFile(const std::string &path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Small fp16 values (sign, exponent 13..16, random mantissa) so no product is subnormal or huge.
void fillHalves(std::vector<uint8_t> &dram, int64_t count, unsigned seed) {
  std::mt19937 rng(seed);
  for (int64_t i = 0; i < count; ++i) {
    uint16_t h =
        static_cast<uint16_t>(((rng() & 1) << 15) | ((13 + rng() % 4) << 10) | (rng() & 0x3ff));
    dram[size_t(2 * i)] = uint8_t(h & 0xff);
    dram[size_t(2 * i + 1)] = uint8_t(h >> 8);
  }
}

} // namespace

TEST(RtlPort, StalledHandshakeKeepsDataAndOnlyAddsCycles) {
  isa::Target t = rtlTarget();
  // Loads with padding, a matmul, an epilogue and a store: read beats, write beats and padding
  // lanes all cross the port.
  isa::Program p = isa::assemble(
      t, readFile(std::string(NPUC_SOURCE_DIR) + "/tests/rtl/matmul_chain.s"), "matmul_chain.s");
  sim::Memory mem(t, 4096);
  fillHalves(mem.dram(), 0x100, 7);
  for (int period : {2, 3, 7}) {
    rtl::RtlOptions opt;
    opt.readyStallPeriod = period;
    rtl::CosimResult r = rtl::cosim(t, p, mem, {}, opt);
    EXPECT_TRUE(r.dataMatch) << "period " << period << ": " << r.dataDivergence;
    // Never faster; a port ready only every other edge halves the beat rate, which the DMAs'
    // credit cannot hide (a rarer stall may be absorbed by the DRAM arbiter's slower grant).
    EXPECT_GE(r.rtl.totalCycles, r.sim.totalCycles) << "period " << period;
    if (period == 2) {
      EXPECT_GT(r.rtl.totalCycles, r.sim.totalCycles);
    }
    EXPECT_EQ(r.rtl.macs, r.sim.macs);
  }
  // The same image with an always-ready port is exact: the stalls above are the port's alone.
  rtl::CosimResult exact = rtl::cosim(t, p, mem);
  EXPECT_TRUE(exact.dataMatch) << exact.dataDivergence;
  EXPECT_TRUE(exact.cyclesMatch) << exact.cycleDivergence;
}

TEST(RtlPort, BadStallPeriodIsRejected) {
  isa::Target t = rtlTarget();
  isa::Program p = isa::assemble(t, "finish\n", "f.s");
  sim::Memory mem(t, 4096);
  rtl::RtlOptions opt;
  opt.readyStallPeriod = 1;
  try {
    rtl::runRtl(t, p, mem, opt);
    FAIL() << "a port that is never ready was accepted";
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "RTL: ready stall period 1: must be 0 (always ready) or at least 2");
  }
}

TEST(RtlPort, DramToDramCopyIsRefused) {
  isa::Target t = rtlTarget();
  isa::Program p = isa::assemble(t,
                                 "ld dst_space=dram dst_addr=0x100 elem_bytes=2 n0=4 n1=1 n2=1 "
                                 "src_addr=0 src_s0=1 dst_s0=1\nfinish\n",
                                 "d2d.s");
  sim::Memory mem(t, 4096);
  try {
    rtl::runRtl(t, p, mem);
    FAIL() << "a DRAM-to-DRAM DMA was run";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("instruction #0 (ld): DRAM-to-DRAM copy"),
              std::string::npos)
        << e.what();
  }
}
