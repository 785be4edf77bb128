// EnergyTest.cpp - the simulator's action counts and the energy model (simulator/Energy.h), with
// every expected figure derived by hand from the counting rules for the tiny test target
// (tensor 4x4 fp16 -> fp32, DRAM, L1, L0a, L0b, acc).
#include "SimTestUtil.h"

#include "simulator/Energy.h"

#include <gtest/gtest.h>

using namespace simtest;
using namespace npuc;

namespace {

sim::SimStats runBoth(const isa::Target &t, const isa::Program &p) {
  sim::Memory mem(t, 1 << 16);
  sim::SimStats functional = sim::run(t, p, mem);
  sim::Memory mem2(t, 1 << 16);
  sim::SimOptions o;
  o.functional = false;
  sim::SimStats timing = sim::run(t, p, mem2, o);
  // Counts follow from the decoded fields, never from data: a timing-only run counts the same.
  for (size_t l = 0; l < functional.levels.size(); ++l) {
    EXPECT_EQ(functional.levels[l].bytesRead, timing.levels[l].bytesRead) << l;
    EXPECT_EQ(functional.levels[l].bytesWritten, timing.levels[l].bytesWritten) << l;
  }
  EXPECT_EQ(functional.vectorElements, timing.vectorElements);
  return functional;
}

isa::Instr matmul(const isa::Target &t, int64_t m, int64_t k, int64_t n, bool acc) {
  return make(t, "mm",
              {{"a_addr", 0},
               {"b_addr", 0},
               {"c_addr", 0},
               {"m", m},
               {"k", k},
               {"n", n},
               {"accumulate", acc}});
}

} // namespace

TEST(SimEnergy, DmaCountsPaddingAsWrittenNotRead) {
  auto t = makeTarget();
  isa::Program p;
  // A 2-byte-element box of 10 x 3 with one pad column each side and one pad row at the top:
  // 8 x 2 elements read from DRAM, 10 x 3 written to L1.
  p.instrs.push_back(make(*t, "ld",
                          {{"src_space", DRAM},
                           {"dst_space", L1},
                           {"elem_bytes", 2},
                           {"n0", 10},
                           {"n1", 3},
                           {"src_s0", 1},
                           {"src_s1", 8},
                           {"dst_s0", 1},
                           {"dst_s1", 10},
                           {"pad0_lo", 1},
                           {"pad0_hi", 1},
                           {"pad1_lo", 1}}));
  sim::SimStats s = runBoth(*t, p);
  EXPECT_EQ(s.levels[DRAM].bytesRead, 8 * 2 * 2);
  EXPECT_EQ(s.levels[L1].bytesWritten, 10 * 3 * 2);
  EXPECT_EQ(s.levels[L1].bytesRead, 0);
  EXPECT_EQ(s.levels[DRAM].bytesRead, s.dramBytesRead);
}

TEST(SimEnergy, MatmulOperandTrafficOfAWeightStationaryArray) {
  auto t = makeTarget();
  isa::Program p;
  // m 3, k 6, n 5 on a 4x4 array: 2 row blocks (k), 2 column blocks (n).
  p.instrs.push_back(matmul(*t, 3, 6, 5, false));
  p.instrs.push_back(matmul(*t, 3, 6, 5, true));
  sim::SimStats s = runBoth(*t, p);
  EXPECT_EQ(s.macs, 2 * 3 * 6 * 5);
  EXPECT_EQ(s.levels[L0B].bytesRead, 2 * (6 * 5 * 2));        // B once per matmul, fp16
  EXPECT_EQ(s.levels[L0A].bytesRead, 2 * (3 * 6 * 2 * 2));    // A once per column block
  EXPECT_EQ(s.levels[ACC].bytesWritten, 2 * (3 * 5 * 4 * 2)); // C per row block, fp32
  // The first matmul reads C once (its second row block), the accumulating one twice.
  EXPECT_EQ(s.levels[ACC].bytesRead, 3 * 5 * 4 * (1 + 2));
}

TEST(SimEnergy, VectorOpsReadWhatTheyRead) {
  auto t = makeTarget();
  isa::Program p;
  auto vop = [&](isa::VecOp op, int dtype) {
    return make(*t, "vop",
                {{"op", t->vector.opCode(op)},
                 {"dst_space", L1},
                 {"dst_addr", 0x1000},
                 {"dst_dtype", dtype},
                 {"src1_space", L1},
                 {"src1_dtype", 1},
                 {"src2_space", L1},
                 {"src2_addr", 0x2000},
                 {"src2_dtype", 1},
                 {"n0", 12},
                 {"dst_s0", 1},
                 {"src1_s0", 1},
                 {"src2_s0", 1}});
  };
  p.instrs.push_back(vop(isa::VecOp::Relu, 0)); // src1 fp32 read, fp16 written
  p.instrs.push_back(vop(isa::VecOp::Mac, 1));  // src1, src2 and dst read, dst written
  sim::SimStats s = runBoth(*t, p);
  EXPECT_EQ(s.vectorElements[size_t(isa::VecOp::Relu)], 12);
  EXPECT_EQ(s.vectorElements[size_t(isa::VecOp::Mac)], 12);
  EXPECT_EQ(s.vectorElements[size_t(isa::VecOp::Add)], 0);
  EXPECT_EQ(s.levels[L1].bytesRead, 12 * 4 + 3 * 12 * 4);
  EXPECT_EQ(s.levels[L1].bytesWritten, 12 * 2 + 12 * 4);
}

TEST(SimEnergy, EnergyIsTheCountsTimesTheTable) {
  auto t = makeTarget();
  t->clockGhz = 2;
  isa::EnergyTable &e = t->energy;
  e.macPj[int(isa::ElemType::F16)] = 0.5;
  e.vectorAluPj = 3;
  e.dramPjPerByte = 100;
  e.sramReadPjPerByte = 1;
  e.sramWritePjPerByte = 2;
  e.sramRefKib = 16; // l0a, l0b: one 16 KiB bank each -> factor 1
  e.sramExponent = 1;
  e.leakageMwPerMm2 = 10;
  isa::Program p;
  // 64 B: DRAM read, l0a written; then 16 MACs reading 8 B of A and 32 B of B.
  p.instrs.push_back(copy1d(*t, "ld", DRAM, 0, L0A, 0, 64, 0, 1 << TENSOR));
  isa::Instr mm = matmul(*t, 1, 4, 4, false);
  mm.set("pop", 1 << LOAD);
  p.instrs.push_back(mm);
  sim::SimStats s = runBoth(*t, p);
  sim::EnergyBreakdown en = sim::energyOf(*t, s);
  EXPECT_DOUBLE_EQ(en.mac, 16 * 0.5);
  EXPECT_DOUBLE_EQ(en.vector, 0);
  EXPECT_DOUBLE_EQ(en.levels[DRAM], 64 * 100.0);
  EXPECT_DOUBLE_EQ(en.levels[L0A], 64 * 2.0 + 8 * 1.0);
  EXPECT_DOUBLE_EQ(en.levels[L0B], 4 * 4 * 2 * 1.0);
  // acc: 32 KiB in one bank -> factor 2; 1 x 4 fp32 partial sums written once, never read.
  EXPECT_DOUBLE_EQ(en.levels[ACC], 16 * 2.0 * 2);
  // Leakage: 10 mW/mm^2 * area * cycles / 2 GHz (mW * ns = pJ).
  EXPECT_DOUBLE_EQ(en.leakage, 10 * isa::areaOf(*t).total() * double(s.totalCycles) / 2);
  EXPECT_DOUBLE_EQ(en.total(), en.mac + en.vector + en.leakage + en.levels[DRAM] + en.levels[L1] +
                                   en.levels[L0A] + en.levels[L0B] + en.levels[ACC]);
}
