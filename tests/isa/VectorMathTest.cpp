// VectorMathTest.cpp - the vector unit's fp32 algorithms (isa/VectorMath.h): the error bounds
// docs/ISA.md states, measured here against double-precision libm on a sample of every fp32
// bit pattern, and the special values and flush rules the RTL datapath shares (the RTL side is
// tests/rtl/RtlProgramTest.cpp, MathOpsBitExactOnEveryOperandClass).
#include "isa/VectorMath.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>

using namespace npuc::isa;

namespace {

uint32_t bitsOf(float x) {
  return std::bit_cast<uint32_t>(x);
}
float fromBits(uint32_t u) {
  return std::bit_cast<float>(u);
}

constexpr double kMinNormal = 1.17549435082228751e-38, kMaxFloat = 3.40282346638528860e38;

struct Bound {
  double ulps;     // relative bound in fp32 ulps of the exact result
  double absolute; // or this absolute bound, whichever is larger (0: none)
};

/// The worst error of f against the exact function over every 4099th bit pattern whose
/// operand and exact result are normal fp32 numbers, in units of the bound (<= 1 passes).
double worstOverBound(const std::function<float(float)> &f, const std::function<double(double)> &g,
                      Bound b, std::string *where) {
  double worst = 0;
  for (uint64_t u = 0; u < (uint64_t(1) << 32); u += 4099) {
    float x = fromBits(static_cast<uint32_t>(u));
    double exact = g(x);
    if (!std::isfinite(x) || std::fabs(x) < kMinNormal || !(std::fabs(exact) >= kMinNormal) ||
        std::fabs(exact) > kMaxFloat)
      continue;
    double ulp = std::ldexp(1.0, std::ilogb(exact) - 23);
    double err = std::fabs(double(f(x)) - exact) / std::max(b.ulps * ulp, b.absolute);
    if (err > worst) {
      worst = err;
      *where = std::to_string(x);
    }
  }
  return worst;
}

TEST(VectorMath, WithinTheStatedErrorBounds) {
  std::string at;
  EXPECT_LE(worstOverBound(
                vmath::exp, [](double x) { return std::exp(x); }, {1.5, 0}, &at),
            1.0)
      << "exp at " << at;
  EXPECT_LE(worstOverBound(
                vmath::sigmoid, [](double x) { return 1 / (1 + std::exp(-x)); }, {2.5, 0}, &at),
            1.0)
      << "sigmoid at " << at;
  EXPECT_LE(worstOverBound(
                vmath::tanh, [](double x) { return std::tanh(x); }, {2, 0}, &at),
            1.0)
      << "tanh at " << at;
  auto erfSmall = [](float x) { return std::fabs(x) < 1 ? vmath::erf(x) : float(std::erf(x)); };
  EXPECT_LE(worstOverBound(
                erfSmall, [](double x) { return std::erf(x); }, {3, 0}, &at),
            1.0)
      << "erf at " << at;
  EXPECT_LE(worstOverBound(
                vmath::erf, [](double x) { return std::erf(x); }, {0, 2e-7}, &at),
            1.0)
      << "erf at " << at;
  // Correctly rounded: within half an ulp.
  EXPECT_LE(worstOverBound(
                vmath::sqrt, [](double x) { return std::sqrt(x); }, {0.5, 0}, &at),
            1.0)
      << "sqrt at " << at;
  auto recip = [](float x) { return vmath::div(1.0f, x); };
  EXPECT_LE(worstOverBound(
                recip, [](double x) { return 1 / x; }, {0.5, 0}, &at),
            1.0)
      << "1 / x at " << at;
}

TEST(VectorMath, OddFunctionsAreOddBitForBit) {
  for (uint64_t u = 0; u < (uint64_t(1) << 31); u += 8191) {
    float x = fromBits(static_cast<uint32_t>(u)), m = -x;
    if (std::isnan(x))
      continue;
    EXPECT_EQ(bitsOf(vmath::tanh(m)), bitsOf(-vmath::tanh(x))) << x;
    EXPECT_EQ(bitsOf(vmath::erf(m)), bitsOf(-vmath::erf(x))) << x;
  }
}

TEST(VectorMath, SpecialValues) {
  const float inf = INFINITY;
  const uint32_t defaultNan = 0xffc00000u;
  EXPECT_EQ(vmath::exp(0.0f), 1.0f);
  EXPECT_EQ(vmath::exp(-0.0f), 1.0f);
  EXPECT_EQ(vmath::exp(inf), inf);
  EXPECT_EQ(bitsOf(vmath::exp(-inf)), 0u);
  // exp(88.72) = 3.4e38 is the largest finite result; exp(88.73) overflows.
  EXPECT_TRUE(std::isfinite(vmath::exp(88.72f)));
  EXPECT_EQ(vmath::exp(88.73f), inf);
  // Results below the smallest normal (exp(-87.34) = 1.17e-38) are flushed to +0.
  EXPECT_GE(vmath::exp(-87.3f), float(kMinNormal));
  EXPECT_EQ(bitsOf(vmath::exp(-87.5f)), 0u);
  EXPECT_EQ(vmath::sigmoid(inf), 1.0f);
  EXPECT_EQ(bitsOf(vmath::sigmoid(-inf)), 0u);
  EXPECT_EQ(vmath::sigmoid(0.0f), 0.5f);
  EXPECT_EQ(vmath::tanh(inf), 1.0f);
  EXPECT_EQ(vmath::tanh(-inf), -1.0f);
  EXPECT_EQ(bitsOf(vmath::tanh(-0.0f)), 0x80000000u);
  EXPECT_EQ(vmath::erf(inf), 1.0f);
  EXPECT_EQ(bitsOf(vmath::erf(-0.0f)), 0x80000000u);
  // A NaN operand comes back quieted, with its sign and payload.
  for (auto f : {vmath::exp, vmath::tanh, vmath::sigmoid, vmath::erf, vmath::sqrt})
    EXPECT_EQ(bitsOf(f(fromBits(0xff800001u))), 0xffc00001u);
  EXPECT_EQ(bitsOf(vmath::div(fromBits(0x7f800002u), fromBits(0xffc00003u))), 0x7fc00002u);
  EXPECT_EQ(bitsOf(vmath::div(1.0f, fromBits(0xffc00003u))), 0xffc00003u);
  // Invalid operations give the default NaN.
  EXPECT_EQ(bitsOf(vmath::div(0.0f, 0.0f)), defaultNan);
  EXPECT_EQ(bitsOf(vmath::div(inf, -inf)), defaultNan);
  EXPECT_EQ(bitsOf(vmath::sqrt(-1.0f)), defaultNan);
  EXPECT_EQ(bitsOf(vmath::mul(0.0f, inf)), defaultNan);
  EXPECT_EQ(bitsOf(vmath::add(inf, -inf)), defaultNan);
  EXPECT_EQ(vmath::div(-1.0f, 0.0f), -inf);
  EXPECT_EQ(bitsOf(vmath::div(-1.0f, inf)), 0x80000000u);
  EXPECT_EQ(bitsOf(vmath::sqrt(-0.0f)), 0x80000000u);
  EXPECT_EQ(vmath::sqrt(inf), inf);
}

TEST(VectorMath, SubnormalsAreFlushedAsTheRtlDoes) {
  const float sub = 1e-40f, minNormal = float(kMinNormal);
  ASSERT_EQ(std::fpclassify(sub), FP_SUBNORMAL);
  // Operands read as zero (DAZ) ...
  EXPECT_EQ(vmath::div(1.0f, sub), INFINITY);
  EXPECT_EQ(bitsOf(vmath::sqrt(-sub)), 0x80000000u);
  EXPECT_EQ(vmath::exp(sub), 1.0f);
  EXPECT_EQ(bitsOf(vmath::tanh(-sub)), 0x80000000u);
  EXPECT_EQ(vmath::add(sub, 1.0f), 1.0f);
  // ... and results below the normal range become signed zero (FTZ).
  EXPECT_EQ(bitsOf(vmath::mul(minNormal, -0.5f)), 0x80000000u);
  EXPECT_EQ(bitsOf(vmath::div(minNormal, 4.0f)), 0u);
  EXPECT_EQ(bitsOf(vmath::add(minNormal * 1.5f, -minNormal)), 0u);
  EXPECT_EQ(vmath::mul(minNormal, 2.0f), 2 * minNormal);
}

} // namespace
