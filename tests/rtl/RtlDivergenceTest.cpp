// RtlDivergenceTest.cpp - the co-simulation must catch a data divergence and locate it. A fault
// injected into the harness's DRAM model (the RTL reads one byte with some bits flipped) stands in
// for an RTL bug: the report must name the first differing byte, both values and the instruction
// that last wrote it, while a fault on a byte the program never reads changes nothing.
#include "simulator/rtl/RtlCore.h"
#include "support/Error.h"

#include <gtest/gtest.h>

using namespace npuc;

namespace {

// 32 bytes DRAM[0x0, 0x20) -> L1[0x40, 0x60) -> DRAM[0x100, 0x120).
const char *kCopyProg =
    "ld push=0x10 dst_space=l1 dst_addr=0x40 elem_bytes=2 n0=16 n1=1 n2=1 src_addr=0 src_s0=1 "
    "dst_s0=1\n"
    "st pop=0x1 src_space=l1 src_addr=0x40 dst_addr=0x100 elem_bytes=2 n0=16 n1=1 n2=1 src_s0=1 "
    "dst_s0=1\n"
    "finish\n";

struct Fixture {
  isa::Target t = isa::loadTarget(std::string(NPUC_SOURCE_DIR) + "/configs/npu-rtl.yaml");
  isa::Program p = isa::assemble(t, kCopyProg, "copy.s");
  sim::Memory mem{t, 4096};
  Fixture() {
    for (int i = 0; i < 32; ++i)
      mem.dram()[size_t(i)] = uint8_t(0x10 + i);
  }
};

} // namespace

TEST(RtlDivergence, FlippedDramReadIsLocatedAtTheFirstDifferingByte) {
  Fixture f;
  rtl::RtlOptions opt;
  opt.faults.push_back({5, 0x40});
  rtl::CosimResult r = rtl::cosim(f.t, f.p, f.mem, {}, opt);
  EXPECT_FALSE(r.dataMatch);
  // Levels are compared in description order (dram first): byte 5 of the source reaches DRAM
  // 0x105 through the store; the stored byte is 0x15, the RTL's 0x15 ^ 0x40 = 0x55. The word at
  // 0x104 holds bytes 0x14..0x17.
  EXPECT_EQ(r.dataDivergence,
            "region 'dram' level 'dram' byte 0x105: simulator 15 rtl 55 (32-bit word at 0x104: "
            "simulator 14151617 rtl 14551617, little-endian bytes); last written by instruction "
            "#1 (st)");
  EXPECT_NE(r.summary(f.t).find("data:   DIVERGED: region 'dram'"), std::string::npos);
  // Timing is untouched by a data fault.
  EXPECT_TRUE(r.cyclesMatch) << r.cycleDivergence;
}

TEST(RtlDivergence, OnlyTheComparedRegionsCount) {
  Fixture f;
  rtl::RtlOptions opt;
  opt.faults.push_back({5, 0x40});
  // L1 is compared on its own: the load wrote the faulty byte at 0x40 + 5.
  int l1 = 1;
  rtl::CosimResult r = rtl::cosim(f.t, f.p, f.mem, {{"staged", l1, 0x40, 32}}, opt);
  EXPECT_FALSE(r.dataMatch);
  EXPECT_NE(r.dataDivergence.find("region 'staged' level 'l1' byte 0x45: simulator 15 rtl 55"),
            std::string::npos)
      << r.dataDivergence;
  EXPECT_NE(r.dataDivergence.find("last written by instruction #0 (ld)"), std::string::npos)
      << r.dataDivergence;
  // A region the fault never reaches still agrees.
  rtl::CosimResult clean = rtl::cosim(f.t, f.p, f.mem, {{"first", 0, 0x100, 5}}, opt);
  EXPECT_TRUE(clean.dataMatch) << clean.dataDivergence;
}

TEST(RtlDivergence, FaultOnAnUnreadByteChangesNothing) {
  Fixture f;
  rtl::RtlOptions opt;
  opt.faults.push_back({0x20, 0xff}); // just past the 32 bytes the program reads
  rtl::CosimResult r = rtl::cosim(f.t, f.p, f.mem, {}, opt);
  EXPECT_TRUE(r.dataMatch) << r.dataDivergence;
  EXPECT_TRUE(r.cyclesMatch) << r.cycleDivergence;
}

TEST(RtlDivergence, FaultOutsideTheImageIsRejected) {
  Fixture f;
  rtl::RtlOptions opt;
  opt.faults.push_back({4096, 1});
  try {
    rtl::cosim(f.t, f.p, f.mem, {}, opt);
    FAIL() << "expected an error";
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "DRAM fault at byte 4096: outside the 4096-byte image");
  }
}
