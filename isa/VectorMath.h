// VectorMath.h - the vector unit's arithmetic, defined as exact fp32 algorithms.
//
// The simulator computes the vector ops with these functions and the RTL core's vector unit
// (simulator/rtl/hdl/npu_vmath.svh) implements the same steps in the same order, so the two
// agree bit for bit. Each transcendental op is a sequence of fp32 additions, multiplications and
// divisions, each rounded to nearest-even, with the RTL datapath's conventions (docs/ISA.md
// "vector math"):
//   - subnormal operands are read as zero and subnormal results are flushed to signed zero
//     (DAZ/FTZ), in every step;
//   - a NaN operand is returned quieted (the first NaN operand of a binary op); an invalid
//     operation (0/0, inf/inf, sqrt of a negative number, 0 * inf, inf - inf) gives the default
//     NaN 0xffc00000.
// div and sqrt are IEEE-754 correctly rounded apart from DAZ/FTZ. The others differ from the
// exact function by at most the bounds below (measured against double-precision libm over every
// 61st fp32 bit pattern, worst cases 1.01, 2.37, 1.85 and 2.74 ulp / 1.9e-7; tests/isa/
// VectorMathTest.cpp checks the bounds on a sample, docs/ISA.md states them):
//   exp      1.5 ulp
//   sigmoid  2.5 ulp
//   tanh     2 ulp
//   erf      3 ulp for |x| < 1; 2e-7 absolute everywhere (Abramowitz & Stegun 7.1.26 for
//            |x| >= 1)
#pragma once

namespace npuc::isa::vmath {

/// a + b, a * b, a / b with DAZ/FTZ and the NaN rules above (the RTL's f32_add/f32_mul/f32_div).
float add(float a, float b);
float mul(float a, float b);
float div(float a, float b);
/// Square root, correctly rounded; sqrt(-0) = -0; a negative operand gives the default NaN.
float sqrt(float a);
/// e^a: Cody-Waite reduction a = k ln2 + r (|r| <= ln2 / 2), a degree-7 Taylor polynomial in r,
/// then 2^k added to the exponent field. Results beyond fp32's normal range are inf or +0.
float exp(float a);
/// 1 / (1 + exp(-a)).
float sigmoid(float a);
/// Odd Taylor polynomial for |a| < 0.5; 1 - 2 / (exp(2|a|) + 1) below 10; +-1 beyond.
float tanh(float a);
/// Taylor series for |a| < 1; 1 - poly(t) exp(-a^2) with t = 1 / (1 + 0.3275911 |a|)
/// (Abramowitz & Stegun 7.1.26) below 4; +-1 beyond.
float erf(float a);

} // namespace npuc::isa::vmath
