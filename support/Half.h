// Half.h - IEEE 754 binary16 conversions, bit exact, round to nearest even.
//
// The NPU stores operands in fp16; the simulator and the compiler's constant packing both use
// these functions so that the rounding is identical everywhere.
#pragma once

#include <cstdint>

namespace npuc {

uint16_t floatToHalf(float f);
float halfToFloat(uint16_t h);
/// Rounds a float to the nearest representable fp16 value (returned as float).
inline float roundToHalf(float f) {
  return halfToFloat(floatToHalf(f));
}

} // namespace npuc
