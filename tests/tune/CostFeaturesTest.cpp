// CostFeaturesTest.cpp - tune/costmodel's featurize(): one length for every kernel family, the
// decision-name list exactly the union of the families' decisions (enumerated on a small group
// of every strategy), and the values of one point derived by hand.
#include "NpuTestUtil.h"

#include "npu/kernels/Plan.h"
#include "npu/schedule/Space.h"
#include "tune/costmodel/CostModel.h"

#include <cmath>
#include <gtest/gtest.h>
#include <set>

namespace npuc::test {
namespace {

using graph::Graph;
using graph::ValueId;
using npu::Strategy;

ValueId input(Graph &g, const std::string &name, const Shape &s) {
  ValueId v = g.addValue(name, s, graph::DType::F32);
  g.inputs.push_back(v);
  return v;
}

ValueId conv(Graph &g, int64_t C, int64_t OC, int64_t group, int64_t HW, int64_t N = 1) {
  ValueId x = input(g, "x", {N, C, HW, HW});
  ValueId w = g.addConstant("w", {OC, C / group, 3, 3},
                            std::vector<float>(static_cast<size_t>(OC * C / group * 9), 0.5f));
  ValueId y = g.addValue("y", {N, OC, HW, HW}, graph::DType::F32);
  auto n = g.addNode(graph::OpKind::Conv, "conv", {x, w}, {y});
  g.node(n).attrs["pads"] = std::vector<int64_t>{1, 1, 1, 1};
  g.node(n).attrs["group"] = group;
  return y;
}

// A small one-group graph whose plan runs with `s` (npu-base).
Graph build(Strategy s) {
  Graph g;
  ValueId y = graph::kNoValue;
  switch (s) {
  case Strategy::TensorUnit: // two images: the space has every decision (nin, rowouter too)
    y = conv(g, 16, 32, 1, 8, 2);
    break;
  case Strategy::DepthwiseVector:
    y = conv(g, 24, 24, 24, 7);
    break;
  case Strategy::BatchMatmul: {
    ValueId a = input(g, "a", {2, 9, 20}), b = input(g, "b", {2, 20, 19});
    y = g.addValue("y", {2, 9, 19}, graph::DType::F32);
    g.addNode(graph::OpKind::MatMul, "mm", {a, b}, {y});
    break;
  }
  case Strategy::Attention: { // scores 2 x 24 x 40, then x [2, 40, 16] (npu-transformer)
    ValueId q = input(g, "q", {2, 24, 8}), k = input(g, "k", {2, 8, 40}), v = input(g, "v", {2, 40, 16});
    ValueId s = g.addValue("s", {2, 24, 40}, graph::DType::F32);
    g.addNode(graph::OpKind::MatMul, "qk", {q, k}, {s});
    ValueId p = g.addValue("p", {2, 24, 40}, graph::DType::F32);
    auto sm = g.addNode(graph::OpKind::Softmax, "sm", {s}, {p});
    g.node(sm).attrs["axis"] = int64_t(2);
    y = g.addValue("y", {2, 24, 16}, graph::DType::F32);
    g.addNode(graph::OpKind::MatMul, "pv", {p, v}, {y});
    break;
  }
  case Strategy::Pool: {
    ValueId x = input(g, "x", {1, 20, 9, 9});
    y = g.addValue("y", {1, 20, 4, 4}, graph::DType::F32);
    auto n = g.addNode(graph::OpKind::MaxPool, "pool", {x}, {y});
    g.node(n).attrs["kernel_shape"] = std::vector<int64_t>{3, 3};
    g.node(n).attrs["strides"] = std::vector<int64_t>{2, 2};
    break;
  }
  case Strategy::GlobalPool: {
    ValueId x = input(g, "x", {1, 24, 5, 5});
    y = g.addValue("y", {1, 24, 1, 1}, graph::DType::F32);
    g.addNode(graph::OpKind::GlobalAveragePool, "gap", {x}, {y});
    break;
  }
  case Strategy::Eltwise: {
    ValueId x = input(g, "x", {1, 16, 6, 6});
    y = g.addValue("y", {1, 16, 6, 6}, graph::DType::F32);
    g.addNode(graph::OpKind::Relu, "relu", {x}, {y});
    break;
  }
  case Strategy::Concat: {
    ValueId a = input(g, "a", {1, 8, 5, 5}), b = input(g, "b", {1, 4, 5, 5});
    y = g.addValue("y", {1, 12, 5, 5}, graph::DType::F32);
    auto n = g.addNode(graph::OpKind::Concat, "cat", {a, b}, {y});
    g.node(n).attrs["axis"] = int64_t(1);
    break;
  }
  case Strategy::LoopNest: {
    ValueId x = input(g, "x", {7, 13, 5});
    y = g.addValue("y", {5, 7, 13}, graph::DType::F32);
    auto n = g.addNode(graph::OpKind::Transpose, "tr", {x}, {y});
    g.node(n).attrs["perm"] = std::vector<int64_t>{2, 0, 1};
    break;
  }
  case Strategy::View: {
    ValueId x = input(g, "x", {2, 3, 4});
    ValueId shape = g.addConstantI64("shape", {2}, {2, 12});
    y = g.addValue("y", {2, 12}, graph::DType::F32);
    g.addNode(graph::OpKind::Reshape, "rs", {x, shape}, {y});
    break;
  }
  }
  oneGroup(g, y);
  return g;
}

struct Family {
  Graph g;
  isa::Target t;
  npu::Hw hw;
  npu::GroupPlan plan;
  npu::SpaceContext ctx;
  std::unique_ptr<npu::KernelSpace> space;

  // Attention needs the vector unit's exp: npu-transformer; the others npu-base.
  explicit Family(Strategy s)
      : g(build(s)), t(isa::loadTarget(configPath(s == Strategy::Attention ? "npu-transformer.yaml"
                                                                            : "npu-base.yaml"))) {
    EXPECT_EQ(npu::Hw::derive(t, hw), "");
    plan = npu::planGroup(g, g.groups[0], hw);
    ctx.hw = &hw;
    space = npu::makeSpace(s, plan, g, ctx);
  }
};

std::vector<Strategy> allStrategies() {
  std::vector<Strategy> all;
  for (int s = 0; s <= static_cast<int>(Strategy::View); ++s)
    all.push_back(static_cast<Strategy>(s));
  return all;
}

TEST(CostFeatures, TheDecisionListIsTheUnionOfEveryFamilysDecisions) {
  std::set<std::string> seen;
  for (Strategy s : allStrategies()) {
    SCOPED_TRACE(npu::strategyName(s));
    Family f(s);
    ASSERT_TRUE(f.space) << "every strategy has a space";
    ASSERT_EQ(f.space->strategy(), s);
    for (const npu::Decision &d : f.space->decisions())
      seen.insert(d.name);
  }
  const std::vector<std::string> &known = tune::knownDecisions();
  EXPECT_EQ(std::vector<std::string>(seen.begin(), seen.end()), known);
  EXPECT_TRUE(std::is_sorted(known.begin(), known.end()));
}

TEST(CostFeatures, OneLengthForEveryFamily) {
  const std::vector<float> task = {10.f, 12.5f};
  const size_t width = static_cast<size_t>(tune::scheduleFeatureCount()) + task.size();
  EXPECT_EQ(tune::featureNames(2).size(), width);
  for (Strategy s : allStrategies()) {
    SCOPED_TRACE(npu::strategyName(s));
    Family f(s);
    const std::vector<npu::Schedule> points = f.space->enumerate(6);
    ASSERT_FALSE(points.empty());
    tune::Featurizer fz(*f.space, task);
    for (const npu::Schedule &p : points) {
      std::vector<float> v = fz(p);
      ASSERT_EQ(v.size(), width) << p.str();
      EXPECT_EQ(v, tune::featurize(*f.space, p, task)) << "the free function is the same";
      // The strategy's one-hot slot and the task features, at the ends.
      const size_t slot = tune::knownDecisions().size() * tune::kFeaturesPerDecision;
      for (Strategy o : allStrategies())
        EXPECT_EQ(v[slot + static_cast<size_t>(o)], o == s ? 1.f : 0.f);
      EXPECT_EQ(v[width - 2], 10.f);
      EXPECT_EQ(v[width - 1], 12.5f);
      EXPECT_FLOAT_EQ(v[static_cast<size_t>(tune::costFeatureIndex())],
                      static_cast<float>(std::log2(1 + f.space->cost(p))));
    }
  }
}

// The depthwise conv's space on 24 channels of 7 rows: a point's features by hand.
TEST(CostFeatures, ValuesOfOnePoint) {
  Family f(Strategy::DepthwiseVector);
  const std::vector<std::string> names = tune::featureNames(0);
  auto at = [&](const std::string &n) {
    auto it = std::find(names.begin(), names.end(), n);
    EXPECT_NE(it, names.end()) << n;
    return static_cast<size_t>(it - names.begin());
  };
  // The largest toh is the 7 output rows; the largest tc the 24 channels (a tile of all).
  std::map<std::string, int64_t> largest;
  for (const npu::Decision &d : f.space->decisions())
    largest[d.name] = *std::max_element(d.values.begin(), d.values.end());
  ASSERT_EQ(largest.at("toh"), 7);
  ASSERT_EQ(largest.at("tc"), 24);
  npu::Schedule p;
  p.strategy = Strategy::DepthwiseVector;
  p.set("buffers", 1).set("toh", 3).set("tc", 24);
  ASSERT_TRUE(f.space->legal(p)) << p.str();
  std::vector<float> v = tune::featurize(*f.space, p, {});
  EXPECT_FLOAT_EQ(v[at("toh.log2")], 2.f); // log2(1 + 3)
  EXPECT_FLOAT_EQ(v[at("toh.rel")], -1.f); // log2(4) - log2(8)
  EXPECT_FLOAT_EQ(v[at("toh.present")], 1.f);
  EXPECT_FLOAT_EQ(v[at("tc.log2")], static_cast<float>(std::log2(25.0)));
  EXPECT_FLOAT_EQ(v[at("tc.rel")], 0.f);
  EXPECT_FLOAT_EQ(v[at("buffers.log2")], 1.f);
  EXPECT_FLOAT_EQ(v[at("buffers.rel")], static_cast<float>(1 - std::log2(3.0)));
  // A decision of other families: absent, all zero.
  EXPECT_EQ(v[at("tk.log2")], 0.f);
  EXPECT_EQ(v[at("tk.present")], 0.f);
  EXPECT_EQ(v[at("strategy.depthwise-vector")], 1.f);
  EXPECT_EQ(v[at("strategy.tensor-unit")], 0.f);
}

// The suggested task features of a conv + Relu group and of a MatMul, counted by hand.
TEST(CostFeatures, TaskFeaturesOfAConvAndAMatMul) {
  Graph g;
  ValueId c = conv(g, 16, 32, 1, 8); // 16 -> 32 channels, 8x8, 3x3 padded: 32 x 64 outputs
  ValueId y = g.addValue("r", {1, 32, 8, 8}, graph::DType::F32);
  g.addNode(graph::OpKind::Relu, "relu", {c}, {y});
  oneGroup(g, y);
  std::vector<float> f = tune::taskFeatures(g, g.groups[0]);
  ASSERT_EQ(f.size(), size_t(tune::kTaskFeatures));
  EXPECT_FLOAT_EQ(f[0], float(std::log2(1 + 2048.0 * 16 * 9))); // each output: 16 x 3 x 3 MACs
  EXPECT_FLOAT_EQ(f[1], float(std::log2(1 + 16.0 * 64)));       // the input
  EXPECT_FLOAT_EQ(f[2], float(std::log2(1 + 32.0 * 16 * 9)));   // the weights
  EXPECT_FLOAT_EQ(f[3], float(std::log2(1 + 2048.0)));          // the Relu's output

  Graph m = build(Strategy::BatchMatmul); // [2, 9, 20] x [2, 20, 19]
  f = tune::taskFeatures(m, m.groups[0]);
  EXPECT_FLOAT_EQ(f[0], float(std::log2(1 + 2 * 9 * 19 * 20.0)));
  EXPECT_FLOAT_EQ(f[1], float(std::log2(1 + 2 * 9 * 20 + 2 * 20 * 19.0)));
  EXPECT_EQ(f[2], 0.f); // no constants
  EXPECT_FLOAT_EQ(f[3], float(std::log2(1 + 2 * 9 * 19.0)));
}

} // namespace
} // namespace npuc::test
