// ShapeAttrTest.cpp - shape inference rejects operator attributes that would divide by zero,
// loop backwards or read no element (graph/ShapeNN.cpp, ShapeData.cpp) with an npuc::Error
// naming the node and the attribute, and still accepts the boundary values that are legal. Each
// graph is written as graph text (docs/GRAPH.md), whose parser runs shape inference per node.
#include "graph/Text.h"
#include "support/Error.h"

#include <gtest/gtest.h>

using namespace npuc;

namespace {

// Parses a graph of input %x: f32[1x4x8x8], a 3x3 conv weight %w: f32[4x4x3x3], and one node
// line; returns the error message, or "" when the graph is accepted.
std::string errorOf(const std::string &node) {
  const std::string text = "graph \"g\"\n"
                           "  input %x: f32[1x4x8x8]\n"
                           "  const %w: f32[4x4x3x3] = splat(1)\n"
                           "  " +
                           node + "\n";
  try {
    graph::parseGraphText(text, {"t.graph", 1});
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

struct BadAttr {
  const char *what;
  const char *node;    // the node line, its output shape as the op would give with sane values
  const char *message; // how the error message ends: the node, then the attribute
};

class ShapeAttr : public ::testing::TestWithParam<BadAttr> {};

TEST_P(ShapeAttr, IsAnErrorNamingNodeAndAttribute) {
  const BadAttr c = GetParam();
  const std::string msg = errorOf(c.node);
  const std::string want = c.message;
  ASSERT_GE(msg.size(), want.size()) << msg;
  EXPECT_EQ(msg.substr(msg.size() - want.size()), want) << msg;
}

INSTANTIATE_TEST_SUITE_P(
    Rules, ShapeAttr,
    ::testing::Values(
        BadAttr{"conv_stride_0",
                "%y: f32[1x4x8x8] = Conv \"c\"(%x, %w) {strides=[1, 0], pads=[1, 1, 1, 1]}",
                "node 'c' (Conv): attribute strides = [1, 0] must be at least 1 in every entry"},
        BadAttr{"conv_dilation_0",
                "%y: f32[1x4x8x8] = Conv \"c\"(%x, %w) {dilations=[0, 1], pads=[1, 1, 1, 1]}",
                "node 'c' (Conv): attribute dilations = [0, 1] must be at least 1 in every entry"},
        BadAttr{"conv_negative_pad", "%y: f32[1x4x6x8] = Conv \"c\"(%x, %w) {pads=[0, 2, 0, -1]}",
                "node 'c' (Conv): attribute pads = [0, 2, 0, -1] must be at least 0 in every "
                "entry"},
        BadAttr{"maxpool_kernel_0", "%y: f32[1x4x8x8] = MaxPool \"p\"(%x) {kernel_shape=[0, 0]}",
                "node 'p' (MaxPool): attribute kernel_shape = [0, 0] must be at least 1 in every "
                "entry"},
        BadAttr{"avgpool_stride_negative",
                "%y: f32[1x4x4x4] = AveragePool \"p\"(%x) {kernel_shape=[2, 2], strides=[-2, 2]}",
                "node 'p' (AveragePool): attribute strides = [-2, 2] must be at least 1 in every "
                "entry"},
        BadAttr{"maxpool_window_in_padding",
                "%y: f32[1x4x12x8] = MaxPool \"p\"(%x) {kernel_shape=[3, 3], pads=[3, 0, 3, 0]}",
                "node 'p' (MaxPool): attribute pads = [3, 0, 3, 0] must be smaller than the "
                "(dilated) kernel_shape [3, 3]"},
        BadAttr{"lppool_p_0", "%y: f32[1x4x7x7] = LpPool \"p\"(%x) {kernel_shape=[2, 2], p=0}",
                "node 'p' (LpPool): attribute p = 0 must be at least 1"},
        BadAttr{"global_lppool_p_0", "%y: f32[1x4x1x1] = GlobalLpPool \"p\"(%x) {p=0}",
                "node 'p' (GlobalLpPool): attribute p = 0 must be at least 1"},
        BadAttr{"conv_transpose_stride_0",
                "%y: f32[1x4x10x10] = ConvTranspose \"t\"(%x, %w) {strides=[0, 1], "
                "dilations=[1, 1], pads=[0, 0, 0, 0], output_padding=[0, 0]}",
                "node 't' (ConvTranspose): attribute strides = [0, 1] must be at least 1 in "
                "every entry"},
        BadAttr{"conv_transpose_output_padding",
                "%y: f32[1x4x11x11] = ConvTranspose \"t\"(%x, %w) {strides=[1, 1], "
                "dilations=[1, 1], pads=[0, 0, 0, 0], output_padding=[1, 1]}",
                "node 't' (ConvTranspose): attribute output_padding = [1, 1] must lie in [0, "
                "max(stride, dilation)) per axis"},
        BadAttr{"lrn_size_0", "%y: f32[1x4x8x8] = LRN \"n\"(%x) {size=0}",
                "node 'n' (LRN): attribute size = 0 must be at least 1"},
        BadAttr{"resize_size_0",
                "%y: f32[1x4x0x16] = Resize \"r\"(%x) {mode=\"nearest\", sizes=[1, 4, 0, 16]}",
                "node 'r' (Resize): attribute sizes = [1, 4, 0, 16] must be positive"},
        // Found by fuzz_Onnx (UBSan: signed overflow in the product of the target shape).
        BadAttr{"reshape_overflow",
                "const %s: i64[3] = [140723261575518, 3560376980413087749, 5]\n"
                "  %y: f32[1x4x8x8] = Reshape \"r\"(%x, %s)",
                "node 'r' (Reshape): target shape [140723261575518, 3560376980413087749, 5] "
                "has more elements than int64 holds"},
        BadAttr{"tile_overflow",
                "%y: f32[1x4x8x8] = Tile \"t\"(%x) {repeats=[1, 1, 4611686018427387904, 1]}",
                "node 't' (Tile): repeats [1, 1, 4611686018427387904, 1] make axis 2 longer "
                "than int64 holds"},
        BadAttr{"expand_overflow",
                "%y: f32[1x4x8x8] = Expand \"e\"(%x) {shape=[4294967296, 4294967296, 1, 1, 1, "
                "1]}",
                "node 'e' (Expand): output 0 would have shape 4294967296x4294967296x1x4x8x8, "
                "more elements than int64 holds"},
        // Found by fuzz_Onnx (UBSan: negation of a pad of INT64_MIN, an input the corpus
        // keeps); pads are bounded by 2^62, so the sums and negations stay in range.
        BadAttr{"pad_beyond_2_62",
                "%y: f32[1x4x8x8] = Pad \"p\"(%x) {mode=\"constant\", pads=[0, 0, 0, "
                "-4611686018427387905, 0, 0, 0, 0]}",
                "node 'p' (Pad): pads -4611686018427387905 and 0 on axis 3 (extent 8) are beyond "
                "2^62"},
        BadAttr{"expand_negative", "%y: f32[1x4x8x8] = Expand \"e\"(%x) {shape=[-2, 1, 1, 1]}",
                "node 'e' (Expand): shape entry -2 is negative"},
        // Window ops take one kernel/stride/dilation entry per spatial axis and two pads.
        BadAttr{"pool_kernel_rank", "%y: f32[1x4x6x6] = MaxPool \"p\"(%x) {kernel_shape=[3]}",
                "node 'p' (MaxPool): kernel_shape/strides/dilations need 2 entries and pads 4 "
                "for input 1x4x8x8"},
        BadAttr{"loss_target_shape", "%y: f32[] = NegativeLogLikelihoodLoss \"l\"(%x, %x)",
                "node 'l' (NegativeLogLikelihoodLoss): target shape 1x4x8x8 must be the "
                "input's without the class axis, 1x8x8"},
        BadAttr{"mvn_axis", "%y: f32[1x4x8x8] = MeanVarianceNormalization \"m\"(%x) {axes=[0, 4]}",
                "node 'm' (MeanVarianceNormalization): attribute axes = [0, 4] names an axis "
                "outside the input's rank 4"},
        BadAttr{"gridsample_grid", "%y: f32[1x4x8x8] = GridSample \"s\"(%x, %x)",
                "node 's' (GridSample): grid shape 1x4x8x8 must be [1, H_out, W_out, 2]"},
        BadAttr{"maxunpool_indices",
                "%y: f32[1x4x16x16] = MaxUnpool \"u\"(%x, %w) {output_shape=[1, 4, 16, 16]}",
                "node 'u' (MaxUnpool): indices shape 4x4x3x3 must equal the input shape "
                "1x4x8x8"}),
    [](const ::testing::TestParamInfo<BadAttr> &i) { return std::string(i.param.what); });

// The boundaries stay legal: a convolution's window may lie wholly in its padding (its output
// there is the bias), a pool's padding may be one less than its window, ConvTranspose's
// output_padding may reach stride - 1.
TEST(ShapeAttr, AcceptsTheLegalBoundaries) {
  EXPECT_EQ(errorOf("%y: f32[1x4x46x46] = Conv \"c\"(%x, %w) {pads=[20, 20, 20, 20]}"), "");
  EXPECT_EQ(errorOf("%y: f32[1x4x10x6] = MaxPool \"p\"(%x) {kernel_shape=[3, 3], "
                    "pads=[2, 0, 2, 0]}"),
            "");
  EXPECT_EQ(errorOf("%y: f32[1x4x16x16] = ConvTranspose \"t\"(%x, %w) {strides=[2, 2], "
                    "dilations=[1, 1], pads=[1, 1, 1, 1], output_padding=[1, 1]}"),
            "");
}

} // namespace
