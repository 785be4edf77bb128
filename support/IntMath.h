// IntMath.h - integer rounding shared by the compiler, the simulator and the driver.
#pragma once

#include <cstdint>

namespace npuc {

/// ceil(a / b) for a >= 0, b > 0.
inline int64_t ceilDiv(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

/// v rounded up to a multiple of a (a > 0).
inline int64_t alignUp(int64_t v, int64_t a) {
  return ceilDiv(v, a) * a;
}

} // namespace npuc
