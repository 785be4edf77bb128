// BankTest.cpp - golden tests of the port-aware bank model (docs/SIMULATOR.md, "Banks"), every
// expected cycle derived by hand from the model's two rules and the test target's numbers:
//   * concurrent demand: instructions asking more word accesses per cycle of a bank than it has
//     ports stretch the later starter by sum_b (w_b / W) * (demand_b / ports - 1) per cycle;
//   * self limit: an instruction takes at least max_b ceil(w_b / ports) cycles.
// Each edge is checked on both sides: demand == ports costs nothing, one accessor more costs
// exactly the predicted stall.
#include "SimTestUtil.h"
#include "simulator/Decode.h"
#include "simulator/Timing.h"

#include <gtest/gtest.h>

using namespace simtest;
using namespace npuc;

namespace {

sim::SimStats runTraced(const isa::Target &t, const isa::Program &p) {
  sim::Memory mem(t, 1 << 16);
  sim::SimOptions o;
  o.trace = true;
  return sim::run(t, p, mem, o);
}

// The test target's L1 has 8 banks of 64 B: bank(addr) = (addr / 64) % 8, one period = 512 B.
// R rows 512 B apart all sit in bank 0 (bank 1 with base + 64), one new word per row. The three
// accessors use different bytes of each word (load 0-7, vector 16-47, move 48-55): no data race,
// but the same words, so the same bank.
constexpr int64_t kRows = 64;

// load: R rows of 8 B, DRAM -> L1 rows 512 B apart. DRAM 8 B/cycle, latency 0, instruction
// latency 0: 8R / 8 = R cycles for R words -> 1 access per cycle of bank 0.
isa::Instr loadRows(const isa::Target &t, int64_t base) {
  return make(t, "ld",
              {{"src_space", DRAM},
               {"src_addr", 0},
               {"dst_space", L1},
               {"dst_addr", base},
               {"elem_bytes", 8},
               {"n0", 1},
               {"n1", kRows},
               {"src_s0", 1},
               {"src_s1", 1},
               {"dst_s0", 1},
               {"dst_s1", 64}});
}

// vector: R rows of 8 fp32 (32 B, half a word) from L1 rows 512 B apart to the (unbanked)
// accumulators: 8 lanes -> one row per cycle, R cycles for R words -> 1 access per cycle.
isa::Instr vectorRows(const isa::Target &t, int64_t base) {
  return make(t, "vop",
              {{"op", 0},
               {"dst_space", ACC},
               {"dst_addr", 0},
               {"dst_dtype", 1},
               {"src1_space", L1},
               {"src1_addr", base},
               {"src1_dtype", 1},
               {"n0", 8},
               {"n1", kRows},
               {"dst_s0", 1},
               {"dst_s1", 8},
               {"src1_s0", 1},
               {"src1_s1", 128}});
}

// move (8 B/cycle): R rows of 8 B from L1 rows 512 B apart to L0A: 8R / 8 = R cycles, R words.
isa::Instr moveRows(const isa::Target &t, int64_t base) {
  return make(t, "mv",
              {{"src_space", L1},
               {"src_addr", base},
               {"dst_space", L0A},
               {"dst_addr", 0},
               {"elem_bytes", 8},
               {"n0", 1},
               {"n1", kRows},
               {"src_s0", 1},
               {"src_s1", 64},
               {"dst_s0", 1},
               {"dst_s1", 1}});
}

struct Stalls {
  int64_t load, vector, move;
};

// All three start at cycle 0 and commit in engine order (load 0, vector 2, move 4): each pays
// for the demand of those committed before it.
Stalls threeAccessors(int ports, int64_t moveBase = 48) {
  TargetOptions o;
  o.l1Ports = ports;
  o.dramBytesPerCycle = 8;
  o.dramLatency = 0;
  auto t = makeTarget(o);
  isa::Program p;
  p.instrs.push_back(loadRows(*t, 0));
  p.instrs.push_back(vectorRows(*t, 16));
  p.instrs.push_back(moveRows(*t, moveBase));
  sim::SimStats s = runTraced(*t, p);
  EXPECT_EQ(eventOf(s, 0).start, 0);
  EXPECT_EQ(eventOf(s, 1).start, 0);
  EXPECT_EQ(eventOf(s, 2).start, 0);
  return {s.engines[LOAD].bankConflictStallCycles, s.engines[VECTOR].bankConflictStallCycles,
          s.engines[MOVE].bankConflictStallCycles};
}

TEST(SimBanks, AccessorsUpToThePortsNeverStall) {
  // 3 accessors of 1 access/cycle each on a 3-port bank 0: demand 3 == ports.
  Stalls s = threeAccessors(3);
  EXPECT_EQ(s.load, 0);
  EXPECT_EQ(s.vector, 0);
  EXPECT_EQ(s.move, 0);
}

TEST(SimBanks, OneAccessorMoreThanPortsStallsByTheExcess) {
  // 2 ports: vector sees load + itself = 2 == ports (no stall); move sees 3 > 2: it progresses
  // at 2/3 speed over its R cycles: R * (3/2 - 1) = R/2 = 32.
  Stalls two = threeAccessors(2);
  EXPECT_EQ(two.load, 0);
  EXPECT_EQ(two.vector, 0);
  EXPECT_EQ(two.move, kRows / 2);
  // 1 port: vector sees 2 > 1: R * (2 - 1) = R = 64, and then occupies bank 0 for 2R cycles at
  // R / 2R = 0.5 access/cycle. move sees 1 (load) + 0.5 (vector) + 1 (itself) = 2.5 over its R
  // cycles: R * (2.5 - 1) = 1.5 R = 96.
  Stalls one = threeAccessors(1);
  EXPECT_EQ(one.vector, kRows);
  EXPECT_EQ(one.move, kRows * 3 / 2);
}

TEST(SimBanks, OtherBanksDoNotConflict) {
  // The move in bank 1 (base 64 + 48) shares no bank with the others: no stall even on 1 port,
  // while the vector still pays for sharing bank 0 with the load.
  Stalls s = threeAccessors(1, 64 + 48);
  EXPECT_EQ(s.vector, kRows);
  EXPECT_EQ(s.move, 0);
}

// One vector copy of 8 fp32 elements whose source elements are `stride` elements apart, to the
// unbanked accumulators: 8 lanes -> 1 cycle without bank limits.
sim::SimStats stridedGather(int ports, int64_t stride) {
  TargetOptions o;
  o.l1Ports = ports;
  auto t = makeTarget(o);
  isa::Program p;
  p.instrs.push_back(make(*t, "vop",
                          {{"op", 0},
                           {"dst_space", ACC},
                           {"dst_dtype", 1},
                           {"src1_space", L1},
                           {"src1_dtype", 1},
                           {"n0", 8},
                           {"dst_s0", 1},
                           {"src1_s0", stride}}));
  return runTraced(*t, p);
}

TEST(SimBanks, StridedAccessHittingOneBankIsSlowed) {
  // Stride 128 fp32 = 512 B: all 8 elements in bank 0, 8 different words. ceil(8 / ports)
  // cycles: 8 ports -> 1 (no stall); 7 ports -> 2 (1 stall cycle); 1 port -> 8 (7).
  EXPECT_EQ(stridedGather(8, 128).totalCycles, 1);
  EXPECT_EQ(stridedGather(7, 128).totalCycles, 2);
  EXPECT_EQ(stridedGather(7, 128).bankConflictStallCycles, 1);
  EXPECT_EQ(stridedGather(1, 128).totalCycles, 8);
  EXPECT_EQ(stridedGather(1, 128).levels[L1].bankConflictStallCycles, 7);
  // Stride 16 fp32 = 64 B: one word in each of the 8 banks; 1 cycle even on 1 port.
  EXPECT_EQ(stridedGather(1, 16).totalCycles, 1);
  // Stride 2 fp32 = 8 B: the 8 elements share one word, one access: 1 cycle.
  EXPECT_EQ(stridedGather(1, 2).totalCycles, 1);
}

TEST(SimBanks, BankAccessCountsFollowTheInterleave) {
  TargetOptions o;
  auto t = makeTarget(o);
  sim::Memory mem(*t, 1 << 16);
  isa::Program p;
  // 1000 contiguous bytes from L1 32 to L1 4096 + 32: source words 0..16 (bytes 32..1031) ->
  // banks 0..7 twice and bank 0 once more (17 words); destination the same offsets -> 17 words.
  p.instrs.push_back(copy1d(*t, "mv", L1, 32, L1, 4096 + 32, 1000));
  std::vector<sim::Decoded> d = sim::decodeProgram(*t, p, mem);
  std::vector<sim::BankAccess> a = sim::bankAccesses(*t, d[0]);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].level, L1);
  EXPECT_EQ(a[0].total, 34);
  EXPECT_EQ(a[0].words[0], 6);
  for (int b = 1; b < 8; ++b)
    EXPECT_EQ(a[0].words[size_t(b)], 4) << b;
}

// A mac's destination is read and written: its words count twice, as a matmul's accumulating C.
// 16 fp32 (64 B, one word at bank 1) from L1 64 -> dst 1 word; src1 16 fp16 at L1 1024 (32 B,
// bank 0), src2 16 fp32 at L1 2048 + 128 (bank 2): 1 + 1 + 2 = 4 words, 3 for mul.
TEST(SimBanks, MacCountsItsDestinationTwice) {
  auto t = makeTarget();
  sim::Memory mem(*t, 1 << 16);
  auto words = [&](isa::VecOp op) {
    int code = t->vector.opCode(op);
    isa::Program p;
    p.instrs.push_back(make(*t, "vop",
                            {{"op", code},
                             {"dst_space", L1},
                             {"dst_addr", 64},
                             {"dst_dtype", 1},
                             {"src1_space", L1},
                             {"src1_addr", 1024},
                             {"src1_dtype", 0},
                             {"src2_space", L1},
                             {"src2_addr", 2048 + 128},
                             {"src2_dtype", 1},
                             {"n0", 16},
                             {"dst_s0", 1},
                             {"src1_s0", 1},
                             {"src2_s0", 1}}));
    std::vector<sim::Decoded> d = sim::decodeProgram(*t, p, mem);
    std::vector<sim::BankAccess> a = sim::bankAccesses(*t, d[0]);
    EXPECT_EQ(a.size(), 1u);
    return a.empty() ? std::vector<int64_t>{} : a[0].words;
  };
  EXPECT_EQ(words(isa::VecOp::Mac), (std::vector<int64_t>{1, 2, 1, 0, 0, 0, 0, 0}));
  EXPECT_EQ(words(isa::VecOp::Mul), (std::vector<int64_t>{1, 1, 1, 0, 0, 0, 0, 0}));
}

// The counter visits one row per distinct offset modulo the bank period (banks * width) and
// only one cycle of row offsets per dimension; this compares it with walking every row and
// element by the model's rule (contiguous rows touch each word they cover once; strided elements
// one word each, consecutive elements in one word sharing it), on shapes whose row offsets wrap
// the period unevenly, in both directions, with padding (the source box shrinks); on the test
// target's 8 banks of 64 B (powers of two: shifts and masks) and on 6 banks of 48 B (divisions).
std::vector<int64_t> bruteWords(int64_t banks, int64_t width, int64_t addr, int eb,
                                const int64_t *n, const int64_t *s) {
  std::vector<int64_t> words(banks, 0);
  auto fdiv = [](int64_t a, int64_t m) { return a >= 0 ? a / m : -((-a + m - 1) / m); };
  for (int64_t i2 = 0; i2 < n[2]; ++i2)
    for (int64_t i1 = 0; i1 < n[1]; ++i1) {
      int64_t row = addr + eb * (i1 * s[1] + i2 * s[2]);
      if (s[0] == 1 || n[0] == 1) {
        for (int64_t w = fdiv(row, width); w <= fdiv(row + n[0] * eb - 1, width); ++w)
          ++words[size_t(((w % banks) + banks) % banks)];
        continue;
      }
      int64_t prev = INT64_MIN;
      for (int64_t i0 = 0; i0 < n[0]; ++i0) {
        int64_t a = row + eb * i0 * s[0];
        for (int64_t w : {fdiv(a, width), fdiv(a + eb - 1, width)})
          if (w != prev) {
            ++words[size_t(((w % banks) + banks) % banks)];
            prev = w;
          }
      }
    }
  return words;
}

void checkRowShortcuts(int banks, int width) {
  TargetOptions opt;
  opt.l1Banks = banks;
  opt.bankWidth = width;
  auto t = makeTarget(opt);
  sim::Memory mem(*t, 1 << 16);
  struct Shape {
    int eb;
    int64_t n[3], src[3], dst[3], padLo1, padHi1;
    int64_t srcAddr, dstAddr;
  } shapes[] = {
      // 80 B row step: offsets repeat every 32 rows; 70 rows = 2 full cycles + 6.
      {2, {24, 70, 3}, {1, 40, 3000}, {1, 24, 1700}, 0, 0, 6, 20000},
      // element stride 3, rows 100 B apart, planes stepping backwards; padded rows.
      {2, {9, 40, 4}, {3, 50, -2048}, {1, 9, 360}, 5, 2, 20000, 40000},
      // 512 B row step: every row at the same offset (one distinct offset).
      {4, {5, 33, 2}, {1, 128, 8}, {2, 10, 330}, 0, 0, 100, 30000},
      // 1-byte elements, odd steps: all 512 offsets distinct before repeating.
      {1, {17, 600, 1}, {1, 7, 0}, {1, 17, 0}, 3, 0, 1, 50000},
  };
  // One counter for every shape: the second pass over each shape (shifted by one bank period, so
  // the same offsets) is answered from the counter's memory of shapes and must agree too.
  sim::BankCounter counter(*t);
  const int64_t period = int64_t(banks) * width;
  for (const Shape &sh : shapes)
    for (int64_t shift : {int64_t(0), period}) {
      isa::Program p;
      p.instrs.push_back(make(*t, "mv",
                              {{"src_space", L1},
                               {"src_addr", sh.srcAddr + shift},
                               {"dst_space", L1},
                               {"dst_addr", sh.dstAddr + shift},
                               {"elem_bytes", sh.eb},
                               {"n0", sh.n[0]},
                               {"n1", sh.n[1]},
                               {"n2", sh.n[2]},
                               {"src_s0", sh.src[0]},
                               {"src_s1", sh.src[1]},
                               {"src_s2", sh.src[2]},
                               {"dst_s0", sh.dst[0]},
                               {"dst_s1", sh.dst[1]},
                               {"dst_s2", sh.dst[2]},
                               {"pad1_lo", sh.padLo1},
                               {"pad1_hi", sh.padHi1}}));
      std::vector<sim::Decoded> d = sim::decodeProgram(*t, p, mem);
      int64_t inner[3] = {sh.n[0], sh.n[1] - sh.padLo1 - sh.padHi1, sh.n[2]};
      std::vector<int64_t> want =
          bruteWords(banks, width, sh.srcAddr + shift, sh.eb, inner, sh.src);
      std::vector<int64_t> dst = bruteWords(banks, width, sh.dstAddr + shift, sh.eb, sh.n, sh.dst);
      int64_t total = 0;
      for (size_t b = 0; b < want.size(); ++b) {
        want[b] += dst[b];
        total += want[b];
      }
      std::vector<sim::BankAccess> a = sim::bankAccesses(*t, d[0]); // a fresh counter
      ASSERT_EQ(a.size(), 1u);
      EXPECT_EQ(a[0].words, want) << "shape with n1 " << sh.n[1] << ", " << banks << " banks";
      EXPECT_EQ(a[0].total, total);
      counter.count(d[0]);
      ASSERT_EQ(counter.levels(), std::vector<int>{L1});
      EXPECT_EQ(counter.words(L1), want)
          << "remembered shape, n1 " << sh.n[1] << " shift " << shift << ", " << banks << " banks";
      EXPECT_EQ(counter.total(L1), total);
    }
}

TEST(SimBanks, RowShortcutsCountAsEveryRowWalked) {
  checkRowShortcuts(8, 64);
  checkRowShortcuts(6, 48);
}

} // namespace
