// VectorMath.cpp - the vector unit's fp32 algorithms (VectorMath.h). Every step goes through
// add/mul/div below, in the order the RTL's npu_vmath.svh evaluates it; this file is compiled
// with -ffp-contract=off (isa/CMakeLists.txt) so that no product is fused into a sum.
#include "isa/VectorMath.h"

#include <bit>
#include <cmath>
#include <cstdint>

namespace npuc::isa::vmath {

namespace {

uint32_t bitsOf(float x) {
  return std::bit_cast<uint32_t>(x);
}
float fromBits(uint32_t u) {
  return std::bit_cast<float>(u);
}

constexpr uint32_t kQuietBit = 0x00400000u, kSignBit = 0x80000000u;
constexpr uint32_t kDefaultNan = 0xffc00000u, kPosInf = 0x7f800000u;

bool isNan(float x) {
  return (bitsOf(x) & 0x7fffffffu) > kPosInf;
}
float quiet(float x) {
  return fromBits(bitsOf(x) | kQuietBit);
}
float neg(float x) {
  return fromBits(bitsOf(x) ^ kSignBit);
}
float absOf(float x) {
  return fromBits(bitsOf(x) & ~kSignBit);
}
/// x with the sign of s.
float withSign(float x, float s) {
  return fromBits((bitsOf(x) & ~kSignBit) | (bitsOf(s) & kSignBit));
}

/// Subnormals as signed zero (operands: DAZ; results: FTZ).
float flush(float x) {
  return (bitsOf(x) & 0x7f800000u) == 0 ? fromBits(bitsOf(x) & kSignBit) : x;
}

/// The common tail of the binary ops: a NaN operand is returned quieted (a first), an invalid
/// operation gives the default NaN, a subnormal result is flushed.
template <typename F> float binary(float a, float b, F op) {
  if (isNan(a))
    return quiet(a);
  if (isNan(b))
    return quiet(b);
  float r = op(flush(a), flush(b));
  if (isNan(r))
    return fromBits(kDefaultNan);
  return flush(r);
}

/// Horner's rule c[0] + x (c[1] + x (c[2] + ...)), innermost (last) coefficient first.
template <int N> float horner(const float (&c)[N], float x) {
  float q = c[N - 1];
  for (int i = N - 2; i >= 0; --i)
    q = add(mul(q, x), c[i]);
  return q;
}

// exp: round(a log2 e) by adding 1.5 * 2^23 (the sum's low mantissa bits are the integer), and
// ln 2 split so that k * kLn2Hi is exact for |k| < 2^15 (kLn2Hi has 9 significant bits).
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kRoundMagic = 12582912.0f; // 1.5 * 2^23
constexpr float kLn2Hi = 0.693359375f;
constexpr float kLn2Lo = -2.12194440054690583e-4f;
/// 1/2!, ..., 1/7!: exp(r) = 1 + r + r^2 (1/2! + r (1/3! + ...)); the first omitted term,
/// r^8 / 8! at |r| = ln2 / 2, is 5e-9 relative.
constexpr float kExpPoly[] = {1.0f / 2, 1.0f / 6, 1.0f / 24, 1.0f / 120, 1.0f / 720, 1.0f / 5040};

/// tanh's Taylor coefficients of x^3, x^5, ..., x^17 (2^2n (2^2n - 1) B_2n / (2n)!); at
/// |x| = 0.5 the first omitted term is 1e-9 relative.
constexpr float kTanhPoly[] = {-0.333333333333333333f,   0.133333333333333333f,
                               -0.0539682539682539683f,  0.0218694885361552028f,
                               -0.00886323552990219657f, 0.00359212803657248102f,
                               -0.00145583438705131827f, 0.000590027440945585981f};

/// erf's Taylor coefficients of x, x^3, ..., x^21 (2 / sqrt(pi) (-1)^n / (n! (2n + 1))); at
/// |x| = 1 the first omitted term is 1.5e-9 relative.
constexpr float kErfPoly[] = {
    1.12837916709551257f,      -0.376126389031837525f,    0.112837916709551257f,
    -0.0268661706451312517f,   0.00522397762544218784f,   -0.000854832702345085283f,
    0.000120553329817896643f,  -1.49256503584062486e-05f, 1.64621143658892459e-06f,
    -1.63658446912349240e-07f, 1.48071928158792180e-08f};
/// Abramowitz & Stegun 7.1.26: erf(x) = 1 - t (a1 + t (a2 + ... + t a5)) exp(-x^2),
/// t = 1 / (1 + p x), |error| <= 1.5e-7 for x >= 0.
constexpr float kErfP = 0.3275911f;
constexpr float kErfAs[] = {0.254829592f, -0.284496736f, 1.421413741f, -1.453152027f, 1.061405429f};

} // namespace

float add(float a, float b) {
  return binary(a, b, [](float x, float y) { return x + y; });
}

float mul(float a, float b) {
  return binary(a, b, [](float x, float y) { return x * y; });
}

float div(float a, float b) {
  return binary(a, b, [](float x, float y) { return x / y; });
}

float sqrt(float a) {
  if (isNan(a))
    return quiet(a);
  a = flush(a);
  if (a < 0.0f)
    return fromBits(kDefaultNan);
  return std::sqrt(a); // the square root of a normal number is normal
}

float exp(float a) {
  if (isNan(a))
    return quiet(a);
  // Clamped so that k fits the exponent arithmetic; exp(89) overflows and exp(-104) underflows
  // fp32's normal range, so the results at the bounds are inf and 0 as the exact ones.
  float x = a > 89.0f ? 89.0f : a;
  x = -104.0f > x ? -104.0f : x;
  float t = add(mul(x, kLog2e), kRoundMagic);
  int32_t k = static_cast<int32_t>(bitsOf(t) - bitsOf(kRoundMagic));
  float kf = add(t, -kRoundMagic);
  float r = add(x, mul(kf, -kLn2Hi));
  r = add(r, mul(kf, -kLn2Lo));
  float p = add(add(mul(horner(kExpPoly, r), mul(r, r)), r), 1.0f);
  // p is in [0.7, 1.5]: scaling by 2^k adds k to its exponent field.
  int32_t e = static_cast<int32_t>((bitsOf(p) >> 23) & 0xffu) + k;
  if (e >= 255)
    return fromBits(kPosInf);
  if (e <= 0)
    return 0.0f;
  return fromBits((bitsOf(p) & ~0x7f800000u) | (static_cast<uint32_t>(e) << 23));
}

float sigmoid(float a) {
  if (isNan(a))
    return quiet(a);
  return div(1.0f, add(1.0f, exp(neg(a))));
}

float tanh(float a) {
  if (isNan(a))
    return quiet(a);
  float x = absOf(a), y;
  if (0.5f > x) {
    float z = mul(x, x);
    y = add(mul(mul(horner(kTanhPoly, z), z), x), x);
  } else if (10.0f > x) {
    y = add(1.0f, neg(div(2.0f, add(exp(add(x, x)), 1.0f))));
  } else {
    y = 1.0f; // 1 - tanh(10) = 4e-9 rounds away
  }
  return withSign(y, a);
}

float erf(float a) {
  if (isNan(a))
    return quiet(a);
  float x = absOf(a), y;
  if (1.0f > x) {
    y = mul(horner(kErfPoly, mul(x, x)), x);
  } else if (4.0f > x) {
    float t = div(1.0f, add(1.0f, mul(kErfP, x)));
    float q = mul(horner(kErfAs, t), t);
    y = add(1.0f, neg(mul(q, exp(neg(mul(x, x))))));
  } else {
    y = 1.0f; // 1 - erf(4) = 1.5e-8 rounds away
  }
  return withSign(y, a);
}

} // namespace npuc::isa::vmath
