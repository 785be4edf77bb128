// HalfTable.h - table-driven fp16 -> fp32 conversion for the simulator's hot loops.
//
// support/Half.h's halfToFloat is an out-of-line bit manipulation; the simulator converts every
// matmul operand and every fp16 vector operand, so it uses a 65536-entry table built once from
// halfToFloat itself (hence bit-identical, NaN payloads included).
#pragma once

#include <cstdint>

namespace npuc::sim {

/// The table: entry h is halfToFloat(h).
const float *halfTable();

inline float fastHalfToFloat(uint16_t h) {
  static const float *table = halfTable();
  return table[h];
}

} // namespace npuc::sim
