// CalibrationTest.cpp - the int8 calibration methods (npu/hw/Calibration.h) on distributions
// whose right threshold is known, and calibration over a set of samples (npu/hw/Quant.h).
#include "npu/hw/Calibration.h"
#include "graph/Graph.h"
#include "npu/hw/Quant.h"
#include "support/Error.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace npuc {
namespace {

using npu::CalibrationMethod;
using npu::CalibrationSpec;
using npu::MagnitudeHistogram;

CalibrationSpec spec(CalibrationMethod m) {
  CalibrationSpec s;
  s.method = m;
  return s;
}

// n magnitudes evenly spread over (0, 1): (i + 0.5) / n, the uniform distribution on [-1, 1]
// folded, plus `extra`.
std::vector<float> uniformGrid(int n, std::vector<float> extra = {}) {
  std::vector<float> xs;
  for (int i = 0; i < n; ++i)
    xs.push_back((static_cast<float>(i) + 0.5f) / static_cast<float>(n) * (i % 2 ? 1.f : -1.f));
  xs.insert(xs.end(), extra.begin(), extra.end());
  return xs;
}

MagnitudeHistogram histogramOf(const std::vector<float> &xs) {
  float m = 0;
  for (float x : xs)
    if (std::isfinite(x))
      m = std::max(m, std::fabs(x));
  MagnitudeHistogram h(m);
  h.add(xs);
  return h;
}

TEST(Calibration, MaxIsTheLargestMagnitude) {
  MagnitudeHistogram h = histogramOf({0.5f, -3.25f, 1.0f});
  EXPECT_FLOAT_EQ(h.limit(), 3.25f);
  EXPECT_FLOAT_EQ(npu::chooseThreshold(h, spec(CalibrationMethod::Max)), 3.25f);
}

// The 99th percentile of the magnitudes 0.5, 1.5, ..., 9999.5 is 9899.5 (the 9,900th): the
// threshold is the upper edge of its bin, within one bin width (10000 / 2048) of it.
TEST(Calibration, PercentileIsTheQuantileToABin) {
  std::vector<float> xs;
  for (int i = 0; i < 10000; ++i)
    xs.push_back(static_cast<float>(i) + 0.5f);
  MagnitudeHistogram h(10000.f);
  h.add(xs);
  CalibrationSpec s = spec(CalibrationMethod::Percentile);
  s.percentile = 99;
  const float t = npu::chooseThreshold(h, s);
  EXPECT_GE(t, 9899.5f);
  EXPECT_LE(t, 9899.5f + h.binWidth());
  s.percentile = 100;
  EXPECT_FLOAT_EQ(npu::chooseThreshold(h, s), 10000.f);
}

// Uniform on [-1, 1], symmetric int8 with threshold T (step s = T / 127): the expected squared
// error is T * s^2 / 12 inside plus (1 - T)^3 / 3 clipped, least at T = 254/255 (derivative
// T / 254 = 1 - T). The histogram finds it to within two bins.
TEST(Calibration, MseOfAUniformDistributionIsTheAnalyticOptimum) {
  MagnitudeHistogram h = histogramOf(uniformGrid(1000000));
  const float t = npu::chooseThreshold(h, spec(CalibrationMethod::Mse));
  EXPECT_NEAR(t, 254.0 / 255.0, 2 * h.binWidth());
  EXPECT_LT(t, h.limit()); // clipping the top 0.4% beats max
}

// One outlier at 10 among a million uniform magnitudes in (0, 1): for T >= 1 the expected
// squared error is N T^2 / (12 * 127^2) (rounding, every value inside) plus (10 - T)^2 (the
// clipped outlier), least at T = 10 / (1 + N / (12 * 127^2)) = 1.6216; max would keep 10.
TEST(Calibration, MseBalancesRoundingAgainstClippingAnOutlier) {
  const double n = 1e6;
  MagnitudeHistogram h = histogramOf(uniformGrid(static_cast<int>(n), {10.f}));
  const double best = 10 / (1 + n / (12 * 127.0 * 127.0));
  EXPECT_NEAR(npu::chooseThreshold(h, spec(CalibrationMethod::Mse)), best, 3 * h.binWidth());
}

// Magnitudes of density proportional to 2 - x on [0, 1] (decreasing but never 0 up to the
// edge) plus one outlier at 10. A threshold below 1 folds a share of the body into its last
// level, which Q (the clipped histogram merged into 128 levels) does not hold: a large
// divergence. Above 1 the outlier is clipped and the body is merged 1, 2, ... bins per level
// (kept / 128, rounded down, the rest into the last level, as TensorRT and MXNet merge), which
// loses least once the body spans whole levels of 2 bins: the threshold keeps the whole body and
// clips the outlier, between 1 and 2.5 (the body is 205 of the 2048 bins of [0, 10]; 256 to 383
// kept bins, 1.25 to 1.87, merge alike). Max would keep 10.
TEST(Calibration, EntropyKeepsTheBodyAndClipsAnOutlier) {
  std::vector<float> xs;
  const int n = 1000000;
  for (int i = 0; i < n; ++i) { // inverse CDF of f(x) = (2 - x) / 1.5: x = 2 - sqrt(4 - 3u)
    const double u = (i + 0.5) / n;
    xs.push_back(static_cast<float>(2 - std::sqrt(4 - 3 * u)));
  }
  xs.push_back(10.f);
  MagnitudeHistogram h = histogramOf(xs);
  const float t = npu::chooseThreshold(h, spec(CalibrationMethod::Entropy));
  EXPECT_GE(t, 1.0f);
  EXPECT_LE(t, 2.5f);
}

// Without outliers there is nothing to clip: entropy keeps (nearly) the whole range.
TEST(Calibration, EntropyOfAUniformDistributionKeepsTheRange) {
  MagnitudeHistogram h = histogramOf(uniformGrid(100000));
  EXPECT_GE(npu::chooseThreshold(h, spec(CalibrationMethod::Entropy)), 0.95f);
}

TEST(Calibration, NonFiniteValuesAndEmptyHistogramsFallBackToTheLimit) {
  MagnitudeHistogram h(2.f);
  h.add({std::numeric_limits<float>::quiet_NaN(), INFINITY, -INFINITY, 1.f});
  EXPECT_EQ(h.total(), 1);
  MagnitudeHistogram empty(0.f);
  empty.add({0.f, 0.f});
  for (CalibrationMethod m : {CalibrationMethod::Max, CalibrationMethod::Percentile,
                              CalibrationMethod::Entropy, CalibrationMethod::Mse})
    EXPECT_EQ(npu::chooseThreshold(empty, spec(m)), 0.f) << spec(m).name();
  EXPECT_EQ(MagnitudeHistogram(INFINITY).limit(), 0.f);
}

TEST(Calibration, MethodNamesParseBack) {
  for (const char *name : {"max", "percentile:99.99", "percentile:90", "entropy", "mse"})
    EXPECT_EQ(npu::parseCalibrationMethod(name, "--m").name(), name);
  EXPECT_EQ(npu::parseCalibrationMethod("percentile", "--m").percentile, 99.99);
  auto message = [](const std::string &text) {
    try {
      npu::parseCalibrationMethod(text, "--m");
    } catch (const Error &e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("kl"), "--m 'kl': unknown calibration method; expected max, percentile, "
                           "percentile:Q (0 < Q <= 100), entropy or mse");
  for (const char *bad :
       {"percentile:", "percentile:0", "percentile:100.5", "percentile:9x", "percentile:nan"})
    EXPECT_NE(message(bad).find("is not a number in (0, 100]"), std::string::npos) << bad;
}

// Over a set, a value's range is the largest over every sample: Relu(x) sees 2 in one and 5 in
// the other, so its scale is 5/127 whichever sample comes first.
TEST(Calibration, MaxOverASetIsTheLargestOfTheSamples) {
  graph::Graph g;
  auto x = g.addValue("x", {1, 4}, graph::DType::F32);
  auto y = g.addValue("y", {1, 4}, graph::DType::F32);
  g.inputs = {x};
  g.addNode(graph::OpKind::Relu, "relu", {x}, {y});
  g.outputs = {y};
  std::map<graph::ValueId, HostTensor> a = {{x, HostTensor({1, 4}, {2.f, -1.f, 0.5f, 0.f})}};
  std::map<graph::ValueId, HostTensor> b = {{x, HostTensor({1, 4}, {1.f, 5.f, -7.f, 0.f})}};
  for (const auto &set : {std::vector{a, b}, std::vector{b, a}}) {
    npu::QuantTable q = npu::calibrate(g, set, CalibrationSpec{}, "test");
    EXPECT_FLOAT_EQ(q.of(y), 5.f / 127);
    EXPECT_FLOAT_EQ(q.of(x), 7.f / 127);
  }
  // A single sample calibrates as before.
  EXPECT_FLOAT_EQ(npu::calibrate(g, a, "test").of(y), 2.f / 127);
}

} // namespace
} // namespace npuc
