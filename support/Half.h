// Half.h - IEEE 754 binary16 conversions, bit exact, round to nearest even.
//
// The NPU stores operands in fp16; the simulator and the compiler's constant packing both use
// these functions so that the rounding is identical everywhere.
#pragma once

#include <cstddef>
#include <cstdint>

namespace npuc {

uint16_t floatToHalf(float f);
float halfToFloat(uint16_t h);
/// Bulk forms, bit for bit the scalar ones on every input (NaN payloads included); F16C
/// instructions where the CPU has them (the NPU's device crossings convert whole tensors).
void floatsToHalves(const float *src, uint16_t *dst, size_t n);
void halvesToFloats(const uint16_t *src, float *dst, size_t n);
/// Rounds a float to the nearest representable fp16 value (returned as float).
inline float roundToHalf(float f) {
  return halfToFloat(floatToHalf(f));
}

} // namespace npuc
