// HalfTable.cpp - the fp16 -> fp32 table of HalfTable.h, built by the compiler (constinit).
//
// halfBits mirrors support/Half.cpp's halfToFloat step for step (sign, subnormal normalisation,
// infinities and NaNs keeping their payload); it is repeated here only because that function is
// not constexpr. SimFunctional.HalfTableMatchesHalfToFloat compares all 65536 entries.
#include "simulator/HalfTable.h"

#include <bit>

namespace npuc::sim {

namespace {

constexpr uint32_t halfBits(uint16_t h) {
  uint32_t sign = (static_cast<uint32_t>(h) & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  if (exp == 0) {
    if (man == 0)
      return sign;
    int e = -1; // subnormal: normalise
    do {
      ++e;
      man <<= 1;
    } while (!(man & 0x400u));
    return sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((man & 0x3ffu) << 13);
  }
  if (exp == 0x1f)
    return sign | 0x7f800000u | (man << 13);
  return sign | ((exp + 127 - 15) << 23) | (man << 13);
}

constexpr std::array<float, 65536> makeTable() {
  std::array<float, 65536> t{};
  for (uint32_t h = 0; h < 65536; ++h)
    t[h] = std::bit_cast<float>(halfBits(static_cast<uint16_t>(h)));
  return t;
}

} // namespace

constinit const std::array<float, 65536> kHalfToFloat = makeTable();

} // namespace npuc::sim
