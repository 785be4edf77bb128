// HalfTable.h - table-driven fp16 -> fp32 conversion for the simulator's hot loops.
//
// support/Half.h's halfToFloat is an out-of-line bit manipulation; the simulator converts every
// matmul operand and every fp16 vector operand, so it reads a 65536-entry table instead. The table
// is computed at compile time (HalfTable.cpp, the same bit manipulation) so that no run pays for
// building it; SimFunctional.HalfTableMatchesHalfToFloat checks every entry, NaN payloads
// included, against halfToFloat.
#pragma once

#include <array>
#include <cstdint>

namespace npuc::sim {

/// Entry h is halfToFloat(h).
extern const std::array<float, 65536> kHalfToFloat;

/// The table's first entry.
inline const float *halfTable() {
  return kHalfToFloat.data();
}

inline float fastHalfToFloat(uint16_t h) {
  return kHalfToFloat[h];
}

} // namespace npuc::sim
