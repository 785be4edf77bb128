// ConvFoldTest.cpp - convs with few input channels, whose kernel rows the matmul kernel folds
// into the tensor unit's k dimension (khg rows per k-chunk, LowerMatmul.cpp), compiled,
// simulated with the hazard checker and compared with the fp64 reference (ConvCheck.h).
//
// Every case is tensor-bound, so the cost model must pick the tiling with the fewest array
// passes; for these shapes that is a row fold (derivations at each case), and the tests check
// the tiling text says so: a case that stopped folding would no longer test the fold.
#include "ConvCheck.h"
#include "support/Npy.h"

#include <cctype>
#include <gtest/gtest.h>
#include <regex>

namespace npuc::test {
namespace {

// khg of "kernel rows folded by khg" in a tiling text; 1 when the rows are not folded.
int64_t rowsFolded(const std::string &tiling) {
  std::smatch m;
  if (!std::regex_search(tiling, m, std::regex("kernel rows folded by ([0-9]+)")))
    return 1;
  return std::stoll(m[1].str());
}

class RowFold : public ::testing::TestWithParam<ConvCase> {};

TEST_P(RowFold, MatchesReferenceAndFoldsRows) {
  const ConvCase c = GetParam();
  std::string tiling;
  checkConv(c, isa::loadTarget(configPath(c.target)), &tiling);
  if (HasFatalFailure())
    return;
  int64_t khg = rowsFolded(tiling);
  EXPECT_GT(khg, 1) << tiling;
  EXPECT_LE(khg, c.K) << tiling;
}

// Passes of the array per output pixel and 16 (32) output channels, without / with the row fold
// (k per kernel row = KW * C with the columns folded; R array rows):
INSTANTIATE_TEST_SUITE_P(Shapes, RowFold,
                         ::testing::Values(
                             // ResNet-50 stem shape (7x7 s2 p3, 3 channels), 12x10 outputs; R = 16:
                             // 7 rows x ceil(21/16) = 14 vs ceil(147/16) = 10.
                             ConvCase{3, 23, 19, 20, 7, 2, 3, 1, 1, true, true},
                             ConvCase{3, 23, 19, 20, 7, 2, 3, 1, 1, true, true, "npu-base.yaml",
                                      false},
                             // R = 8: 7 x ceil(21/8) = 21 vs ceil(147/8) = 19.
                             ConvCase{3, 23, 19, 20, 7, 2, 3, 1, 1, false, true, "npu-tiny.yaml"},
                             // AlexNet stem shape (11x11 s4, no pad, 3 channels), 5x6 outputs: 11 x
                             // ceil(33/16) = 33 vs ceil(363/16) = 23.
                             ConvCase{3, 27, 31, 24, 11, 4, 0, 1, 1, true, false},
                             // 5x5, 2 channels, odd sizes: 5 x ceil(10/16) = 5 vs ceil(50/16) = 4.
                             ConvCase{2, 13, 11, 7, 5, 1, 2, 1, 1, true, true}),
                         ParamName());

// Output rows so wide that the whole kernel's k does not fit L0A next to one output row (both
// copies): khg < KH, and KH being prime, the last row group is narrower than khg.
//  * npu-base, 7x7 s2 p3 over 224 columns: M >= OW = 112, and 112 * 7 * 21 * 2 B * 2 copies =
//    65,856 B > 64 KiB, so khg <= 6; any of khg = 4..6 gives 10 passes vs 14 unfolded.
//  * npu-32x32, 11x11 s4 over 224 columns: M >= OW = 54, khg * 33 * 54 * 2 B * 2 <= 64 KiB
//    allows khg <= 9 (e.g. 9 + 2 rows: ceil(297/32) + ceil(66/32) = 13 passes vs 11 x 2 = 22).
TEST(RowFold, LastRowGroupNarrower) {
  for (const ConvCase &c :
       {ConvCase{3, 9, 224, 16, 7, 2, 3, 1, 1, true, true},
        ConvCase{3, 15, 224, 32, 11, 4, 0, 1, 1, false, true, "npu-32x32.yaml"}}) {
    SCOPED_TRACE(::testing::PrintToString(c));
    std::string tiling;
    checkConv(c, isa::loadTarget(configPath(c.target)), &tiling);
    if (HasFatalFailure())
      return;
    int64_t khg = rowsFolded(tiling);
    EXPECT_GT(khg, 1) << tiling;
    EXPECT_LT(khg, c.K) << tiling;
    EXPECT_NE(c.K % khg, 0) << tiling;
  }
}

// Row folding with input channels blocked at L1: a 3x1 kernel (each kernel row is one
// contiguous run of the block's channels, so rows fold without folding columns) over 96
// channels on npu-tiny with L1 cut to 32 KiB, which cannot hold the 96-channel input tile and
// weight block (8 x 8 x 96 + 3 x 96 x 24 fp16, two copies each: 52 KiB). Each row group of each
// block is one matmul, the first overwriting, the rest accumulating (also across blocks).
TEST(RowFold, WithInputChannelBlocking) {
  std::string yaml = readFile(configPath("npu-tiny.yaml"));
  const std::string from = "size: 256 KiB", to = "size: 32 KiB";
  ASSERT_NE(yaml.find(from), std::string::npos) << "npu-tiny's L1 line changed";
  yaml.replace(yaml.find(from), from.size(), to);
  isa::Target t = isa::parseTarget(yaml, "npu-tiny-32k");
  ConvCase c{160, 6, 14, 24, 3, 1, 1, 1, 1, true, true};
  c.KW = 1;
  std::string tiling;
  checkConv(c, t, &tiling);
  if (HasFatalFailure())
    return;
  EXPECT_NE(tiling.find("input channels blocked"), std::string::npos) << tiling;
  EXPECT_GT(rowsFolded(tiling), 1) << tiling;
}

} // namespace
} // namespace npuc::test
