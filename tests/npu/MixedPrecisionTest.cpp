// MixedPrecisionTest.cpp - the groups --int8-accuracy keeps wide (npu/hw/MixedPrecision.h).
//
// Constructed so that the right answer is known: conv1 -> ReLU, conv2 (1x1) whose bias puts 500
// on channel 0 and about 1 on the others, conv3 (1x1) that ignores channel 0. In int8, conv2's
// output has one per-tensor scale of about 500/127 = 3.9, so channels 1..7 round to 0 and
// conv3's output is lost: both the group that writes that tensor (conv2) and the one that reads
// it (conv3, whose input the host or the NPU quantises) are sensitive, conv1 is not. Keeping
// conv2 and conv3 wide restores the output; keeping one of them does not.
#include "NpuTestUtil.h"

#include "graph/Passes.h"
#include "npu/hw/MixedPrecision.h"

#include <gtest/gtest.h>

namespace npuc::test {
namespace {

using graph::Graph;
using graph::ValueId;

ValueId conv(Graph &g, const std::string &name, ValueId x, int64_t k, std::vector<float> w,
             std::vector<float> b) {
  const int64_t C = 8;
  ValueId wv = g.addConstant(name + ".w", {C, C, k, k}, std::move(w));
  ValueId bv = g.addConstant(name + ".b", {C}, std::move(b));
  const int64_t p = k / 2;
  return addOp(
      g, graph::OpKind::Conv, name, {x, wv, bv},
      {{"pads", std::vector<int64_t>{p, p, p, p}}, {"kernel_shape", std::vector<int64_t>{k, k}}});
}

struct Built {
  Graph g;
  ValueId x = graph::kNoValue;
  int conv1 = -1, conv2 = -1, conv3 = -1; // their groups
};

Built build() {
  Built b;
  Graph &g = b.g;
  const int64_t C = 8, H = 6;
  b.x = g.addValue("x", {1, C, H, H}, graph::DType::F32);
  g.inputs = {b.x};
  ValueId y = conv(g, "conv1", b.x, 3, randomData(size_t(C * C * 9), 5, -0.3f, 0.3f),
                   std::vector<float>(C, 0.1f));
  y = addOp(g, graph::OpKind::Relu, "relu1", {y});
  std::vector<float> b2(C, 0.5f);
  b2[0] = 500;
  y = conv(g, "conv2", y, 1, randomData(size_t(C * C), 6, -0.5f, 0.5f), b2);
  std::vector<float> w3 = randomData(size_t(C * C), 7, -0.5f, 0.5f);
  for (int64_t oc = 0; oc < C; ++oc)
    w3[size_t(oc * C)] = 0; // channel 0 of conv2's output is not read
  y = conv(g, "conv3", y, 1, w3, std::vector<float>(C, 0.0f));
  g.outputs = {y};
  graph::fuseOps(g);
  for (graph::FusedGroup &grp : g.groups) {
    grp.placement = graph::Placement::Npu;
    const std::string &n = g.node(grp.anchor).name;
    (n == "conv1" ? b.conv1 : n == "conv2" ? b.conv2 : b.conv3) = grp.id;
  }
  return b;
}

TEST(MixedPrecision, KeepsTheSensitiveGroupsWide) {
  Built b = build();
  ASSERT_EQ(b.g.groups.size(), 3u);
  const npu::Sample in = {{b.x, HostTensor({1, 8, 6, 6}, randomData(8 * 36, 9))}};
  const npu::QuantTable q = npu::calibrate(b.g, std::vector<npu::Sample>{in}, {}, "test");
  const npu::WideChoice c = npu::chooseWideGroups(b.g, q, {in}, 0.999);
  EXPECT_LT(c.before, 0.9) << "int8 everywhere loses channels 1..7 of conv2's output";
  EXPECT_TRUE(c.met);
  EXPECT_GE(c.after, 0.999);
  ASSERT_EQ(c.sensitivity.size(), 3u);
  EXPECT_GT(c.sensitivity.at(b.conv1), 0.999);
  EXPECT_LT(c.sensitivity.at(b.conv2), 0.9);
  EXPECT_LT(c.sensitivity.at(b.conv3), 0.9);
  std::vector<int> wide = c.groups;
  std::sort(wide.begin(), wide.end());
  EXPECT_EQ(wide, (std::vector<int>{b.conv2, b.conv3}));
  // A target int8 already meets keeps nothing wide.
  const npu::WideChoice easy = npu::chooseWideGroups(b.g, q, {in}, c.before);
  EXPECT_TRUE(easy.met);
  EXPECT_TRUE(easy.groups.empty());
  EXPECT_TRUE(easy.sensitivity.empty()) << "no sensitivity analysis when nothing is needed";
}

TEST(MixedPrecision, OutputCosine) {
  Graph g;
  ValueId a = g.addValue("a", {2}, graph::DType::F32), b = g.addValue("b", {1}, graph::DType::F32);
  g.outputs = {a, b};
  const std::map<ValueId, HostTensor> x = {{a, HostTensor({2}, {1, 0})}, {b, HostTensor({1}, {0})}};
  const std::map<ValueId, HostTensor> y = {{a, HostTensor({2}, {1, 1})}, {b, HostTensor({1}, {0})}};
  const std::map<ValueId, HostTensor> z = {{a, HostTensor({2}, {0, 0})}, {b, HostTensor({1}, {0})}};
  EXPECT_NEAR(npu::outputCosine(g, x, y), 1 / std::sqrt(2.0), 1e-12);
  EXPECT_EQ(npu::outputCosine(g, z, z), 1);
  EXPECT_EQ(npu::outputCosine(g, x, z), 0);
}

} // namespace
} // namespace npuc::test
