// PresetTest.cpp - the bundled presets beyond npu-base: every one loads and runs a hand-written
// program; int8 GEMM with int32 accumulation and requantisation (round to nearest even,
// saturate) on vta-like.yaml, checked against a naive integer reference, with the cycle count
// derived from the YAML's numbers.
#include "isa/Program.h"
#include "isa/Target.h"
#include "simulator/Simulator.h"
#include "support/Error.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

using namespace npuc;

namespace {

std::string config(const char *name) {
  return std::string(NPUC_SOURCE_DIR) + "/configs/" + name;
}

// m=4 rows of A (int8, 4x32) times B (int8, 32x16) -> int32 acc, then
// out = sat_int8(round(acc * 2^-6)) and stored to DRAM. Tokens: load -> compute -> store.
const char *kVtaProgram = R"(
.region a    dram 0x000 128 i8 4x32
.region b    dram 0x100 512 i8 32x16
.region res  dram 0x400 64  i8 4x16
.region abuf inp 0 128
.region bbuf wgt 0 512
.region cbuf acc 0 256
.region obuf out 0 64
  ld   src_addr=a dst_space=inp dst_addr=abuf elem_bytes=1 n0=128 n1=1 n2=1 src_s0=1 dst_s0=1
  ld   push=compute src_addr=b dst_space=wgt dst_addr=bbuf elem_bytes=1 n0=512 n1=1 n2=1 src_s0=1 dst_s0=1
gemm_tile:
  gemm pop=load a_addr=abuf b_addr=bbuf c_addr=cbuf m=4 k=32 n=16
  alu  push=store op=muladd dst_space=out dst_addr=obuf dst_dtype=int8 src1_space=acc src1_addr=cbuf src1_dtype=int32 n0=64 n1=1 n2=1 dst_s0=1 src1_s0=1 imm0=0x3c800000
  st   pop=compute src_addr=obuf dst_addr=res elem_bytes=1 n0=64 n1=1 n2=1 src_s0=1 dst_s0=1
  finish
)";

TEST(SimPresets, VtaLikeInt8GemmRequantises) {
  isa::Target t = isa::loadTarget(config("vta-like.yaml"));
  isa::AsmSymbols sym;
  isa::Program p0 = isa::assemble(t, kVtaProgram, "vta.s", &sym);
  isa::Program p = isa::decode(t, isa::encode(t, p0));
  ASSERT_EQ(sym.labels.at("gemm_tile"), 2);
  sim::Memory mem(t, 1 << 12);
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> u(-128, 127);
  std::vector<int8_t> a(4 * 32), b(32 * 16);
  for (int8_t &x : a)
    x = static_cast<int8_t>(u(rng));
  for (int8_t &x : b)
    x = static_cast<int8_t>(u(rng));
  a[0] = a[1] = 127; // make row 0, col 0 large enough to saturate after the shift
  std::memcpy(mem.dram().data() + 0x000, a.data(), a.size());
  std::memcpy(mem.dram().data() + 0x100, b.data(), b.size());
  sim::SimStats s = sim::run(t, p, mem);
  int saturated = 0;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 16; ++j) {
      int32_t acc = 0;
      for (int k = 0; k < 32; ++k)
        acc += int32_t(a[size_t(i * 32 + k)]) * int32_t(b[size_t(k * 16 + j)]);
      // imm0 = 0x3c800000 = 2^-6: a rounding (ties to even) arithmetic shift right by 6.
      double r = std::nearbyint(double(acc) / 64.0);
      int want = int(std::min(127.0, std::max(-128.0, r)));
      saturated += want == 127 || want == -128;
      int8_t got;
      std::memcpy(&got, mem.dram().data() + 0x400 + i * 16 + j, 1);
      EXPECT_EQ(int(got), want) << i << "," << j << " acc " << acc;
      int32_t accGot;
      std::memcpy(&accGot, mem.level(3).data() + 4 * (i * 16 + j), 4);
      EXPECT_EQ(accGot, acc);
    }
  EXPECT_GT(saturated, 0); // the saturation path was exercised
  // Cycles from vta-like.yaml: DRAM 8 B/cycle, latency 40; ld/st latency 2; gemm fill 4;
  // alu latency 1, 16 lanes.
  //   ld a: 2 + 40 + 128/8 = 58 (DRAM busy [0,16)); ld b queues behind it on the same engine:
  //   starts 58, 2 + 40 + 512/8 = 106 -> ends 164. gemm: 4 + 4 * ceil(32/16) * ceil(16/16) = 12
  //   -> [164, 176). alu: 1 + 64/16 = 5 -> [176, 181). st: 2 + 40 + 64/8 = 50 -> [181, 231).
  //   finish on compute: latency 1 at 181 -> 182. Total 231.
  EXPECT_EQ(s.totalCycles, 231);
  EXPECT_EQ(s.macs, 4 * 32 * 16);
}

TEST(SimPresets, EveryPresetLoadsAndRunsADma) {
  for (const char *name :
       {"npu-base.yaml", "npu-tiny.yaml", "npu-large.yaml", "npu-int8.yaml", "vta-like.yaml"}) {
    SCOPED_TRACE(name);
    isa::Target t = isa::loadTarget(config(name));
    const isa::InstrDesc *ld = t.instrsWith(isa::Semantics::Dma).front();
    int l1 = 1; // level 1 is the first on-chip level in every preset
    // Whole bursts on every DRAM channel, so that the channels split the bytes evenly.
    const int64_t bytes = int64_t(t.dram.burstBytes) * t.dram.channels * 4;
    std::string text = fmt::format("{} dst_space={} elem_bytes=1 n0={} n1=1 n2=1 src_s0=1 "
                                   "dst_s0=1\n",
                                   ld->mnemonic, t.levels[size_t(l1)].name, bytes);
    isa::Program p = isa::decode(t, isa::encode(t, isa::assemble(t, text, name)));
    sim::Memory mem(t, 1 << 12);
    sim::SimStats s = sim::run(t, p, mem);
    // One DMA from DRAM: latency terms + bytes / min(engine, DRAM) bytes per cycle.
    double rate = std::min(t.engines[size_t(ld->engine)].bytesPerCycle, t.dram.bytesPerCycle);
    int64_t want = ld->timing.latency + t.dram.latency + int64_t(std::ceil(double(bytes) / rate));
    EXPECT_EQ(s.totalCycles, want);
  }
}

} // namespace

namespace {

// A strided gather from npu-base.yaml's accumulators (4 banks of 64 B, 2 ports) by the feed
// engine (64 B/cycle, latency 2). Expected cycles follow docs/SIMULATOR.md ("Banks"): an
// instruction takes at least max_b ceil(words_b / ports) cycles. Elements 64 fp32 (256 B = one
// bank period) apart all fall in bank 0, one word each; the 4N contiguous bytes written to L1
// are one word. Uncontended: 2 + ceil(4N / 64) = 3 cycles for N <= 16.
sim::SimStats gather(int64_t n) {
  isa::Target t = isa::loadTarget(config("npu-base.yaml"));
  std::string text = fmt::format("mov src_space=acc src_addr=0 dst_space=l1 dst_addr=0 "
                                 "elem_bytes=4 n0={} n1=1 n2=1 src_s0=64 dst_s0=1\n",
                                 n);
  isa::Program p = isa::assemble(t, text, "gather.s");
  sim::Memory mem(t, 1 << 12);
  return sim::run(t, p, mem);
}

TEST(SimGolden, StridedAccumulatorGatherOnNpuBase) {
  // 6 words in bank 0 over 2 ports: ceil(6 / 2) = 3 = the transfer's own 3 cycles: no stall.
  EXPECT_EQ(gather(6).totalCycles, 3);
  EXPECT_EQ(gather(6).bankConflictStallCycles, 0);
  // 7 words: ceil(7 / 2) = 4 cycles, one stall cycle.
  sim::SimStats s = gather(7);
  EXPECT_EQ(s.totalCycles, 4);
  // 16 words: 8 cycles.
  EXPECT_EQ(gather(16).totalCycles, 8);
  // Per-level and per-engine accounting: the stall is charged to level acc and the feed engine.
  isa::Target t = isa::loadTarget(config("npu-base.yaml"));
  EXPECT_EQ(s.levels[size_t(*t.findLevel("acc"))].bankConflictStallCycles, 1);
  EXPECT_EQ(s.levels[size_t(*t.findLevel("l1"))].bankConflictStallCycles, 0);
  EXPECT_EQ(s.engines[size_t(*t.findEngine("feed"))].bankConflictStallCycles, 1);
  EXPECT_EQ(s.bankConflictStallCycles, 1);
}

} // namespace
