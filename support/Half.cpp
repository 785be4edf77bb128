// Half.cpp - binary16 <-> binary32 conversion with round-to-nearest-even, subnormals, inf, NaN.
#include "support/Half.h"

#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#define NPUC_HALF_F16C 1
#endif

namespace npuc {

uint16_t floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t exp = (x >> 23) & 0xffu;
  uint32_t man = x & 0x7fffffu;
  if (exp == 0xff) // inf or NaN (keep NaN quiet and non-zero)
    return static_cast<uint16_t>(sign | 0x7c00u | (man ? 0x200u | (man >> 13) : 0u));
  int32_t e = static_cast<int32_t>(exp) - 127 + 15;
  if (e >= 0x1f) // overflow to infinity
    return static_cast<uint16_t>(sign | 0x7c00u);
  if (e <= 0) {
    // Subnormal half (or zero): shift the full mantissa (with hidden bit) into place.
    if (e < -10)
      return static_cast<uint16_t>(sign);
    uint32_t m = man | 0x800000u;
    uint32_t shift = static_cast<uint32_t>(14 - e);
    uint32_t half = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1u);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u)))
      ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = (static_cast<uint32_t>(e) << 10) | (man >> 13);
  uint32_t rem = man & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u)))
    ++half; // may carry into the exponent, which is the correct rounding up to inf
  return static_cast<uint16_t>(sign | half);
}

float halfToFloat(uint16_t h) {
  uint32_t sign = (static_cast<uint32_t>(h) & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  uint32_t x;
  if (exp == 0) {
    if (man == 0) {
      x = sign;
    } else { // subnormal: normalise
      int e = -1;
      do {
        ++e;
        man <<= 1;
      } while (!(man & 0x400u));
      x = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((man & 0x3ffu) << 13);
    }
  } else if (exp == 0x1f) {
    x = sign | 0x7f800000u | (man << 13);
  } else {
    x = sign | ((exp + 127 - 15) << 23) | (man << 13);
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

namespace {

#ifdef NPUC_HALF_F16C
// CPUID leaf 1: F16C, AVX and OSXSAVE; XCR0: the OS saves the YMM registers. (Not
// __builtin_cpu_supports: clang 16 does not know "f16c".)
bool hasF16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d))
    return false;
  const unsigned need = (1u << 27) | (1u << 28) | (1u << 29);
  if ((c & need) != need)
    return false;
  unsigned lo = 0, hi = 0;
  __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (lo & 6u) == 6u;
}

// vcvtps2ph with round-to-nearest-even is IEEE's conversion, as floatToHalf: the same rounding,
// subnormals, infinities, and NaNs quieted with the top mantissa bits kept.
__attribute__((target("avx,f16c"))) size_t floatsToHalvesF16c(const float *src, uint16_t *dst,
                                                              size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i *>(dst + i), h);
  }
  return i;
}

// vcvtph2ps is exact, but quiets a signalling NaN, which halfToFloat keeps as it is: a block
// holding one goes the scalar way.
__attribute__((target("avx,f16c"))) size_t halvesToFloatsF16c(const uint16_t *src, float *dst,
                                                              size_t n) {
  const __m128i expQuiet = _mm_set1_epi16(0x7e00), signalling = _mm_set1_epi16(0x7c00),
                payload = _mm_set1_epi16(0x01ff), zero = _mm_setzero_si128();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + i));
    __m128i snanExp = _mm_cmpeq_epi16(_mm_and_si128(h, expQuiet), signalling);
    __m128i noPayload = _mm_cmpeq_epi16(_mm_and_si128(h, payload), zero);
    if (_mm_movemask_epi8(_mm_andnot_si128(noPayload, snanExp)) != 0)
      for (size_t k = i; k < i + 8; ++k)
        dst[k] = halfToFloat(src[k]);
    else
      _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
  }
  return i;
}
#endif

} // namespace

void floatsToHalves(const float *src, uint16_t *dst, size_t n) {
  size_t i = 0;
#ifdef NPUC_HALF_F16C
  if (hasF16c())
    i = floatsToHalvesF16c(src, dst, n);
#endif
  for (; i < n; ++i)
    dst[i] = floatToHalf(src[i]);
}

void halvesToFloats(const uint16_t *src, float *dst, size_t n) {
  size_t i = 0;
#ifdef NPUC_HALF_F16C
  if (hasF16c())
    i = halvesToFloatsF16c(src, dst, n);
#endif
  for (; i < n; ++i)
    dst[i] = halfToFloat(src[i]);
}

} // namespace npuc
