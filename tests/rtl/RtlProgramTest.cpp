// RtlProgramTest.cpp - hand-written programs co-simulated on the RTL core and the simulator
// (configs/npu-rtl.yaml): each instruction kind, DMA padding and strides, token chains, token
// FIFO and queue back-pressure, DRAM contention, bank-sharing concurrency. Data must be
// bit-identical and, for these programs, every instruction's start and end cycle identical.
// Expected data and totals are also derived by hand from docs/ISA.md where that is practical.
#include "isa/VectorMath.h"
#include "simulator/rtl/RtlCore.h"
#include "support/Error.h"
#include "support/Half.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

using namespace npuc;

namespace {

isa::Target rtlTarget() {
  return isa::loadTarget(std::string(NPUC_SOURCE_DIR) + "/configs/npu-rtl.yaml");
}

void putHalf(std::vector<uint8_t> &m, int64_t addr, float v) {
  uint16_t h = floatToHalf(v);
  std::memcpy(m.data() + addr, &h, 2);
}
uint16_t getHalfBits(const std::vector<uint8_t> &m, int64_t addr) {
  uint16_t h;
  std::memcpy(&h, m.data() + addr, 2);
  return h;
}

/// Co-simulates and checks the agreement every hand-written program must reach.
rtl::CosimResult expectAgree(const isa::Target &t, const std::string &text,
                             const sim::Memory &mem) {
  isa::Program p = isa::assemble(t, text, "test.s");
  rtl::CosimResult r = rtl::cosim(t, p, mem);
  EXPECT_TRUE(r.dataMatch) << r.dataDivergence;
  EXPECT_TRUE(r.cyclesMatch) << r.summary(t);
  EXPECT_EQ(r.rtl.totalCycles, r.sim.totalCycles);
  for (size_t e = 0; e < t.engines.size(); ++e) {
    EXPECT_EQ(r.rtl.engines[e].busyCycles, r.sim.engines[e].busyCycles) << t.engines[e].name;
    EXPECT_EQ(r.rtl.engines[e].instructions, r.sim.engines[e].instructions) << t.engines[e].name;
  }
  EXPECT_EQ(r.rtl.macs, r.sim.macs);
  EXPECT_EQ(r.rtl.dramBytesRead, r.sim.dramBytesRead);
  EXPECT_EQ(r.rtl.dramBytesWritten, r.sim.dramBytesWritten);
  return r;
}

/// The RTL result alone (to check data derived by hand).
sim::Memory runRtlOnly(const isa::Target &t, const std::string &text, sim::Memory mem,
                       rtl::RtlStats *stats = nullptr) {
  rtl::RtlStats s = rtl::runRtl(t, isa::assemble(t, text, "test.s"), mem);
  if (stats)
    *stats = s;
  return mem;
}

} // namespace

TEST(RtlTarget, BuiltForNpuRtl) {
  isa::Target t = rtlTarget();
  EXPECT_TRUE(rtl::matchesBuiltTarget(t));
  EXPECT_STREQ(rtl::builtTargetName(), "npu-rtl");
  isa::Target other = isa::loadTarget(std::string(NPUC_SOURCE_DIR) + "/configs/npu-base.yaml");
  EXPECT_FALSE(rtl::matchesBuiltTarget(other));
  sim::Memory mem(other, 4096);
  try {
    rtl::runRtl(other, isa::assemble(other, "finish\n", "x.s"), mem);
    FAIL() << "expected an error";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("not the one the RTL core was generated for"),
              std::string::npos)
        << e.what();
  }
}

// DMA with padding in dimension 0 and a row stride: rows of 4 fp16 values from DRAM become rows
// of 6 in L1 with a 1.0 (0x3c00) border, then are stored back contiguously.
TEST(RtlDma, PaddingAndStrides) {
  isa::Target t = rtlTarget();
  sim::Memory mem(t, 4096);
  for (int i = 0; i < 12; ++i)
    putHalf(mem.dram(), 2 * i, float(i + 1));
  const std::string prog =
      "ld push=0x10 dst_space=l1 dst_addr=0 elem_bytes=2 n0=6 n1=3 n2=1 "
      "src_addr=0 src_s0=1 src_s1=4 dst_s0=1 dst_s1=6 pad0_lo=1 pad0_hi=1 "
      "pad_value=0x3c00\n"
      "st pop=0x1 src_space=l1 src_addr=0 dst_addr=0x100 elem_bytes=2 n0=18 n1=1 n2=1 "
      "src_s0=1 dst_s0=1\n"
      "finish\n";
  rtl::CosimResult r = expectAgree(t, prog, mem);
  // ld: 4 + 20 (DRAM latency) + max(ceil(36 B / 16), ceil(24 B read / 8)) = 27;
  // st: 4 + 20 + ceil(36 / 8) = 29 -> ends at 56.
  EXPECT_EQ(r.rtl.totalCycles, 56);
  sim::Memory out = runRtlOnly(t, prog, mem);
  for (int row = 0; row < 3; ++row)
    for (int c = 0; c < 6; ++c) {
      uint16_t want = (c == 0 || c == 5) ? 0x3c00 : floatToHalf(float(4 * row + c));
      EXPECT_EQ(getHalfBits(out.dram(), 0x100 + 2 * (6 * row + c)), want) << row << "," << c;
    }
}

namespace {
uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
const char *kMatmulProg =
    "ld dst_space=l0a dst_addr=0 elem_bytes=2 n0=15 n1=1 n2=1 src_addr=0 src_s0=1 dst_s0=1\n"
    "ld push=0x4 dst_space=l0b dst_addr=0 elem_bytes=2 n0=30 n1=1 n2=1 src_addr=0x40 src_s0=1 "
    "dst_s0=1\n"
    "mm pop=0x1 push=0x10 a_addr=0 b_addr=0 c_addr=0 m=3 k=5 n=6 accumulate=0\n"
    "st pop=0x4 src_space=acc src_addr=0 dst_addr=0x200 elem_bytes=4 n0=18 n1=1 n2=1 src_s0=1 "
    "dst_s0=1\n"
    "finish\n";
} // namespace

// C[3x6] = A[3x5] * B[5x6] with small integers (exact in fp32): checked against a naive loop,
// and the total derived from docs/ISA.md: ld A 4+20+ceil(30/8)=28, ld B 4+20+ceil(60/8)=32
// (ends 60), mm 8 + 3*ceil(5/4)*ceil(6/4) = 20 (ends 80), st 4+20+ceil(72/8) = 33 -> 113.
TEST(RtlMatmul, SmallIntegersExact) {
  isa::Target t = rtlTarget();
  sim::Memory mem(t, 4096);
  float a[3][5], b[5][6];
  for (int i = 0; i < 3; ++i)
    for (int k = 0; k < 5; ++k)
      putHalf(mem.dram(), 2 * (i * 5 + k), a[i][k] = float((i + 2 * k) % 7 - 3));
  for (int k = 0; k < 5; ++k)
    for (int j = 0; j < 6; ++j)
      putHalf(mem.dram(), 0x40 + 2 * (k * 6 + j), b[k][j] = float((3 * k + j) % 5 - 2));
  rtl::CosimResult r = expectAgree(t, kMatmulProg, mem);
  EXPECT_EQ(r.rtl.totalCycles, 113);
  EXPECT_EQ(r.rtl.macs, 3 * 5 * 6);
  sim::Memory out = runRtlOnly(t, kMatmulProg, mem);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 6; ++j) {
      float want = 0;
      for (int k = 0; k < 5; ++k)
        want += a[i][k] * b[k][j];
      float got;
      std::memcpy(&got, out.dram().data() + 0x200 + 4 * (i * 6 + j), 4);
      EXPECT_EQ(got, want) << i << "," << j;
    }
}

// Random fp16 operands (rounding in every partial sum) and accumulate=1 on top of a first
// product: bit-identical to the simulator's fp32 k-order accumulation.
TEST(RtlMatmul, RandomAccumulateBitExact) {
  isa::Target t = rtlTarget();
  sim::Memory mem(t, 8192);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> d(-2.f, 2.f);
  // A: 5x13 at 0, B: 13x7 at 0x100; second A at 0x300.
  for (int i = 0; i < 5 * 13; ++i) {
    putHalf(mem.dram(), 2 * i, d(rng));
    putHalf(mem.dram(), 0x300 + 2 * i, d(rng) * 100.f);
  }
  for (int i = 0; i < 13 * 7; ++i)
    putHalf(mem.dram(), 0x100 + 2 * i, d(rng) * 1e-3f);
  const std::string prog =
      "ld dst_space=l0a dst_addr=0 elem_bytes=2 n0=65 n1=1 n2=1 src_addr=0 src_s0=1 dst_s0=1\n"
      "ld dst_space=l0a dst_addr=0x100 elem_bytes=2 n0=65 n1=1 n2=1 src_addr=0x300 src_s0=1 "
      "dst_s0=1\n"
      "ld push=0x4 dst_space=l0b dst_addr=0 elem_bytes=2 n0=91 n1=1 n2=1 src_addr=0x100 "
      "src_s0=1 dst_s0=1\n"
      "mm pop=0x1 a_addr=0 b_addr=0 c_addr=0x40 m=5 k=13 n=7 accumulate=0\n"
      "mm push=0x10 a_addr=0x100 b_addr=0 c_addr=0x40 m=5 k=13 n=7 accumulate=1\n"
      "st pop=0x4 src_space=acc src_addr=0x40 dst_addr=0x800 elem_bytes=4 n0=35 n1=1 n2=1 "
      "src_s0=1 dst_s0=1\n"
      "finish\n";
  expectAgree(t, prog, mem);
}

// Every vector op of the preset, fp16 and fp32 operands and destinations, imm operands,
// and reductions through a zero destination stride; values include +-inf, -0 and fp16-subnormal
// results. Data bit-identical with the simulator (C++ float), cycles exact.
TEST(RtlVector, EveryOpBitExact) {
  isa::Target t = rtlTarget();
  sim::Memory mem(t, 16384);
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> d(-4.f, 4.f);
  const int N = 23;
  std::vector<float> x(N), y(N);
  for (int i = 0; i < N; ++i) {
    x[i] = d(rng);
    y[i] = d(rng) * std::ldexp(1.0f, int(rng() % 40) - 20);
  }
  x[0] = -0.0f;
  y[1] = INFINITY;
  y[2] = -INFINITY;
  x[3] = 3.0e-5f; // fp16 subnormal after rounding
  y[4] = 6.0e-8f;
  y[5] = 60000.f; // near the fp16 maximum: products overflow to inf in fp16
  for (int i = 0; i < N; ++i) {
    putHalf(mem.dram(), 2 * i, x[i]);
    std::memcpy(mem.dram().data() + 0x100 + 4 * i, &y[i], 4);
  }
  std::string prog =
      "ld dst_space=l1 dst_addr=0 elem_bytes=2 n0=23 n1=1 n2=1 src_addr=0 src_s0=1 dst_s0=1\n"
      "ld push=0x8 dst_space=l1 dst_addr=0x100 elem_bytes=4 n0=23 n1=1 n2=1 src_addr=0x100 "
      "src_s0=1 dst_s0=1\n";
  const float imm0 = -0.75f, imm1 = 0.3f;
  int slot = 0;
  for (size_t op = 0; op < t.vector.ops.size(); ++op)
    for (int dt = 0; dt < 2; ++dt)
      for (int swap = 0; swap < 2; ++swap) {
        // src1/src2 = (x fp16, y fp32) or swapped; destination at 0x400 + 0x80 * slot.
        int64_t s1 = swap ? 0x100 : 0, s2 = swap ? 0 : 0x100;
        prog +=
            fmt::format("vop {}op={} dst_space=l1 dst_addr={} dst_dtype={} src1_space=l1 "
                        "src1_addr={} src1_dtype={} src2_space=l1 src2_addr={} src2_dtype={} "
                        "n0={} n1=1 n2=1 dst_s0=1 src1_s0=1 src2_s0=1 imm0=0x{:x} imm1=0x{:x}\n",
                        slot == 0 ? "pop=0x1 " : "", isa::vecOpName(t.vector.ops[op]),
                        0x400 + 0x80 * slot, dt ? "fp32" : "fp16", s1, swap ? "fp32" : "fp16", s2,
                        swap ? "fp16" : "fp32", N, bitsOf(imm0), bitsOf(imm1));
        ++slot;
      }
  // Reductions: sum of y into one fp32 (dst stride 0, src2 = dst), max of x over a 2-D box.
  prog += "vop op=add dst_space=acc dst_addr=0 dst_dtype=fp32 src1_space=l1 src1_addr=0x100 "
          "src1_dtype=fp32 src2_space=acc src2_addr=0 src2_dtype=fp32 n0=23 n1=1 n2=1 src1_s0=1\n";
  prog += "vop op=max dst_space=acc dst_addr=0x10 dst_dtype=fp32 src1_space=l1 "
          "src1_addr=0 src1_dtype=fp16 src2_space=acc src2_addr=0x10 src2_dtype=fp32 n0=5 n1=4 "
          "n2=1 src1_s0=1 src1_s1=5\n";
  // mac reads its destination: a dot product of x and y through a zero destination stride (each
  // element reads what the previous one wrote), in fp32 and in fp16 (rounded at every step).
  prog += "vop op=mac dst_space=acc dst_addr=0x20 dst_dtype=fp32 src1_space=l1 src1_addr=0 "
          "src1_dtype=fp16 src2_space=l1 src2_addr=0x100 src2_dtype=fp32 n0=23 n1=1 n2=1 "
          "src1_s0=1 src2_s0=1\n";
  prog += "vop push=0x10 op=mac dst_space=acc dst_addr=0x30 dst_dtype=fp16 src1_space=l1 "
          "src1_addr=0 src1_dtype=fp16 src2_space=l1 src2_addr=0 src2_dtype=fp16 n0=23 n1=1 n2=1 "
          "src1_s0=1 src2_s0=1\n";
  prog += "st pop=0x8 src_space=l1 src_addr=0x400 dst_addr=0x1000 elem_bytes=4 n0=" +
          std::to_string(0x80 * slot / 4) + " n1=1 n2=1 src_s0=1 dst_s0=1\n";
  prog += "finish\n";
  expectAgree(t, prog, mem);
}

// The division, square root and transcendental ops (isa/VectorMath.h, hdl/npu_vmath.svh) on
// operands of every class: random bit patterns over the whole fp32 range (subnormals, NaNs and
// infinities included), the boundaries of each algorithm's branches and exp's range, and a dense
// sweep of the range where the functions vary. The RTL's every result is the bits of the C++
// algorithm the simulator runs, and lies within the error bound docs/ISA.md states against
// double-precision math (for normal operands with normal results).
TEST(RtlVector, MathOpsBitExactOnEveryOperandClass) {
  isa::Target t = rtlTarget();
  const int N = 1024;
  std::vector<float> x(N), y(N);
  std::mt19937 rng(5);
  auto fromBits = [](uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  };
  const float special[] = {
      0.0f,        -0.0f,       INFINITY,   -INFINITY, NAN,   -NAN,    1e-40f,          -1e-40f,
      0.5f,        -0.5f,       1.0f,       -1.0f,     4.0f,  -4.0f,   10.0f,           -10.0f,
      89.0f,       -104.0f,     88.7f,      -87.3f,    88.8f, -103.9f, 1.17549435e-38f, 3.4e38f,
      0.49999997f, 0.99999994f, 3.9999998f, 9.999999f};
  for (int i = 0; i < N; ++i) {
    if (i < int(std::size(special)))
      x[i] = special[i];
    else if (i < N / 2)
      x[i] = fromBits(static_cast<uint32_t>(rng()));
    else
      x[i] = std::uniform_real_distribution<float>(-12.f, 12.f)(rng);
    y[i] =
        i % 7 == 0 ? special[(i / 7) % std::size(special)] : fromBits(static_cast<uint32_t>(rng()));
  }
  sim::Memory mem(t, 65536);
  std::memcpy(mem.dram().data(), x.data(), 4 * N);
  std::memcpy(mem.dram().data() + 4 * N, y.data(), 4 * N);
  const isa::VecOp ops[] = {isa::VecOp::Exp, isa::VecOp::Tanh, isa::VecOp::Sigmoid,
                            isa::VecOp::Div, isa::VecOp::Sqrt, isa::VecOp::Erf};
  std::string prog = fmt::format(
      "ld dst_space=l1 dst_addr=0 elem_bytes=4 n0={0} n1=1 n2=1 src_addr=0 src_s0=1 dst_s0=1\n"
      "ld push=0x8 dst_space=l1 dst_addr={1} elem_bytes=4 n0={0} n1=1 n2=1 src_addr={1} "
      "src_s0=1 dst_s0=1\n",
      N, 4 * N);
  for (size_t k = 0; k < std::size(ops); ++k)
    prog += fmt::format("vop {}{}op={} dst_space=l1 dst_addr={} dst_dtype=fp32 src1_space=l1 "
                        "src1_addr=0 src1_dtype=fp32 src2_space=l1 src2_addr={} src2_dtype=fp32 "
                        "n0={} n1=1 n2=1 dst_s0=1 src1_s0=1 src2_s0=1\n",
                        k == 0 ? "pop=0x1 " : "", k + 1 == std::size(ops) ? "push=0x10 " : "",
                        isa::vecOpName(ops[k]), 4 * N * (2 + k), 4 * N, N);
  prog += fmt::format("st pop=0x8 src_space=l1 src_addr={0} dst_addr={0} elem_bytes=4 n0={1} "
                      "n1=1 n2=1 src_s0=1 dst_s0=1\nfinish\n",
                      8 * N, N * std::size(ops));
  expectAgree(t, prog, mem);
  sim::Memory out = runRtlOnly(t, prog, mem);
  auto normal = [](double v) { return std::fabs(v) >= 1.17549435e-38 && std::fabs(v) < 3.4e38; };
  for (size_t k = 0; k < std::size(ops); ++k) {
    int inBound = 0;
    for (int i = 0; i < N; ++i) {
      float r;
      std::memcpy(&r, out.dram().data() + 4 * N * (2 + k) + 4 * i, 4);
      float want = 0;
      double exact = 0, ulps = 0.5;
      double xd = x[i];
      switch (ops[k]) {
      case isa::VecOp::Exp:
        want = isa::vmath::exp(x[i]), exact = std::exp(xd), ulps = 1.5;
        break;
      case isa::VecOp::Tanh:
        want = isa::vmath::tanh(x[i]), exact = std::tanh(xd), ulps = 2;
        break;
      case isa::VecOp::Sigmoid:
        want = isa::vmath::sigmoid(x[i]), exact = 1 / (1 + std::exp(-xd)), ulps = 2.5;
        break;
      case isa::VecOp::Div:
        want = isa::vmath::div(x[i], y[i]), exact = xd / double(y[i]);
        break;
      case isa::VecOp::Sqrt:
        want = isa::vmath::sqrt(x[i]), exact = std::sqrt(xd);
        break;
      default:
        want = isa::vmath::erf(x[i]), exact = std::erf(xd), ulps = 3;
        break;
      }
      ASSERT_EQ(bitsOf(r), bitsOf(want))
          << isa::vecOpName(ops[k]) << "(" << x[i] << (ops[k] == isa::VecOp::Div ? ", " : "")
          << (ops[k] == isa::VecOp::Div ? std::to_string(y[i]) : "") << ")";
      if (!normal(xd) || !normal(exact) || (ops[k] == isa::VecOp::Div && !normal(y[i])))
        continue;
      // One ulp of the exact result in fp32; erf's bound is also 2e-7 absolute at |x| >= 1.
      double ulp = std::ldexp(1.0, std::ilogb(exact) - 23);
      double bound = ops[k] == isa::VecOp::Erf && std::fabs(xd) >= 1 ? 2e-7 : ulps * ulp;
      EXPECT_LE(std::fabs(double(r) - exact), bound)
          << isa::vecOpName(ops[k]) << "(" << x[i] << ") = " << r << ", exact " << exact;
      ++inBound;
    }
    EXPECT_GT(inBound, N / 3) << isa::vecOpName(ops[k]) << ": too few operands in the normal range";
  }
}

// Token chains across every engine with bounded queues and token FIFOs: twelve tiles flow
// load -> feed -> tensor -> vector -> store, with back-pressure tokens (tensor -> feed, vector ->
// tensor) guarding the double-buffered L0 and accumulator tiles. The load runs ahead until the
// 8-deep token FIFO to the feed engine is full, the stores contend with the loads on the single
// DRAM channel, and tiles start in different L1 banks. Every instruction's start and end must
// match the simulator.
TEST(RtlTokens, PipelinedChainAcrossEngines) {
  isa::Target t = rtlTarget();
  sim::Memory mem(t, 1 << 16);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  for (int i = 0; i < 4096; ++i)
    putHalf(mem.dram(), 2 * i, d(rng));
  std::string prog;
  const int tiles = 12;
  auto l1 = [](int i) { return 0x100 * i + (i % 4) * 0x10; };
  for (int i = 0; i < tiles; ++i)
    prog += fmt::format("ld push=0x2 dst_space=l1 dst_addr={} elem_bytes=2 n0=8 n1=8 n2=1 "
                        "src_addr={} src_s0=1 src_s1=8 dst_s0=1 dst_s1=8\n",
                        l1(i), 0x200 * i);
  for (int i = 0; i < tiles; ++i) {
    bool later = i + 2 < tiles, reuse = i >= 2;
    prog += fmt::format("mov pop=0x{:x} src_space=l1 src_addr={} dst_space=l0a dst_addr={} "
                        "elem_bytes=2 n0=64 n1=1 n2=1 src_s0=1 dst_s0=1\n",
                        0x1 | (reuse ? 0x4 : 0), l1(i), (i % 2) * 0x100);
    prog += fmt::format("mov push=0x4 src_space=l1 src_addr={} dst_space=l0b dst_addr={} "
                        "elem_bytes=2 n0=64 n1=1 n2=1 src_s0=1 dst_s0=1\n",
                        l1(i), (i % 2) * 0x100);
    prog += fmt::format("mm pop=0x{:x} push=0x{:x} a_addr={} b_addr={} c_addr={} m=8 k=8 n=8\n",
                        0x2 | (reuse ? 0x8 : 0), 0x8 | (later ? 0x2 : 0), (i % 2) * 0x100,
                        (i % 2) * 0x100, (i % 2) * 0x400);
    prog += fmt::format("vop pop=0x4 push=0x{:x} op=relu dst_space=l1 dst_addr={} dst_dtype=fp16 "
                        "src1_space=acc src1_addr={} src1_dtype=fp32 n0=64 n1=1 n2=1 dst_s0=1 "
                        "src1_s0=1\n",
                        0x10 | (later ? 0x4 : 0), 0x2000 + 0x80 * i, (i % 2) * 0x400);
    prog += fmt::format("st pop=0x8 src_space=l1 src_addr={} dst_addr={} elem_bytes=2 n0=64 n1=1 "
                        "n2=1 src_s0=1 dst_s0=1\n",
                        0x2000 + 0x80 * i, 0x8000 + 0x80 * i);
  }
  prog += "finish\n";
  // The concurrent tiles share L1 and accumulator banks, but no bank is asked for more word
  // accesses per cycle than its 2 ports serve, so the simulator's port-aware bank model charges
  // no stall (docs/SIMULATOR.md, "Banks") and the RTL, whose scratchpads never stall
  // (docs/RTL.md), must agree exactly: data bit-identical, same work, same cycles.
  rtl::CosimResult r = rtl::cosim(t, isa::assemble(t, prog, "chain.s"), mem);
  EXPECT_TRUE(r.dataMatch) << r.dataDivergence;
  EXPECT_EQ(r.rtl.engines[0].instructions, tiles);
  EXPECT_EQ(r.rtl.macs, tiles * 512);
  EXPECT_EQ(r.rtl.macs, r.sim.macs);
  EXPECT_EQ(r.sim.bankConflictStallCycles, 0);
  EXPECT_EQ(r.rtl.totalCycles, r.sim.totalCycles) << r.summary(t);
  for (size_t e = 0; e < t.engines.size(); ++e)
    EXPECT_EQ(r.rtl.engines[e].instructions, r.sim.engines[e].instructions);
}

// The same chain serialised (each tile's five steps finish before the next tile's load starts)
// never runs two engines on one banked level at once, so there is no stall to model and every
// instruction's start and end must match the simulator exactly.
TEST(RtlTokens, SerialChainExact) {
  isa::Target t = rtlTarget();
  sim::Memory mem(t, 1 << 16);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  for (int i = 0; i < 2048; ++i)
    putHalf(mem.dram(), 2 * i, d(rng));
  std::string prog;
  for (int i = 0; i < 4; ++i) {
    prog += fmt::format("ld {}push=0x2 dst_space=l1 dst_addr=0 elem_bytes=2 n0=8 n1=8 n2=1 "
                        "src_addr={} src_s0=1 src_s1=8 dst_s0=1 dst_s1=8\n",
                        i ? "pop=0x10 " : "", 0x200 * i);
    prog += "mov pop=0x1 src_space=l1 src_addr=0 dst_space=l0a dst_addr=0 elem_bytes=2 n0=64 "
            "n1=1 n2=1 src_s0=1 dst_s0=1\n";
    prog += "mov push=0x4 src_space=l1 src_addr=0 dst_space=l0b dst_addr=0 elem_bytes=2 n0=64 "
            "n1=1 n2=1 src_s0=1 dst_s0=1\n";
    prog += "mm pop=0x2 push=0x8 a_addr=0 b_addr=0 c_addr=0 m=8 k=8 n=8\n";
    prog += "vop pop=0x4 push=0x10 op=relu dst_space=l1 dst_addr=0x400 dst_dtype=fp16 "
            "src1_space=acc src1_addr=0 src1_dtype=fp32 n0=64 n1=1 n2=1 dst_s0=1 src1_s0=1\n";
    prog += fmt::format("st pop=0x8 push=0x{:x} src_space=l1 src_addr=0x400 dst_addr={} "
                        "elem_bytes=2 n0=64 n1=1 n2=1 src_s0=1 dst_s0=1\n",
                        i < 3 ? 0x1 : 0, 0x8000 + 0x80 * i);
  }
  prog += "finish\n";
  rtl::CosimResult r = expectAgree(t, prog, mem);
  EXPECT_EQ(r.sim.bankConflictStallCycles, 0);
  EXPECT_EQ(r.rtl.macs, 4 * 512);
}
