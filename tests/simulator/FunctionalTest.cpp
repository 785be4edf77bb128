// FunctionalTest.cpp - the simulator's data results against naive reference loops.
//
// Expected values are computed here from the ISA's definitions in isa/Target.h (element by
// element, independently of the simulator's fast paths) and compared bit for bit.
#include "SimTestUtil.h"
#include "isa/VectorMath.h"
#include "simulator/HalfTable.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

using namespace simtest;
using namespace npuc;

namespace {

TEST(SimFunctional, DmaPaddingAndStrides) {
  auto t = makeTarget();
  sim::Memory mem(*t, 1 << 16);
  // Source: a 3 x 4 x 5 box of fp16-sized elements with padded strides in DRAM at 0x100.
  const int64_t eb = 2, n[3] = {7, 6, 4}, plo[3] = {1, 2, 0}, phi[3] = {1, 0, 1};
  const int64_t ss[3] = {1, 9, 50}, ds[3] = {1, 8, 60};
  const int64_t src = 0x100, dst = 0x40;
  std::mt19937 rng(1);
  for (int64_t i = 0; i < 2000; ++i)
    mem.dram()[static_cast<size_t>(i)] = static_cast<uint8_t>(rng());
  const uint16_t padBits = 0xabcd;
  isa::Program p;
  p.instrs.push_back(
      make(*t, "ld",
           {{"src_space", DRAM},   {"src_addr", src},   {"dst_space", L1},   {"dst_addr", dst},
            {"elem_bytes", eb},    {"n0", n[0]},        {"n1", n[1]},        {"n2", n[2]},
            {"src_s0", ss[0]},     {"src_s1", ss[1]},   {"src_s2", ss[2]},   {"dst_s0", ds[0]},
            {"dst_s1", ds[1]},     {"dst_s2", ds[2]},   {"pad0_lo", plo[0]}, {"pad0_hi", phi[0]},
            {"pad1_lo", plo[1]},   {"pad1_hi", phi[1]}, {"pad2_lo", plo[2]}, {"pad2_hi", phi[2]},
            {"pad_value", padBits}}));
  std::vector<uint8_t> expect = mem.level(L1);
  for (int64_t i2 = 0; i2 < n[2]; ++i2)
    for (int64_t i1 = 0; i1 < n[1]; ++i1)
      for (int64_t i0 = 0; i0 < n[0]; ++i0) {
        int64_t idx[3] = {i0, i1, i2};
        bool pad = false;
        int64_t so = 0, d = 0;
        for (int k = 0; k < 3; ++k) {
          pad = pad || idx[k] < plo[k] || idx[k] >= n[k] - phi[k];
          so += (idx[k] - plo[k]) * ss[k];
          d += idx[k] * ds[k];
        }
        for (int b = 0; b < eb; ++b)
          expect[static_cast<size_t>(dst + d * eb + b)] =
              pad ? static_cast<uint8_t>(padBits >> (8 * b))
                  : mem.dram()[static_cast<size_t>(src + so * eb + b)];
      }
  sim::SimStats s = sim::run(*t, p, mem);
  EXPECT_EQ(mem.level(L1), expect);
  // Only the unpadded 5 x 4 x 3 elements are read from DRAM.
  EXPECT_EQ(s.dramBytesRead, 5 * 4 * 3 * eb);
  EXPECT_EQ(s.dramBytesWritten, 0);
}

TEST(SimFunctional, DmaGatherWithElementStride) {
  auto t = makeTarget();
  sim::Memory mem(*t, 4096);
  for (int i = 0; i < 1024; ++i)
    mem.level(L1)[static_cast<size_t>(i)] = static_cast<uint8_t>(i * 7 + 3);
  // Every third 4-byte element of two rows, transposed into DRAM (dst_s0 = 2 elements).
  isa::Program p;
  p.instrs.push_back(make(*t, "st",
                          {{"src_space", L1},
                           {"src_addr", 8},
                           {"dst_space", DRAM},
                           {"dst_addr", 100},
                           {"elem_bytes", 4},
                           {"n0", 5},
                           {"n1", 2},
                           {"src_s0", 3},
                           {"src_s1", 20},
                           {"dst_s0", 2},
                           {"dst_s1", 1}}));
  std::vector<uint8_t> expect = mem.dram();
  for (int i1 = 0; i1 < 2; ++i1)
    for (int i0 = 0; i0 < 5; ++i0)
      for (int b = 0; b < 4; ++b)
        expect[static_cast<size_t>(100 + 4 * (2 * i0 + i1) + b)] =
            mem.level(L1)[static_cast<size_t>(8 + 4 * (3 * i0 + 20 * i1) + b)];
  sim::SimStats s = sim::run(*t, p, mem);
  EXPECT_EQ(mem.dram(), expect);
  EXPECT_EQ(s.dramBytesWritten, 40);
}

void matmulCase(int64_t m, int64_t k, int64_t n, bool accumulate, unsigned seed) {
  auto t = makeTarget();
  sim::Memory mem(*t, 1024);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<uint16_t> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(k * n));
  std::vector<float> c0(static_cast<size_t>(m * n));
  for (auto &x : a)
    x = floatToHalf(u(rng));
  for (auto &x : b)
    x = floatToHalf(u(rng));
  for (auto &x : c0)
    x = u(rng) * 100.0f;
  const int64_t aAddr = 64, bAddr = 128, cAddr = 256;
  std::memcpy(mem.level(L0A).data() + aAddr, a.data(), a.size() * 2);
  std::memcpy(mem.level(L0B).data() + bAddr, b.data(), b.size() * 2);
  std::memcpy(mem.level(ACC).data() + cAddr, c0.data(), c0.size() * 4);
  isa::Program p;
  p.instrs.push_back(make(*t, "mm",
                          {{"a_addr", aAddr},
                           {"b_addr", bAddr},
                           {"c_addr", cAddr},
                           {"m", m},
                           {"k", k},
                           {"n", n},
                           {"accumulate", accumulate}}));
  sim::SimStats s = sim::run(*t, p, mem);
  EXPECT_EQ(s.macs, m * k * n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float acc = accumulate ? c0[static_cast<size_t>(i * n + j)] : 0.0f;
      for (int64_t kk = 0; kk < k; ++kk) {
        volatile float prod = halfToFloat(a[static_cast<size_t>(i * k + kk)]) *
                              halfToFloat(b[static_cast<size_t>(kk * n + j)]);
        acc = acc + prod;
      }
      ASSERT_EQ(getF32Bits(mem, ACC, cAddr + 4 * (i * n + j)), bitsOf(acc))
          << "C[" << i << "][" << j << "]";
    }
}

// The compile-time fp16 table (simulator/HalfTable.h) against support's converter, every pattern
// (zeros, subnormals, infinities, NaN payloads) compared bit for bit.
TEST(SimFunctional, HalfTableMatchesHalfToFloat) {
  for (uint32_t h = 0; h < 65536; ++h)
    ASSERT_EQ(bitsOf(sim::fastHalfToFloat(uint16_t(h))), bitsOf(halfToFloat(uint16_t(h))))
        << "fp16 pattern " << h;
}

TEST(SimFunctional, MatmulMatchesFp16ReferenceBitExact) {
  matmulCase(5, 37, 19, false, 11);
  matmulCase(16, 64, 16, false, 12);
  matmulCase(1, 1, 1, false, 13);
}

TEST(SimFunctional, MatmulAccumulates) {
  matmulCase(7, 33, 9, true, 21);
  // Several 4 x 8 register blocks in both directions plus both edges, accumulating.
  matmulCase(13, 20, 27, true, 22);
}

// One vector op over a 2-D box: fp16 sources, destination dtype given, compared with the op
// evaluated here in fp32 and rounded once.
void vectorCase(isa::VecOp op, isa::ElemType dstType, const std::function<float(float, float)> &ref,
                float imm0 = 0, float imm1 = 0) {
  auto t = makeTarget();
  sim::Memory mem(*t, 1024);
  int code = t->vector.opCode(op);
  ASSERT_GE(code, 0);
  const int64_t n0 = 13, n1 = 3, s1 = 0x100, s2 = 0x400, d = 0x800;
  std::mt19937 rng(static_cast<unsigned>(code + 5));
  bool positive = op == isa::VecOp::Sqrt;
  std::uniform_real_distribution<float> u(positive ? 0.1f : -3.0f, 3.0f);
  for (int64_t i = 0; i < n0 * n1; ++i) {
    putHalf(mem, L1, s1 + 2 * i, u(rng));
    float v = u(rng);
    putHalf(mem, L1, s2 + 2 * i, op == isa::VecOp::Div && std::fabs(v) < 0.1f ? 0.5f : v);
  }
  isa::Program p;
  p.instrs.push_back(make(*t, "vop",
                          {{"op", code},
                           {"dst_space", L1},
                           {"dst_addr", d},
                           {"dst_dtype", int64_t(dstType)},
                           {"src1_space", L1},
                           {"src1_addr", s1},
                           {"src1_dtype", 0},
                           {"src2_space", L1},
                           {"src2_addr", s2},
                           {"src2_dtype", 0},
                           {"n0", n0},
                           {"n1", n1},
                           {"dst_s0", 1},
                           {"dst_s1", n0},
                           {"src1_s0", 1},
                           {"src1_s1", n0},
                           {"src2_s0", 1},
                           {"src2_s1", n0},
                           {"imm0", f32bits(imm0)},
                           {"imm1", f32bits(imm1)}}));
  std::vector<float> a, b;
  for (int64_t i = 0; i < n0 * n1; ++i) {
    a.push_back(halfToFloat(getHalfBits(mem, L1, s1 + 2 * i)));
    b.push_back(halfToFloat(getHalfBits(mem, L1, s2 + 2 * i)));
  }
  sim::run(*t, p, mem);
  for (int64_t i = 0; i < n0 * n1; ++i) {
    float r = ref(a[static_cast<size_t>(i)], b[static_cast<size_t>(i)]);
    if (dstType == isa::ElemType::F16)
      ASSERT_EQ(getHalfBits(mem, L1, d + 2 * i), floatToHalf(r))
          << isa::vecOpName(op) << " element " << i;
    else
      ASSERT_EQ(getF32Bits(mem, L1, d + 4 * i), bitsOf(r))
          << isa::vecOpName(op) << " element " << i;
  }
}

TEST(SimFunctional, VectorOpsRoundToDestinationType) {
  for (isa::ElemType dt : {isa::ElemType::F16, isa::ElemType::F32}) {
    vectorCase(isa::VecOp::Copy, dt, [](float a, float) { return a; });
    vectorCase(isa::VecOp::Add, dt, [](float a, float b) { return a + b; });
    vectorCase(isa::VecOp::Sub, dt, [](float a, float b) { return a - b; });
    vectorCase(isa::VecOp::Mul, dt, [](float a, float b) { return a * b; });
    vectorCase(isa::VecOp::Max, dt, [](float a, float b) { return std::max(a, b); });
    vectorCase(isa::VecOp::Min, dt, [](float a, float b) { return std::min(a, b); });
    vectorCase(isa::VecOp::Relu, dt, [](float a, float) { return a > 0 ? a : 0.0f; });
    vectorCase(
        isa::VecOp::Clip, dt,
        [](float a, float) { return a < -1.5f   ? -1.5f
                                    : a > 0.75f ? 0.75f
                                                : a; }, -1.5f, 0.75f);
    vectorCase(
        isa::VecOp::MulAdd, dt,
        [](float a, float) {
          volatile float p = a * 0.3f;
          return p + -1.25f;
        },
        0.3f, -1.25f);
    // The transcendental ops are the exact fp32 algorithms of isa/VectorMath.h, whose accuracy
    // tests/isa/VectorMathTest.cpp checks against libm; here the element plumbing and rounding.
    vectorCase(isa::VecOp::Exp, dt, [](float a, float) { return isa::vmath::exp(a); });
    vectorCase(isa::VecOp::Tanh, dt, [](float a, float) { return isa::vmath::tanh(a); });
    vectorCase(isa::VecOp::Sigmoid, dt, [](float a, float) { return isa::vmath::sigmoid(a); });
    // Division and square root are correctly rounded: C++ float gives the same bits.
    vectorCase(isa::VecOp::Div, dt, [](float a, float b) { return a / b; });
    vectorCase(isa::VecOp::Sqrt, dt, [](float a, float) { return std::sqrt(a); });
    vectorCase(isa::VecOp::Erf, dt, [](float a, float) { return isa::vmath::erf(a); });
  }
}

TEST(SimFunctional, VectorStrideZeroDestinationReducesSequentiallyInFp16) {
  auto t = makeTarget();
  sim::Memory mem(*t, 1024);
  // Row sums of a 4 x 50 fp16 matrix into an fp16 accumulator: dst = dst + src1 with dst_s0 = 0,
  // src2 aliasing dst. Each step rounds to fp16, unlike an fp32 sum.
  const int64_t n0 = 50, n1 = 4, src = 0, acc = 0x1000;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(0.0f, 10.0f);
  std::vector<float> x;
  for (int64_t i = 0; i < n0 * n1; ++i) {
    x.push_back(roundToHalf(u(rng)));
    putHalf(mem, L1, src + 2 * i, x.back());
  }
  isa::Program p;
  p.instrs.push_back(make(*t, "vop",
                          {{"op", 1},
                           {"dst_space", L1},
                           {"dst_addr", acc},
                           {"dst_dtype", 0},
                           {"src1_space", L1},
                           {"src1_addr", src},
                           {"src1_dtype", 0},
                           {"src2_space", L1},
                           {"src2_addr", acc},
                           {"src2_dtype", 0},
                           {"n0", n0},
                           {"n1", n1},
                           {"dst_s0", 0},
                           {"dst_s1", 1},
                           {"src1_s0", 1},
                           {"src1_s1", n0},
                           {"src2_s0", 0},
                           {"src2_s1", 1}}));
  sim::run(*t, p, mem);
  for (int64_t r = 0; r < n1; ++r) {
    float h = 0;
    for (int64_t i = 0; i < n0; ++i)
      h = roundToHalf(h + x[static_cast<size_t>(r * n0 + i)]);
    EXPECT_EQ(getHalfBits(mem, L1, acc + 2 * r), floatToHalf(h)) << "row " << r;
  }
}

TEST(SimFunctional, VectorMaxPoolOverMiddleDimension) {
  auto t = makeTarget();
  sim::Memory mem(*t, 1024);
  // max over i1 (dst_s1 = 0) of 6 rows of 8 fp32 values, into fp32, src2 aliasing dst.
  const int64_t n0 = 8, n1 = 6, src = 0x200, dst = 0x40;
  std::vector<float> x;
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(-5.0f, 5.0f);
  for (int64_t i = 0; i < n0 * n1; ++i) {
    x.push_back(u(rng));
    putF32(mem, ACC, src + 4 * i, x.back());
  }
  for (int64_t i = 0; i < n0; ++i)
    putF32(mem, ACC, dst + 4 * i, -1e30f);
  isa::Program p;
  p.instrs.push_back(make(*t, "vop",
                          {{"op", 4},
                           {"dst_space", ACC},
                           {"dst_addr", dst},
                           {"dst_dtype", 1},
                           {"src1_space", ACC},
                           {"src1_addr", src},
                           {"src1_dtype", 1},
                           {"src2_space", ACC},
                           {"src2_addr", dst},
                           {"src2_dtype", 1},
                           {"n0", n0},
                           {"n1", n1},
                           {"dst_s0", 1},
                           {"dst_s1", 0},
                           {"src1_s0", 1},
                           {"src1_s1", n0},
                           {"src2_s0", 1},
                           {"src2_s1", 0}}));
  sim::run(*t, p, mem);
  for (int64_t j = 0; j < n0; ++j) {
    float m = -1e30f;
    for (int64_t i = 0; i < n1; ++i)
      m = std::max(m, x[static_cast<size_t>(i * n0 + j)]);
    EXPECT_EQ(getF32Bits(mem, ACC, dst + 4 * j), bitsOf(m)) << "column " << j;
  }
}

// mac: dst = dst + src1 * src2 over a 3-D box, as the depthwise kernel issues it (src2 a
// per-channel vector broadcast with strides (1, 0, 0)). Values chosen by hand so that every
// result is exact; the fp16 destination shows the rounding to dst_dtype.
TEST(SimFunctional, MacAccumulatesIntoItsDestination) {
  auto t = makeTarget();
  const int mac = t->vector.opCode(isa::VecOp::Mac);
  ASSERT_GE(mac, 0);
  sim::Memory mem(*t, 1024);
  // 2 channels x 3 columns x 2 rows. src1 (fp16, L1 0x0): a row-major [2][3][2] box whose
  // elements are 1..12. src2 (fp32, L1 0x100): {0.5, -2}. dst (fp32, ACC 0x40): 100 + index.
  for (int i = 0; i < 12; ++i) {
    putHalf(mem, L1, 2 * i, float(i + 1));
    putF32(mem, ACC, 0x40 + 4 * i, 100.0f + float(i));
  }
  putF32(mem, L1, 0x100, 0.5f);
  putF32(mem, L1, 0x104, -2.0f);
  isa::Program p;
  p.instrs.push_back(make(*t, "vop", {{"op", mac},       {"dst_space", ACC}, {"dst_addr", 0x40},
                                      {"dst_dtype", 1},  {"src1_space", L1}, {"src1_addr", 0},
                                      {"src1_dtype", 0}, {"src2_space", L1}, {"src2_addr", 0x100},
                                      {"src2_dtype", 1}, {"n0", 2},          {"n1", 3},
                                      {"n2", 2},         {"dst_s0", 1},      {"dst_s1", 2},
                                      {"dst_s2", 6},     {"src1_s0", 1},     {"src1_s1", 2},
                                      {"src1_s2", 6},    {"src2_s0", 1},     {"src2_s1", 0},
                                      {"src2_s2", 0}}));
  sim::run(*t, p, mem);
  // Element i (channel i % 2): 100 + i + (i + 1) * (i even ? 0.5 : -2).
  const float want[12] = {100.5f, 97.0f, 103.5f, 95.0f, 106.5f, 93.0f,
                          109.5f, 91.0f, 112.5f, 89.0f, 115.5f, 87.0f};
  for (int i = 0; i < 12; ++i)
    EXPECT_EQ(getF32Bits(mem, ACC, 0x40 + 4 * i), bitsOf(want[i])) << "element " << i;

  // fp16 destination: 2048 + 1 * 1 = 2049 is not an fp16 value (spacing 2 above 2048) and
  // rounds to even, 2048; 0.25 + 1 * 0.5 = 0.75 is exact.
  putHalf(mem, L1, 0x200, 2048.0f);
  putHalf(mem, L1, 0x202, 0.25f);
  putHalf(mem, L1, 0x300, 1.0f);
  putHalf(mem, L1, 0x302, 1.0f);
  putHalf(mem, L1, 0x380, 1.0f);
  putHalf(mem, L1, 0x382, 0.5f);
  isa::Program h;
  h.instrs.push_back(make(*t, "vop",
                          {{"op", mac},
                           {"dst_space", L1},
                           {"dst_addr", 0x200},
                           {"dst_dtype", 0},
                           {"src1_space", L1},
                           {"src1_addr", 0x300},
                           {"src1_dtype", 0},
                           {"src2_space", L1},
                           {"src2_addr", 0x380},
                           {"src2_dtype", 0},
                           {"n0", 2},
                           {"dst_s0", 1},
                           {"src1_s0", 1},
                           {"src2_s0", 1}}));
  sim::run(*t, h, mem);
  EXPECT_EQ(getHalfBits(mem, L1, 0x200), floatToHalf(2048.0f));
  EXPECT_EQ(getHalfBits(mem, L1, 0x202), floatToHalf(0.75f));
}

// A destination stride of 0 makes mac a dot product, sequentially: 1 + sum_i x_i * 0.5 with
// x = 1..6 is 1 + 10.5 = 11.5; with random data, the fp32 sum in element order, bit for bit.
TEST(SimFunctional, MacWithStrideZeroDestinationIsADotProduct) {
  auto t = makeTarget();
  const int mac = t->vector.opCode(isa::VecOp::Mac);
  sim::Memory mem(*t, 1024);
  auto dot = [&](int64_t n, const std::vector<float> &x, const std::vector<float> &w, float init) {
    for (int64_t i = 0; i < n; ++i) {
      putHalf(mem, L1, 2 * i, x[static_cast<size_t>(i)]);
      putF32(mem, L1, 0x200 + 4 * i, w[static_cast<size_t>(i)]);
    }
    putF32(mem, ACC, 0, init);
    isa::Program p;
    p.instrs.push_back(make(*t, "vop",
                            {{"op", mac},
                             {"dst_space", ACC},
                             {"dst_addr", 0},
                             {"dst_dtype", 1},
                             {"src1_space", L1},
                             {"src1_addr", 0},
                             {"src1_dtype", 0},
                             {"src2_space", L1},
                             {"src2_addr", 0x200},
                             {"src2_dtype", 1},
                             {"n0", n},
                             {"dst_s0", 0},
                             {"src1_s0", 1},
                             {"src2_s0", 1}}));
    sim::run(*t, p, mem);
    return getF32Bits(mem, ACC, 0);
  };
  EXPECT_EQ(dot(6, {1, 2, 3, 4, 5, 6}, std::vector<float>(6, 0.5f), 1.0f), bitsOf(11.5f));
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<float> x, w;
  for (int i = 0; i < 40; ++i) {
    x.push_back(roundToHalf(u(rng)));
    w.push_back(u(rng));
  }
  float acc = 0.375f;
  for (int i = 0; i < 40; ++i) {
    volatile float prod = x[size_t(i)] * w[size_t(i)]; // two roundings per step, no FMA
    acc = acc + prod;
  }
  EXPECT_EQ(dot(40, x, w, 0.375f), bitsOf(acc));
}

TEST(SimFunctional, InPlaceReluAndTimingOnlyLeavesDataAlone) {
  auto t = makeTarget();
  sim::Memory mem(*t, 1024);
  const float vals[] = {-1.0f, 2.5f, -0.0f, 3.0f, -7.0f};
  for (int i = 0; i < 5; ++i)
    putHalf(mem, L1, 2 * i, vals[i]);
  isa::Program p;
  p.instrs.push_back(make(*t, "vop",
                          {{"op", 6},
                           {"dst_space", L1},
                           {"dst_addr", 0},
                           {"src1_space", L1},
                           {"src1_addr", 0},
                           {"n0", 5},
                           {"dst_s0", 1},
                           {"src1_s0", 1}}));
  sim::SimOptions timingOnly;
  timingOnly.functional = false;
  sim::run(*t, p, mem, timingOnly);
  EXPECT_EQ(getHalfBits(mem, L1, 0), floatToHalf(-1.0f));
  sim::run(*t, p, mem);
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(getHalfBits(mem, L1, 2 * i), floatToHalf(vals[i] > 0 ? vals[i] : 0.0f)) << i;
}

} // namespace
