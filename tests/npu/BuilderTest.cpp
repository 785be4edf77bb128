// BuilderTest.cpp - the kernel builder's on-chip bookkeeping: the peak bytes per level that
// `npuc inspect` and REPORT.json show, including space a kernel frees between phases.
#include "NpuTestUtil.h"

#include "npu/kernels/Builder.h"

#include <gtest/gtest.h>

namespace npuc::test {
namespace {

// npu-base's L1 aligns buffers to 64 bytes: a 100-byte buffer takes 128, twice when double
// buffered. After resetLevel the space is reused, so the peak is the largest phase, not the sum.
TEST(Builder, PeakBytesPerLevelCountCopiesAlignmentAndReuse) {
  for (bool fromTop : {false, true}) {
    isa::Target t = isa::loadTarget(configPath("npu-base.yaml"));
    npu::Hw hw;
    ASSERT_EQ(npu::Hw::derive(t, hw), "");
    ASSERT_EQ(hw.alignment(hw.l1), 64);
    npu::Builder b(hw, fromTop);
    npu::OnChip a{"a", hw.l1, 100, 2}, c{"c", hw.l1, 64, 1}, acc{"acc", hw.acc, 256, 1};
    ASSERT_TRUE(b.reserve(a));
    ASSERT_TRUE(b.reserve(c));
    ASSERT_TRUE(b.reserve(acc));
    EXPECT_EQ(b.peakBytes().at(hw.l1), 2 * 128 + 64) << fromTop;
    b.resetLevel(hw.l1);
    npu::OnChip d{"d", hw.l1, 64, 1};
    ASSERT_TRUE(b.reserve(d));
    EXPECT_EQ(b.peakBytes().at(hw.l1), 2 * 128 + 64) << "the first phase stays the peak";
    EXPECT_EQ(b.peakBytes().at(hw.acc), 256);
    EXPECT_EQ(b.peakBytes().count(hw.l0a), 0u) << "an untouched level has no entry";
    // A reservation that does not fit changes nothing.
    npu::OnChip big{"big", hw.l1, hw.capacity(hw.l1), 1};
    EXPECT_FALSE(b.reserve(big));
    EXPECT_EQ(b.peakBytes().at(hw.l1), 2 * 128 + 64);
  }
}

} // namespace
} // namespace npuc::test
