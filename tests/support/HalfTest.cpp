// HalfTest.cpp - the bulk fp16 conversions (F16C where the CPU has it) against the scalar ones,
// bit for bit, on every half and on random and edge-case floats, at lengths that leave a tail;
// and the scalar ones on values whose fp16 encoding is worked out by hand.
#include "support/Half.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using npuc::floatToHalf;
using npuc::halfToFloat;

namespace {

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float fromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

TEST(Half, ScalarEncodingsWorkedOutByHand) {
  EXPECT_EQ(floatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(floatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7bff);              // the largest half
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00);              // halfway to 2^16: to even, infinity
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -24)), 0x0001); // the smallest subnormal
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -25)), 0x0000); // halfway to it: to even, zero
  EXPECT_EQ(floatToHalf(std::ldexp(3.0f, -25)), 0x0002); // 1.5 ulps: to even, 2
  EXPECT_EQ(floatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3c00); // halfway above 1: to even
  EXPECT_TRUE(std::isnan(halfToFloat(0x7e00)));
  EXPECT_EQ(bits(halfToFloat(0x7d00)), 0x7fa00000u); // a signalling NaN stays signalling
}

TEST(Half, BulkHalvesToFloatsIsTheScalarOnEveryHalf) {
  std::vector<uint16_t> all(65536);
  for (uint32_t h = 0; h < 65536; ++h)
    all[h] = static_cast<uint16_t>(h);
  for (size_t skip : {size_t(0), size_t(3)}) { // a tail shorter than a vector, both ends
    const size_t n = all.size() - skip;
    std::vector<float> got(n);
    npuc::halvesToFloats(all.data() + skip, got.data(), n);
    for (size_t i = 0; i < n; ++i)
      ASSERT_EQ(bits(got[i]), bits(halfToFloat(all[i + skip]))) << std::hex << all[i + skip];
  }
}

TEST(Half, BulkFloatsToHalvesIsTheScalar) {
  std::vector<float> in;
  const float inf = std::numeric_limits<float>::infinity();
  for (float f : {0.0f, -0.0f, 1.0f, 65504.0f, 65519.99f, 65520.0f, -65520.0f, inf, -inf,
                  std::ldexp(1.0f, -24), std::ldexp(1.0f, -25), std::ldexp(3.0f, -25),
                  std::ldexp(1.0f, -14), std::ldexp(1.0f, -140), fromBits(0x7fc00001u),
                  fromBits(0x7f800001u), fromBits(0xffbfffffu), fromBits(0x00000001u)})
    in.push_back(f);
  // Every tie: the midpoints between neighbouring halves of the normal and subnormal range.
  for (uint32_t h = 0; h < 0x7bff; h += 97) {
    double mid = (double(halfToFloat(uint16_t(h))) + double(halfToFloat(uint16_t(h + 1)))) / 2;
    in.push_back(static_cast<float>(mid));
    in.push_back(-static_cast<float>(mid));
  }
  std::mt19937 rng(11);
  for (int i = 0; i < 200000; ++i)
    in.push_back(fromBits(static_cast<uint32_t>(rng()))); // any bits: NaNs, subnormals, huge
  in.push_back(0.5f);                                     // an odd length: a scalar tail
  ASSERT_NE(in.size() % 8, 0u);
  std::vector<uint16_t> got(in.size());
  npuc::floatsToHalves(in.data(), got.data(), in.size());
  for (size_t i = 0; i < in.size(); ++i)
    ASSERT_EQ(got[i], floatToHalf(in[i])) << std::hex << bits(in[i]);
}

} // namespace
