// HazardTest.cpp - the hazard checker (SimOptions::check): every race kind, exact strided
// overlap, token chains that order accesses, misalignment, illegal fields, and --no-check.
// Each error is asserted by its message: kind, level, byte range, both instructions (index,
// program counter, disassembly) and the engines' states.
#include "SimTestUtil.h"
#include "simulator/Hazards.h"

#include <gtest/gtest.h>

using namespace simtest;
using namespace npuc;

namespace {

std::string errorOf(const isa::Target &t, const isa::Program &p, bool check = true) {
  sim::Memory mem(t, 1 << 16);
  sim::SimOptions o;
  o.check = check;
  try {
    sim::run(t, p, mem, o);
  } catch (const Error &e) {
    return e.what();
  }
  return "<no error>";
}

bool has(const std::string &s, const std::string &needle) {
  return s.find(needle) != std::string::npos;
}

// fp16 vector copy over n elements with element strides (dst_s0, src1_s0).
isa::Instr vcopy(const isa::Target &t, int64_t src, int64_t dst, int64_t n, int64_t sSrc = 1,
                 int64_t sDst = 1, int64_t pop = 0, int64_t push = 0) {
  return make(t, "vop",
              {{"op", 0},
               {"dst_space", L1},
               {"dst_addr", dst},
               {"src1_space", L1},
               {"src1_addr", src},
               {"n0", n},
               {"dst_s0", sDst},
               {"src1_s0", sSrc},
               {"pop", pop},
               {"push", push}});
}

TEST(SimHazards, ReadAfterWriteWithoutTokenIsReported) {
  auto t = makeTarget();
  isa::Program p;
  p.instrs.push_back(copy1d(*t, "ld", DRAM, 0, L1, 0x100, 64));
  p.instrs.push_back(vcopy(*t, 0x120, 0x1000, 8)); // reads [0x120, 0x130): inside the load
  std::string m = errorOf(*t, p);
  EXPECT_TRUE(has(m, "hazard: RAW (read-after-write) race on level 'l1' bytes [0x120, 0x130): "
                     "instruction #0 (ld) on engine 'load' writes its destination and "
                     "instruction #1 (vop) on engine 'vector' reads its src1, and no token "
                     "orders them"))
      << m;
  // Program counters are byte offsets: the test target's instructions are 512 bits.
  EXPECT_TRUE(has(m, "pc 0x0 (instruction #0): ld ")) << m;
  EXPECT_TRUE(has(m, "pc 0x40 (instruction #1): vop ")) << m;
  EXPECT_TRUE(has(m, "engines at cycle 0:")) << m;
  EXPECT_TRUE(has(m, "load: running instruction #0 (ld) (cycles 0..")) << m;
  EXPECT_TRUE(has(m, "vector: starting instruction #1 (vop)")) << m;
  EXPECT_TRUE(has(m, "tensor: done")) << m;

  // The same program with the token the author forgot is clean.
  p.instrs[0].set("push", 1 << VECTOR);
  p.instrs[1].set("pop", 1 << LOAD);
  EXPECT_EQ(errorOf(*t, p), "<no error>");
}

TEST(SimHazards, WriteAfterReadWithoutTokenIsReported) {
  auto t = makeTarget();
  isa::Program p;
  p.instrs.push_back(vcopy(*t, 0x200, 0x1000, 16));             // reads [0x200, 0x220)
  p.instrs.push_back(copy1d(*t, "ld", DRAM, 0, L1, 0x210, 64)); // overwrites part of it
  std::string m = errorOf(*t, p);
  EXPECT_TRUE(has(m, "hazard: WAR (write-after-read) race on level 'l1' bytes [0x210, 0x220): "
                     "instruction #0 (vop) on engine 'vector' reads its src1 and instruction #1 "
                     "(ld) on engine 'load' writes its destination"))
      << m;
  p.instrs[0].set("push", 1 << LOAD);
  p.instrs[1].set("pop", 1 << VECTOR);
  EXPECT_EQ(errorOf(*t, p), "<no error>");
}

TEST(SimHazards, WriteAfterWriteBetweenEnginesIsReported) {
  auto t = makeTarget();
  isa::Program p;
  p.instrs.push_back(copy1d(*t, "ld", DRAM, 0, L1, 0x0, 64));
  p.instrs.push_back(copy1d(*t, "mv", L1, 0x8000, L1, 0x3f, 2)); // one byte overlaps
  std::string m = errorOf(*t, p);
  EXPECT_TRUE(has(m, "hazard: WAW (write-after-write) race on level 'l1' bytes [0x3f, 0x40)")) << m;
  // One byte further up there is no overlap and no error (edge at N and N+1).
  p.instrs[1].set("dst_addr", 0x40);
  EXPECT_EQ(errorOf(*t, p), "<no error>");
}

TEST(SimHazards, ReadsDoNotRaceAndOneEngineIsOrdered) {
  auto t = makeTarget();
  isa::Program p;
  // Two engines reading the same bytes concurrently is fine.
  p.instrs.push_back(copy1d(*t, "st", L1, 0x0, DRAM, 0x1000, 64));
  p.instrs.push_back(vcopy(*t, 0x0, 0x2000, 32));
  // The same engine writing what it just read is ordered by the in-order queue.
  p.instrs.push_back(vcopy(*t, 0x2000, 0x0, 32));
  EXPECT_TRUE(has(errorOf(*t, p), "WAR (write-after-read) race on level 'l1' bytes [0x0, 0x40): "
                                  "instruction #0 (st) on engine 'store' reads its source and "
                                  "instruction #2 (vop) on engine 'vector' writes its dst"));
  p.instrs[0].set("push", 1 << VECTOR);
  p.instrs[2].set("pop", 1 << STORE);
  EXPECT_EQ(errorOf(*t, p), "<no error>");
}

TEST(SimHazards, TokenChainsOrderTransitively) {
  auto t = makeTarget();
  isa::Program p;
  // load -> move -> vector: the vector reads what the load wrote, ordered through the move.
  p.instrs.push_back(copy1d(*t, "ld", DRAM, 0, L1, 0x0, 64, 0, 1 << MOVE));
  p.instrs.push_back(copy1d(*t, "mv", L1, 0x4000, L1, 0x5000, 64, 1 << LOAD, 1 << VECTOR));
  p.instrs.push_back(vcopy(*t, 0x0, 0x6000, 32, 1, 1, 1 << MOVE));
  EXPECT_EQ(errorOf(*t, p), "<no error>");
  // Without the move's token the chain is broken.
  p.instrs[1].set("push", 0);
  p.instrs[2].set("pop", 0);
  EXPECT_TRUE(has(errorOf(*t, p), "RAW (read-after-write) race on level 'l1' bytes [0x0, 0x40)"));
}

TEST(SimHazards, InterleavedStridedAccessesAreCheckedExactly) {
  auto t = makeTarget();
  isa::Program p;
  // The vector unit writes the even fp16 elements of [0x0, 0x40), the move engine the odd ones:
  // the bounding boxes overlap but no byte does.
  p.instrs.push_back(vcopy(*t, 0x1000, 0x0, 16, 1, 2));
  p.instrs.push_back(make(*t, "mv",
                          {{"src_space", L1},
                           {"src_addr", 0x2000},
                           {"dst_space", L1},
                           {"dst_addr", 0x2},
                           {"elem_bytes", 2},
                           {"n0", 16},
                           {"src_s0", 1},
                           {"dst_s0", 2}}));
  EXPECT_EQ(errorOf(*t, p), "<no error>");
  // Shifted by one element the move hits the vector's elements.
  p.instrs[1].set("dst_addr", 0x4);
  EXPECT_TRUE(has(errorOf(*t, p), "WAW (write-after-write) race on level 'l1'"));
}

TEST(SimHazards, DramRacesAreReportedToo) {
  auto t = makeTarget();
  isa::Program p;
  // A store writes DRAM that a load reads back with no token in between.
  p.instrs.push_back(copy1d(*t, "st", L1, 0x0, DRAM, 0x8000, 128));
  p.instrs.push_back(copy1d(*t, "ld", DRAM, 0x8040, L1, 0x1000, 64));
  EXPECT_TRUE(has(errorOf(*t, p), "RAW (read-after-write) race on level 'dram' bytes "
                                  "[0x8040, 0x8080)"));
  p.instrs[0].set("push", 1 << LOAD);
  p.instrs[1].set("pop", 1 << STORE);
  EXPECT_EQ(errorOf(*t, p), "<no error>");
}

TEST(SimHazards, NoCheckRunsRacyProgramsForSpeedMeasurements) {
  auto t = makeTarget();
  isa::Program p;
  p.instrs.push_back(copy1d(*t, "ld", DRAM, 0, L1, 0x100, 64));
  p.instrs.push_back(vcopy(*t, 0x100, 0x1000, 8));
  EXPECT_TRUE(has(errorOf(*t, p, true), "hazard: RAW"));
  EXPECT_EQ(errorOf(*t, p, false), "<no error>");
}

TEST(SimHazards, MisalignedAccessesAreReported) {
  auto t = makeTarget();
  isa::Program p;
  p.instrs.push_back(vcopy(*t, 0x101, 0x1000, 8)); // fp16 source at an odd byte
  std::string m = errorOf(*t, p);
  EXPECT_TRUE(has(m, "hazard: misaligned access: instruction #0 (vop) src1 address 0x101 in "
                     "level 'l1' is not a multiple of its element size 2"))
      << m;
  EXPECT_TRUE(has(m, "pc 0x0 (instruction #0): vop")) << m;
  // 0x102 is aligned for fp16; strided sub-views need only element alignment.
  p.instrs[0].set("src1_addr", 0x102);
  EXPECT_EQ(errorOf(*t, p), "<no error>");

  isa::Program mm;
  // fp32 accumulators must be 4-byte aligned: c_addr 0x102 is not.
  mm.instrs.push_back(make(*t, "mm", {{"m", 1}, {"k", 1}, {"n", 1}, {"c_addr", 0x102}}));
  EXPECT_TRUE(has(errorOf(*t, mm), "accumulator C address 0x102 in level 'acc' is not a multiple "
                                   "of its element size 4"));
  // A DMA with 4-byte elements at an address that is only 2-aligned.
  isa::Program dma;
  dma.instrs.push_back(make(*t, "ld",
                            {{"src_space", DRAM},
                             {"src_addr", 0x2},
                             {"dst_space", L1},
                             {"elem_bytes", 4},
                             {"n0", 4},
                             {"src_s0", 1},
                             {"dst_s0", 1}}));
  EXPECT_TRUE(has(errorOf(*t, dma), "ld) source address 0x2 in level 'dram' is not a multiple "
                                    "of its element size 4"));
  EXPECT_EQ(errorOf(*t, dma, false), "<no error>");
}

TEST(SimHazards, IllegalFieldValuesNameThePcAndText) {
  auto t = makeTarget();
  t->vector.maxDims = 2;
  isa::Program p;
  p.instrs.push_back(copy1d(*t, "ld", DRAM, 0, L1, 0, 64, 0, 1 << VECTOR));
  p.instrs.push_back(vcopy(*t, 0x0, 0x1000, 4, 1, 1, 1 << LOAD));
  p.instrs[1].set("dst_dtype", 7);
  std::string m = errorOf(*t, p);
  EXPECT_TRUE(has(m, "instruction #1 (vop): dst_dtype=7 is not a known dtype code")) << m;
  EXPECT_TRUE(has(m, "pc 0x40 (instruction #1): vop")) << m;

  // A third dimension on a two-dimensional vector unit.
  p.instrs[1].set("dst_dtype", 0);
  p.instrs[1].set("n2", 2);
  EXPECT_TRUE(has(errorOf(*t, p), "instruction #1 (vop): n2=2 uses dimension 3 but the vector "
                                  "unit has max_dims 2"));
  p.instrs[1].set("n2", 1);
  EXPECT_EQ(errorOf(*t, p), "<no error>");
}

// mac reads its destination: an unordered load into the accumulator it updates is a RAW on the
// old values (reported at the dst read), where an op that only writes its destination (mul)
// races as WAW. With the token the program is clean.
TEST(SimHazards, MacDestinationIsReadAsWellAsWritten) {
  auto t = makeTarget();
  const int mac = t->vector.opCode(isa::VecOp::Mac), mul = t->vector.opCode(isa::VecOp::Mul);
  ASSERT_GE(mac, 0);
  isa::Program p;
  p.instrs.push_back(copy1d(*t, "ld", DRAM, 0, L1, 0x400, 64)); // the accumulator's old values
  p.instrs.push_back(make(*t, "vop",
                          {{"op", mac},
                           {"dst_space", L1},
                           {"dst_addr", 0x400},
                           {"dst_dtype", 1},
                           {"src1_space", L1},
                           {"src1_addr", 0x1000},
                           {"src2_space", L1},
                           {"src2_addr", 0x2000},
                           {"n0", 16},
                           {"dst_s0", 1},
                           {"src1_s0", 1},
                           {"src2_s0", 1}}));
  std::string m = errorOf(*t, p);
  EXPECT_TRUE(has(m, "hazard: RAW (read-after-write) race on level 'l1' bytes [0x400, 0x440): "
                     "instruction #0 (ld) on engine 'load' writes its destination and "
                     "instruction #1 (vop) on engine 'vector' reads its dst"))
      << m;
  p.instrs[1].set("op", mul);
  EXPECT_TRUE(has(errorOf(*t, p), "hazard: WAW (write-after-write) race on level 'l1' bytes "
                                  "[0x400, 0x440)"));
  p.instrs[1].set("op", mac);
  p.instrs[0].set("push", 1 << VECTOR);
  p.instrs[1].set("pop", 1 << LOAD);
  EXPECT_EQ(errorOf(*t, p), "<no error>");
}

TEST(SimHazards, StridedOverlapIsExact) {
  // Rows of 4 bytes every 16 bytes vs one 4-byte block: the edges of a row at N-1 and N.
  const int64_t nA[3] = {4, 4, 1}, sA[3] = {1, 16, 0};
  const int64_t nB[3] = {4, 1, 1}, sB[3] = {1, 0, 0};
  EXPECT_TRUE(sim::stridedOverlap(0, 1, nA, sA, 16 + 3, 1, nB, sB));  // touches byte 19
  EXPECT_FALSE(sim::stridedOverlap(0, 1, nA, sA, 16 + 4, 1, nB, sB)); // bytes 20..23: a hole
  EXPECT_FALSE(sim::stridedOverlap(0, 1, nA, sA, 64, 1, nB, sB));     // past the last row
  EXPECT_TRUE(sim::stridedOverlap(0, 1, nA, sA, 48, 1, nB, sB));      // the last row, 48..51
  EXPECT_FALSE(sim::stridedOverlap(0, 1, nA, sA, 52, 1, nB, sB));     // just after it
}

} // namespace

// The checker drops records every engine has passed (Hazards.h); a long run makes it sweep many
// times and reuse the storage of dropped records. Three engines: each round, load fills L0A and
// tells tensor, tensor multiplies (a new accumulator word each round) and tells load and vector,
// vector pops and rewrites its own scratch. Every load and tensor record is eventually seen by
// all three engines and dropped; vector never pushes, so its first write (instruction #0) is
// never seen by the others and must survive every sweep: the final load, which writes into it
// without a token, is a race.
TEST(SimHazards, RacesWithOldRecordsSurviveRecordSweeps) {
  auto t = makeTarget();
  t->engines.resize(3); // load, tensor, vector: every engine takes part (idle engines see nothing)
  isa::Program p;
  p.instrs.push_back(vcopy(*t, 0x1000, 0, 32)); // #0, vector: writes L1 [0, 64)
  const int rounds = 600;
  for (int i = 0; i < rounds; ++i) {
    p.instrs.push_back(copy1d(*t, "ld", DRAM, 0, L0A, 0, 32, i > 0 ? 1 << TENSOR : 0, 1 << TENSOR));
    p.instrs.push_back(make(*t, "mm",
                            {{"a_addr", 0},
                             {"b_addr", 0},
                             {"c_addr", 4 * i},
                             {"m", 1},
                             {"k", 16},
                             {"n", 1},
                             {"pop", 1 << LOAD},
                             {"push", 1 << LOAD | 1 << VECTOR}}));
    p.instrs.push_back(vcopy(*t, 0x880, 0x800, 16, 1, 1, 1 << TENSOR));
  }
  EXPECT_EQ(errorOf(*t, p), "<no error>");
  p.instrs.push_back(copy1d(*t, "ld", DRAM, 0, L1, 16, 16)); // #1801: no token from vector
  std::string m = errorOf(*t, p);
  EXPECT_TRUE(has(m, "hazard: WAW (write-after-write) race on level 'l1' bytes [0x10, 0x20): "
                     "instruction #0 (vop) on engine 'vector' writes its dst and instruction "
                     "#1801 (ld) on engine 'load' writes its destination, and no token orders "
                     "them"))
      << m;
}
