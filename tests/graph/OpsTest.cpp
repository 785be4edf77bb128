// OpsTest.cpp - the operator table (graph/Ops.def): names round-trip, unknown names are
// rejected, the table covers the operators docs/OPERATORS.md documents, and the classification
// columns agree with the ONNX semantics the passes rely on.
#include "graph/Ops.h"
#include "graph/Passes.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

using namespace npuc;
using namespace npuc::graph;

namespace {

TEST(Ops, NamesRoundTrip) {
  EXPECT_STREQ(opName(OpKind::Conv), "Conv");
  EXPECT_STREQ(opName(OpKind::ReduceLogSumExp), "ReduceLogSumExp");
  EXPECT_EQ(opFromName("GatherElements"), OpKind::GatherElements);
  EXPECT_EQ(kNumOpKinds, 170); // the 169 ai.onnx rows of docs/OPERATORS.md and Shape
  for (int i = 0; i < kNumOpKinds; ++i) {
    auto k = static_cast<OpKind>(i);
    EXPECT_EQ(opFromName(opName(k)), k) << opName(k);
  }
}

TEST(Ops, UnknownNamesAreNotOperators) {
  EXPECT_EQ(opFromName("StringNormalizer"), std::nullopt);
  EXPECT_EQ(opFromName("conv"), std::nullopt); // ONNX op types are case-sensitive
  EXPECT_EQ(opFromName(""), std::nullopt);
  EXPECT_EQ(opFromName("Conv2"), std::nullopt);
}

TEST(Ops, FormatsAsTheOnnxName) {
  EXPECT_EQ(fmt::format("node ({})", OpKind::BatchNormalization), "node (BatchNormalization)");
  std::ostringstream os;
  os << OpKind::LRN;
  EXPECT_EQ(os.str(), "LRN");
}

// Every operator of the coverage table in docs/OPERATORS.md is a row of the table (Shape, folded
// at import, is a row the page does not list).
TEST(Ops, CoversTheDocumentedOperators) {
  std::ifstream in(std::string(NPUC_SOURCE_DIR) + "/docs/OPERATORS.md");
  ASSERT_TRUE(in) << "docs/OPERATORS.md";
  std::regex row(R"(^\| ([A-Z][A-Za-z0-9]*)( \(opset \d+\))? \|)");
  std::set<std::string> documented;
  for (std::string line; std::getline(in, line);)
    if (std::smatch m; std::regex_search(line, m, row) && m[1] != "Operator")
      documented.insert(m[1]);
  EXPECT_EQ(documented.size(), 169u); // the preview.training rows name their domain
  for (const std::string &name : documented)
    EXPECT_TRUE(opFromName(name).has_value()) << name << " is documented but not in Ops.def";
}

TEST(Ops, Classification) {
  // Elementwise core maps, views and layout ops, as ONNX defines them.
  EXPECT_TRUE(isElementwiseOp(OpKind::Add));
  EXPECT_TRUE(isElementwiseOp(OpKind::Clip));
  EXPECT_FALSE(isElementwiseOp(OpKind::Softmax));
  EXPECT_FALSE(isElementwiseOp(OpKind::Pow)); // extended broadcast op, not the NPU core set
  EXPECT_TRUE(isViewOp(OpKind::Flatten));
  EXPECT_TRUE(isViewOp(OpKind::Dropout));
  EXPECT_FALSE(isViewOp(OpKind::Transpose)); // moves data in row-major order
  EXPECT_TRUE(isLayoutOp(OpKind::Transpose));
  EXPECT_FALSE(isLayoutOp(OpKind::Dropout));
  EXPECT_TRUE(isExtUnaryOp(OpKind::Erf));
  EXPECT_FALSE(isExtUnaryOp(OpKind::Relu));
  EXPECT_TRUE(isExtBroadcastOp(OpKind::Where));
  EXPECT_TRUE(isReduceOp(OpKind::ArgMin));
  EXPECT_FALSE(isReduceOp(OpKind::Softmax));
  EXPECT_TRUE(hasTrait(OpKind::GreaterOrEqual, optrait::kBoolResult));
  EXPECT_FALSE(hasTrait(OpKind::Pow, optrait::kBoolResult));
  EXPECT_TRUE(hasTrait(OpKind::Upsample, optrait::kImportOnly));
}

TEST(Ops, FusionClasses) {
  EXPECT_EQ(opInfo(OpKind::Conv).pattern, OpPattern::OutEWiseFusable);
  EXPECT_EQ(opInfo(OpKind::GlobalMaxPool).pattern, OpPattern::OutEWiseFusable);
  EXPECT_EQ(opInfo(OpKind::Relu).pattern, OpPattern::ElemWise);
  EXPECT_EQ(opInfo(OpKind::Mul).pattern, OpPattern::Broadcast);
  EXPECT_EQ(opInfo(OpKind::Slice).pattern, OpPattern::Injective);
  EXPECT_EQ(opInfo(OpKind::ReduceMean).pattern, OpPattern::CommReduce);
  EXPECT_EQ(opInfo(OpKind::Softmax).pattern, OpPattern::Opaque);
  EXPECT_STREQ(opPatternName(OpPattern::OutEWiseFusable), "complex-out-fusable");
}

} // namespace
