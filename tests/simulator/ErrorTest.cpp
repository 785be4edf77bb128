// ErrorTest.cpp - diagnostics: deadlocks, out-of-bounds accesses and malformed instructions are
// npuc::Error messages naming the instruction (index and mnemonic) and what is wrong.
#include "SimTestUtil.h"

#include <gtest/gtest.h>

using namespace simtest;
using namespace npuc;

namespace {

std::string errorOf(const isa::Target &t, const isa::Program &p) {
  sim::Memory mem(t, 4096);
  try {
    sim::run(t, p, mem);
  } catch (const Error &e) {
    return e.what();
  }
  return "<no error>";
}

bool has(const std::string &s, const std::string &needle) {
  return s.find(needle) != std::string::npos;
}

TEST(SimErrors, DeadlockNamesEveryBlockedEngine) {
  auto t = makeTarget();
  isa::Program p;
  // tensor waits for vector and vector waits for tensor: neither can ever start.
  p.instrs.push_back(
      make(*t, "mm", {{"m", 1}, {"k", 1}, {"n", 1}, {"pop", 1 << VECTOR}, {"push", 1 << VECTOR}}));
  p.instrs.push_back(make(*t, "vop",
                          {{"op", 0},
                           {"dst_space", L1},
                           {"src1_space", L1},
                           {"n0", 4},
                           {"pop", 1 << TENSOR},
                           {"push", 1 << TENSOR}}));
  p.instrs.push_back(copy1d(*t, "ld", DRAM, 0, L1, 0, 64)); // independent, completes
  std::string m = errorOf(*t, p);
  EXPECT_TRUE(has(m, "deadlock")) << m;
  EXPECT_TRUE(has(m, "engine 'tensor' waits at instruction #0 (mm) for a token from engine "
                     "'vector'"))
      << m;
  EXPECT_TRUE(has(m, "engine 'vector' waits at instruction #1 (vop) for a token from engine "
                     "'tensor'"))
      << m;
  EXPECT_FALSE(has(m, "'load'")) << m;
}

TEST(SimErrors, PopWithoutAnyProducerDeadlocks) {
  auto t = makeTarget();
  isa::Program p;
  p.instrs.push_back(copy1d(*t, "st", L1, 0, DRAM, 0, 64, 1 << VECTOR));
  std::string m = errorOf(*t, p);
  EXPECT_TRUE(has(m, "engine 'store' waits at instruction #0 (st) for a token from engine "
                     "'vector'"))
      << m;
}

TEST(SimErrors, OutOfBoundsAccessNamesInstructionLevelAndRange) {
  auto t = makeTarget(); // l1 is 65536 bytes
  isa::Program p;
  p.instrs.push_back(copy1d(*t, "ld", DRAM, 0, L1, 0, 64));
  p.instrs.push_back(copy1d(*t, "ld", DRAM, 0, L1, 65536 - 32, 64));
  std::string m = errorOf(*t, p);
  EXPECT_TRUE(has(m, "instruction #1 (ld): destination accesses bytes [0xffe0, 0x10020) of "
                     "level 'l1' outside its 65536 bytes"))
      << m;
  isa::Program q; // DRAM is sized by the Memory (4096 bytes here)
  q.instrs.push_back(copy1d(*t, "st", L1, 0, DRAM, 4000, 200));
  EXPECT_TRUE(has(errorOf(*t, q), "instruction #0 (st): destination accesses bytes [0xfa0, "
                                  "0x1068) of level 'dram'"));
  isa::Program r; // negative strides reaching below address 0
  r.instrs.push_back(make(*t, "vop",
                          {{"op", 0},
                           {"dst_space", L1},
                           {"dst_addr", 8},
                           {"dst_dtype", 1},
                           {"src1_space", L1},
                           {"src1_dtype", 1},
                           {"n0", 4},
                           {"dst_s0", -1},
                           {"src1_s0", 1}}));
  EXPECT_TRUE(has(errorOf(*t, r), "instruction #0 (vop): dst accesses bytes [-0x4, 0xc)"))
      << errorOf(*t, r);
  isa::Program mm; // matmul operand A beyond l0a (16 KiB): 64 x 200 fp16 = 25600 bytes
  mm.instrs.push_back(make(*t, "mm", {{"m", 64}, {"k", 200}, {"n", 1}}));
  EXPECT_TRUE(has(errorOf(*t, mm), "instruction #0 (mm): operand A accesses bytes [0x0, "
                                   "0x6400) of level 'l0a'"));
}

TEST(SimErrors, MalformedInstructionsAreRejected) {
  auto t = makeTarget();
  auto one = [&](isa::Instr in) {
    isa::Program p;
    p.instrs.push_back(in);
    return errorOf(*t, p);
  };
  EXPECT_TRUE(has(one(make(*t, "vop", {{"op", 16}, {"n0", 1}})),
                  "instruction #0 (vop): op=16 is not one of the vector unit's 16 ops"));
  EXPECT_TRUE(has(one(make(*t, "vop", {{"op", 0}, {"src1_space", L1}, {"dst_space", L0A}})),
                  "dst_space names level 'l0a', which the vector unit cannot access"));
  EXPECT_TRUE(has(
      one(make(*t, "vop", {{"op", 0}, {"src1_space", L1}, {"dst_space", L1}, {"dst_dtype", 7}})),
      "dst_dtype=7 is not a known dtype code"));
  EXPECT_TRUE(has(one(copy1d(*t, "ld", 9, 0, L1, 0, 4)),
                  "instruction #0 (ld): src_space=9 is not a memory level"));
  EXPECT_TRUE(has(one(copy1d(*t, "ld", DRAM, 0, L1, 0, 4, 0, 1 << 5)),
                  "instruction #0 (ld): push=0x20 names an engine beyond the target's 5"));
  EXPECT_TRUE(
      has(one(make(*t, "ld", {{"elem_bytes", 2}, {"n0", 2}, {"pad0_lo", 2}, {"pad0_hi", 1}})),
          "pad0_lo+pad0_hi = 3 exceeds n0=2"));
  EXPECT_TRUE(has(one(make(*t, "mm", {{"m", -1}})), "instruction #0 (mm): m=-1 must not be"));
  isa::Program p;
  p.instrs.push_back(make(*t, "fin", {}));
  p.instrs.push_back(copy1d(*t, "ld", DRAM, 0, L1, 0, 4));
  EXPECT_TRUE(has(errorOf(*t, p), "instruction #1 (ld): follows the program's finish"));
}

} // namespace

namespace {

TEST(SimErrors, FunctionalWorkBudgetIsCheckedBeforeRunning) {
  auto t = makeTarget();
  // A 4 x 4 x 4 copy onto itself (strides 0: in bounds) apart from a 16-element load: 64 + 16
  // element operations.
  isa::Program p;
  p.instrs.push_back(copy1d(*t, "ld", DRAM, 0, L1, 0, 16));
  p.instrs.push_back(make(*t, "vop",
                          {{"op", 0},
                           {"dst_space", L1},
                           {"dst_addr", 256},
                           {"src1_space", L1},
                           {"src1_addr", 256},
                           {"n0", 4},
                           {"n1", 4},
                           {"n2", 4}}));
  sim::Memory mem(*t, 4096);
  sim::SimOptions opt;
  opt.maxWork = 79;
  try {
    sim::run(*t, p, mem, opt);
    ADD_FAILURE() << "79 element operations allowed, 80 needed: expected an error";
  } catch (const Error &e) {
    const std::string m = e.what();
    EXPECT_TRUE(has(m, "the functional simulation needs 80 element operations, over its budget "
                       "of 79; the largest is instruction 1 (vop) with 64"))
        << m;
    EXPECT_TRUE(has(m, "--max-work")) << m;
  }
  opt.maxWork = 80;
  EXPECT_NO_THROW(sim::run(*t, p, mem, opt));
  // Timing-only runs do no per-element work and are not limited.
  opt.maxWork = 1;
  opt.functional = false;
  EXPECT_NO_THROW(sim::run(*t, p, mem, opt));
}

} // namespace
