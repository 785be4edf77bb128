// The accuracy report's per-tensor figures (tools/driver/Accuracy.h) on tensors whose errors are
// worked out by hand.
#include "tools/driver/Accuracy.h"

#include <gtest/gtest.h>

#include <cmath>

namespace npuc::driver {
namespace {

TEST(Accuracy, FiguresOfOneWrongElement) {
  // ref [1, 2, 3, 4], got [1, 2, 3, 5]: one error of 1. sum ref^2 = 30, sum got^2 = 39,
  // dot = 1 + 4 + 9 + 20 = 34, sum err^2 = 1.
  TensorError e = measureError(HostTensor({4}, {1, 2, 3, 5}), HostTensor({4}, {1, 2, 3, 4}));
  EXPECT_DOUBLE_EQ(e.maxAbsErr, 1.0);
  EXPECT_DOUBLE_EQ(e.meanAbsErr, 0.25);
  EXPECT_DOUBLE_EQ(e.refMaxAbs, 4.0);
  EXPECT_NEAR(e.cosine, 34.0 / std::sqrt(30.0 * 39.0), 1e-12);
  EXPECT_NEAR(e.snrDb, 10.0 * std::log10(30.0), 1e-12);
  EXPECT_EQ(e.nonFinite, 0);
}

TEST(Accuracy, ExactZeroAndNonFinite) {
  TensorError same = measureError(HostTensor({2}, {0.5f, -2}), HostTensor({2}, {0.5f, -2}));
  EXPECT_EQ(same.maxAbsErr, 0.0);
  EXPECT_TRUE(std::isinf(same.snrDb) && same.snrDb > 0);
  EXPECT_NEAR(same.cosine, 1.0, 1e-15);
  // All zeros on both sides agree (cosine 1); zeros against a signal do not (cosine 0).
  EXPECT_EQ(measureError(HostTensor({2}, {0, 0}), HostTensor({2}, {0, 0})).cosine, 1.0);
  EXPECT_EQ(measureError(HostTensor({2}, {0, 0}), HostTensor({2}, {1, 0})).cosine, 0.0);
  // NaN against NaN and inf against inf agree; NaN against 1 and inf against -inf do not, and
  // they stay out of the finite figures.
  const float nan = std::nanf(""), inf = INFINITY;
  TensorError e = measureError(HostTensor({5}, {nan, inf, nan, inf, 2}),
                               HostTensor({5}, {nan, inf, 1, -inf, 2}));
  EXPECT_EQ(e.nonFinite, 2);
  EXPECT_EQ(e.maxAbsErr, 0.0);
}

TEST(Accuracy, IntegerTensorsCompareByValue) {
  TensorError e = measureError(HostTensor({3}, {1, 2, 7}), HostTensor({3}, DType::I64, {1, 2, 3}));
  EXPECT_DOUBLE_EQ(e.maxAbsErr, 4.0);
}

} // namespace
} // namespace npuc::driver
