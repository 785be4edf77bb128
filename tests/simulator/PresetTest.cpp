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
  for (const char *name : {"npu-base.yaml", "npu-tiny.yaml", "npu-large.yaml", "npu-int8.yaml",
                           "vta-like.yaml"}) {
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
    int64_t want =
        ld->timing.latency + t.dram.latency + int64_t(std::ceil(double(bytes) / rate));
    EXPECT_EQ(s.totalCycles, want);
  }
}

} // namespace

namespace {

// A bank conflict between a DMA (the feed engine reading the accumulators) and the tensor unit
// (writing them) on npu-base.yaml, whose acc level has 4 banks of 64 B and 2 ports. Expected
// stalls follow docs/SIMULATOR.md: overlap * sharedBanks / (banksTouched * ports), paid by the
// later starter. Both start at cycle 0; the feed engine (index 1) commits before the tensor
// engine (index 2), so the matmul pays.
struct ConflictCase {
  int64_t movAddr, movBytes;
  int64_t mmEnd;
};

int64_t matmulEnd(const ConflictCase &c) {
  isa::Target t = isa::loadTarget(config("npu-base.yaml"));
  // mm: m=1, k=1024, n=16: fill 32 + 1 * 1024/16 * 1 = 96 cycles; C = 64 B at acc 0 = bank 0.
  std::string text = fmt::format(
      "mov src_space=acc src_addr={} dst_space=l1 dst_addr=0 elem_bytes=4 n0={} n1=1 n2=1 "
      "src_s0=1 dst_s0=1\n"
      "mm a_addr=0 b_addr=0 c_addr=0 m=1 k=1024 n=16\n",
      c.movAddr, c.movBytes / 4);
  isa::Program p = isa::assemble(t, text, "conflict.s");
  sim::Memory mem(t, 1 << 12);
  sim::SimOptions o;
  o.trace = true;
  sim::SimStats s = sim::run(t, p, mem, o);
  for (const sim::TraceEvent &e : s.trace)
    if (e.index == 1)
      return e.end;
  return -1;
}

TEST(SimGolden, DmaTensorBankConflictAndItsDisappearance) {
  // mov of 64 B from acc 256 (bank (256/64)%4 = 0, the matmul's bank; no byte in common):
  // 2 + 64/64 = 3 cycles; stall = 3 * 1 / (1 * 2) = 1 -> the matmul ends at 97.
  EXPECT_EQ(matmulEnd({256, 64, 0}), 97);
  // One bank row further (320: bank 1) the banks differ and the stall vanishes: 96.
  EXPECT_EQ(matmulEnd({320, 64, 0}), 96);
  // 2048 B from acc 0x4000 span all 4 banks: 2 + 2048/64 = 34 cycles, sharing bank 0:
  // stall = 34 * 1 / (1 * 2) = 17 -> 113; one 64 B row less (1984 B, 33 cycles, still all
  // banks): 33 / 2 = 16 -> 112.
  EXPECT_EQ(matmulEnd({0x4000, 2048, 0}), 113);
  EXPECT_EQ(matmulEnd({0x4000, 1984, 0}), 112);
  // Per-level accounting: the stall is charged to level acc.
  isa::Target t = isa::loadTarget(config("npu-base.yaml"));
  isa::Program p = isa::assemble(t,
                                 "mov src_space=acc src_addr=256 dst_space=l1 elem_bytes=4 n0=16 "
                                 "n1=1 n2=1 src_s0=1 dst_s0=1\nmm m=1 k=1024 n=16\n",
                                 "c.s");
  sim::Memory mem(t, 1 << 12);
  sim::SimStats s = sim::run(t, p, mem);
  EXPECT_EQ(s.levels[size_t(*t.findLevel("acc"))].bankConflictStallCycles, 1);
  EXPECT_EQ(s.levels[size_t(*t.findLevel("l1"))].bankConflictStallCycles, 0);
  EXPECT_EQ(s.engines[size_t(*t.findEngine("tensor"))].bankConflictStallCycles, 1);
  EXPECT_EQ(s.bankConflictStallCycles, 1);
}

} // namespace
