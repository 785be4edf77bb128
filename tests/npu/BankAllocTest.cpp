// BankAllocTest.cpp - the bank-conflict-aware placement (npu/pipeline/BankAlloc.h): a constructed
// conflict is reduced to zero with identical outputs, and on real kernels the placement never
// makes a group slower, its reported figures being exactly those of a full simulator run.
#include "NpuTestUtil.h"

#include "npu/isel/Emit.h"
#include "npu/isel/Sync.h"
#include "npu/pipeline/BankAlloc.h"
#include "support/Error.h"
#include "support/Npy.h"

#include <algorithm>
#include <cstring>
#include <gtest/gtest.h>
#include <iostream>
#include <stdexcept>

namespace npuc::test {
namespace {

using namespace tir;

// npu-base with one port per L1 bank (instead of 2): one engine streaming one word per cycle
// through a bank then saturates it, so a second engine on that bank must stall.
isa::Target onePortL1() {
  std::string yaml = readFile(configPath("npu-base.yaml"));
  const std::string from = "alignment: 64, ports: 2}";
  size_t l1 = yaml.find("{name: l1,");
  if (l1 == std::string::npos || yaml.find(from, l1) == std::string::npos)
    throw std::runtime_error("npu-base's L1 line changed");
  yaml.replace(yaml.find(from, l1), from.size(), "alignment: 64, ports: 1}");
  return isa::parseTarget(yaml, "npu-base-1port");
}

const isa::MemoryLevel &level(const isa::Target &t, int index) {
  return t.levels.at(static_cast<size_t>(index));
}

// The constructed kernel. L1 interleaves `banks` banks of `bankWidth` bytes, so rows one bank
// period (banks * bankWidth bytes) apart all fall in one bank. Buffers A and B each hold R such
// rows of 16 fp16 (32 B, one word), so the bump allocator puts B exactly R periods after A: the
// same bank. After B has been loaded, the load engine fills A while the vector engine copies B
// into the accumulators; nothing orders the two, so they run concurrently:
//   vector: R words of bank(B) in 2 + R cycles (latency 2, 16 lanes -> one row per cycle),
//           ~1 access per cycle = the single port;
//   load:   R words of bank(A) over 4 + 100 + 2R cycles (DRAM: 32 B per row at 16 B/cycle).
// Same bank: demand 1 + R / (104 + 2R) > 1 port, so the later starter stalls. Different banks:
// no bank is asked for more than 1 access per cycle and no instruction for more than its
// duration allows (vector R words in R + 2 cycles, load R in 104 + 2R), so no stall at all.
// The results (A and the fp32 copy of B) are stored back for the differential check.
constexpr int64_t kRows = 64, kRowElems = 16;

struct Dram {
  int64_t srcA = 0, srcB = 0, outA = 0, outC = 0, bytes = 0;
};

Dram dramLayout() {
  Dram d;
  d.srcA = 0;
  d.srcB = kRows * kRowElems * 2;
  d.outA = 2 * kRows * kRowElems * 2;
  d.outC = 3 * kRows * kRowElems * 2;
  d.bytes = d.outC + kRows * kRowElems * 4;
  return d;
}

npu::Kernel conflictKernel(const npu::Hw &hw, npu::Builder &b) {
  const isa::MemoryLevel &l1 = level(*hw.t, hw.l1);
  const int64_t period = int64_t(l1.banks) * l1.bankWidth, pitch = period / 2; // fp16 elements
  npu::OnChip a{"a_l1", hw.l1, kRows * period, 1}, bb{"b_l1", hw.l1, kRows * period, 1};
  npu::OnChip c{"c_acc", hw.acc, kRows * kRowElems * 4, 1};
  NPUC_ASSERT(b.reserve(a) && b.reserve(bb) && b.reserve(c), "the test buffers fit");
  const Dram d = dramLayout();
  auto rows = [&](int level, int64_t addr, int64_t s1, isa::ElemType ty = isa::ElemType::F16) {
    npu::View v{level, imm(addr), ty};
    v.s1 = imm(s1);
    return v;
  };
  npu::Dims n{imm(kRowElems), imm(kRows), imm(1)};
  npu::Kernel k;
  k.body = seq({
      b.load(rows(hw.dram, d.srcB, kRowElems), rows(hw.l1, bb.base, pitch), n),
      b.load(rows(hw.dram, d.srcA, kRowElems), rows(hw.l1, a.base, pitch), n),
      b.vector(isa::VecOp::Copy, rows(hw.acc, c.base, kRowElems, isa::ElemType::F32),
               rows(hw.l1, bb.base, pitch), npu::View{}, n),
      b.store(rows(hw.acc, c.base, kRowElems, isa::ElemType::F32),
              rows(hw.dram, d.outC, kRowElems, isa::ElemType::F32), n),
      b.store(rows(hw.l1, a.base, pitch), rows(hw.dram, d.outA, kRowElems), n),
  });
  return k;
}

struct Outcome {
  sim::SimStats stats;
  std::vector<uint16_t> outA;
  std::vector<float> outC;
};

// Runs a kernel's program functionally (hazard checks on) with fp16 inputs A and B.
Outcome runKernel(const isa::Target &t, isa::Program p, const std::vector<uint16_t> &inA,
                  const std::vector<uint16_t> &inB) {
  npu::insertTokens(t, p);
  const Dram d = dramLayout();
  sim::Memory mem(t, d.bytes);
  std::memcpy(mem.dram().data() + d.srcA, inA.data(), inA.size() * 2);
  std::memcpy(mem.dram().data() + d.srcB, inB.data(), inB.size() * 2);
  Outcome o;
  o.stats = sim::run(t, p, mem);
  o.outA.resize(inA.size());
  o.outC.resize(inB.size());
  std::memcpy(o.outA.data(), mem.dram().data() + d.outA, o.outA.size() * 2);
  std::memcpy(o.outC.data(), mem.dram().data() + d.outC, o.outC.size() * 4);
  return o;
}

TEST(BankAlloc, ReducesAConstructedConflictToZero) {
  isa::Target t = onePortL1();
  npu::Hw hw;
  ASSERT_EQ(npu::Hw::derive(t, hw), "");
  const isa::MemoryLevel &l1 = level(t, hw.l1);
  const int64_t period = int64_t(l1.banks) * l1.bankWidth;
  npu::LowerFn lower = [&](npu::Builder &b) { return conflictKernel(hw, b); };

  npu::PlacedKernel pk;
  npu::Builder b0(hw);
  pk.kernel = lower(b0);
  // The premise: the bump allocator put A and B at the same offset within a bank period.
  ASSERT_EQ(b0.buffers().at(0).name, "a_l1");
  ASSERT_EQ((b0.buffers().at(1).base - b0.buffers().at(0).base) % period, 0);
  pk.program = npu::emitInstructions(t, pk.kernel.body, "conflict").value();
  const isa::Program before = pk.program;

  sim::Memory sizes(t, dramLayout().bytes);
  npu::BankReport r = npu::placeForBanks(hw, lower, "conflict", sizes, pk);
  ASSERT_TRUE(r.ran);
  EXPECT_GT(r.stallsBefore, 0);
  EXPECT_EQ(r.stallsAfter, 0) << r.change;
  EXPECT_LE(r.cyclesAfter, r.cyclesBefore);
  EXPECT_GE(r.candidates, 1);
  EXPECT_LE(r.candidates, npu::kMaxCandidates);
  EXPECT_NE(r.change.find("l1"), std::string::npos) << r.change;

  // Full functional runs (hazard checks on) agree with the search's timing-only figures, and
  // both placements compute exactly the reference: A copied, B widened to fp32.
  std::vector<uint16_t> inA(kRows * kRowElems), inB(kRows * kRowElems);
  std::vector<float> ref = randomData(inA.size() * 2, 11);
  for (size_t i = 0; i < inA.size(); ++i) {
    inA[i] = floatToHalf(ref[i]);
    inB[i] = floatToHalf(ref[inA.size() + i]);
  }
  Outcome o0 = runKernel(t, before, inA, inB), o1 = runKernel(t, pk.program, inA, inB);
  EXPECT_EQ(o0.stats.bankConflictStallCycles, r.stallsBefore);
  EXPECT_EQ(o0.stats.levels.at(size_t(hw.l1)).bankConflictStallCycles, r.stallsBefore);
  EXPECT_EQ(o1.stats.bankConflictStallCycles, 0);
  EXPECT_EQ(o0.stats.totalCycles, r.cyclesBefore);
  EXPECT_EQ(o1.stats.totalCycles, r.cyclesAfter);
  for (size_t i = 0; i < inA.size(); ++i) {
    ASSERT_EQ(o0.outA[i], inA[i]) << i;
    ASSERT_EQ(o1.outA[i], inA[i]) << i;
    ASSERT_EQ(o0.outC[i], halfToFloat(inB[i])) << i;
    ASSERT_EQ(o1.outC[i], halfToFloat(inB[i])) << i;
  }
}

// On the default target (2 ports) the same kernel has no conflict (1 + R / (104 + 2R) accesses
// per cycle <= 2 ports): the search simulates once and keeps the default.
TEST(BankAlloc, KeepsTheDefaultWithoutStalls) {
  isa::Target t = isa::loadTarget(configPath("npu-base.yaml"));
  npu::Hw hw;
  ASSERT_EQ(npu::Hw::derive(t, hw), "");
  npu::LowerFn lower = [&](npu::Builder &b) { return conflictKernel(hw, b); };
  npu::PlacedKernel pk;
  npu::Builder b0(hw);
  pk.kernel = lower(b0);
  pk.program = npu::emitInstructions(t, pk.kernel.body, "conflict").value();
  const size_t n = pk.program.instrs.size();
  sim::Memory sizes(t, dramLayout().bytes);
  npu::BankReport r = npu::placeForBanks(hw, lower, "conflict", sizes, pk);
  EXPECT_TRUE(r.ran);
  EXPECT_EQ(r.stallsBefore, 0);
  EXPECT_EQ(r.candidates, 0);
  EXPECT_EQ(r.change, "");
  EXPECT_EQ(pk.program.instrs.size(), n);
}

// Emission drops a box's unit innermost dimension (npu/isel/Emit.cpp). A depthwise epilogue is one
// channel wide: the vector op reads P fp32 accumulators as P rows of one element, and the bank
// model charges a word per row. On npu-base's accumulators (4 banks of 64 B, 2 ports) the
// P = 784 elements fill 49 words, 13 of them in bank 0, each read by 16 rows: 208 accesses,
// ceil(208 / 2) = 104 cycles, against a duration of 2 + 784 / 16 = 51: a self stall of 53 (the
// L1 side, 64 accesses on its busiest bank, needs only 32). With the dimension dropped, the same
// elements are one contiguous run: 13 accesses on bank 0, 7 cycles, no stall. The data is the
// same (checked against the reference relu); only the field layout changes.
TEST(BankAlloc, EmissionDropsAUnitInnermostDimension) {
  isa::Target t = isa::loadTarget(configPath("npu-base.yaml"));
  npu::Hw hw;
  ASSERT_EQ(npu::Hw::derive(t, hw), "");
  const int64_t P = 784;
  npu::Builder b(hw);
  auto rows = [&](int level, isa::ElemType ty) {
    npu::View v{level, imm(0), ty};
    v.s1 = imm(1);
    return v;
  };
  npu::Dims n{imm(1), imm(P), imm(1)};
  Stmt body = seq({b.load(rows(hw.dram, isa::ElemType::F32), rows(hw.acc, isa::ElemType::F32), n),
                   b.vector(isa::VecOp::Relu, rows(hw.l1, isa::ElemType::F16),
                            rows(hw.acc, isa::ElemType::F32), npu::View{}, n),
                   b.store(rows(hw.l1, isa::ElemType::F16), rows(hw.dram, isa::ElemType::F16), n)});
  isa::Program dropped = npu::emitInstructions(t, body, "relu").value();
  ASSERT_EQ(dropped.instrs.size(), 3u);
  const isa::Instr &vop = dropped.instrs[1];
  EXPECT_EQ(vop.get("n0"), P);
  EXPECT_EQ(vop.get("n1"), 1);
  EXPECT_EQ(vop.get("src1_s0"), 1);
  EXPECT_EQ(vop.get("dst_s0"), 1);
  // The same instructions as the kernel wrote them: P rows of one element.
  isa::Program asWritten = dropped;
  for (isa::Instr &in : asWritten.instrs) {
    in.set("n0", 1);
    in.set("n1", P);
    for (const char *o : {"src", "dst", "src1"})
      if (in.desc->field(std::string(o) + "_s1")) {
        in.set(std::string(o) + "_s1", 1);
        in.set(std::string(o) + "_s0", 1);
      }
  }
  std::vector<float> x = randomData(size_t(P), 5, -2.f, 2.f);
  auto run = [&](isa::Program p, sim::SimStats &st) {
    npu::insertTokens(t, p);
    sim::Memory mem(t, P * 4 + P * 2);
    std::memcpy(mem.dram().data(), x.data(), size_t(P) * 4);
    st = sim::run(t, p, mem);
    std::vector<uint16_t> y(static_cast<size_t>(P));
    std::memcpy(y.data(), mem.dram().data(), size_t(P) * 2); // the store wrote over x
    return y;
  };
  sim::SimStats s0, s1;
  std::vector<uint16_t> y0 = run(asWritten, s0), y1 = run(dropped, s1);
  EXPECT_EQ(s0.levels.at(size_t(hw.acc)).bankConflictStallCycles, 104 - 51);
  EXPECT_EQ(s1.bankConflictStallCycles, 0);
  for (int64_t i = 0; i < P; ++i) {
    ASSERT_EQ(y1[size_t(i)], floatToHalf(std::max(x[size_t(i)], 0.f))) << i;
    ASSERT_EQ(y0[size_t(i)], y1[size_t(i)]) << i;
  }
}

// Real kernels, compiled with and without the placement: per one-group segment the program is
// the group's instructions plus tokens, so the search's figures must be exactly those of full
// simulator runs; the chosen placement is never slower; the outputs are bit-identical.
struct RealCase {
  const char *what;
  // OC: > 0 conv, 0 max pool, -1 global average pool, -2 relu, -3 channel shuffle (ShuffleNet's
  // Reshape-Transpose-Reshape, which the loop-nest kernel runs as unary vector copies)
  int64_t C, H, W, OC, K, S, G;
  bool onePort;
};

class BankAllocReal : public ::testing::TestWithParam<RealCase> {};

TEST_P(BankAllocReal, NeverSlowerAndSameOutputs) {
  const RealCase c = GetParam();
  isa::Target t = c.onePort ? onePortL1() : isa::loadTarget(configPath("npu-base.yaml"));
  graph::Graph g;
  auto x = g.addValue("x", {1, c.C, c.H, c.W}, graph::DType::F32);
  g.inputs = {x};
  int64_t OH = (c.H + 2 - c.K) / c.S + 1, OW = (c.W + 2 - c.K) / c.S + 1;
  graph::ValueId y;
  if (c.OC > 0) {
    auto w = g.addConstant("w", {c.OC, c.C / c.G, c.K, c.K},
                           halves(randomData(size_t(c.OC * (c.C / c.G) * c.K * c.K), 2)));
    y = g.addValue("y", {1, c.OC, OH, OW}, graph::DType::F32);
    auto n = g.addNode(graph::OpKind::Conv, "conv", {x, w}, {y});
    g.node(n).attrs["strides"] = std::vector<int64_t>{c.S, c.S};
    g.node(n).attrs["pads"] = std::vector<int64_t>{1, 1, 1, 1};
    g.node(n).attrs["group"] = c.G;
  } else if (c.OC == -1) {
    y = g.addValue("y", {1, c.C, 1, 1}, graph::DType::F32);
    g.addNode(graph::OpKind::GlobalAveragePool, "gap", {x}, {y});
  } else if (c.OC == -2) {
    y = g.addValue("y", {1, c.C, c.H, c.W}, graph::DType::F32);
    g.addNode(graph::OpKind::Relu, "relu", {x}, {y});
  } else if (c.OC == -3) {
    auto s5 = g.addConstantI64("s5", {5}, {1, 2, c.C / 2, c.H, c.W});
    auto s4 = g.addConstantI64("s4", {4}, {1, c.C, c.H, c.W});
    auto a = g.addValue("a", {1, 2, c.C / 2, c.H, c.W}, graph::DType::F32);
    auto b = g.addValue("b", {1, c.C / 2, 2, c.H, c.W}, graph::DType::F32);
    y = g.addValue("y", {1, c.C, c.H, c.W}, graph::DType::F32);
    g.addNode(graph::OpKind::Reshape, "split_groups", {x, s5}, {a});
    auto tr = g.addNode(graph::OpKind::Transpose, "shuffle", {a}, {b});
    g.node(tr).attrs["perm"] = std::vector<int64_t>{0, 2, 1, 3, 4};
    g.addNode(graph::OpKind::Reshape, "merge_groups", {b, s4}, {y});
  } else {
    y = g.addValue("y", {1, c.C, OH, OW}, graph::DType::F32);
    auto n = g.addNode(graph::OpKind::MaxPool, "pool", {x}, {y});
    g.node(n).attrs["kernel_shape"] = std::vector<int64_t>{c.K, c.K};
    g.node(n).attrs["strides"] = std::vector<int64_t>{c.S, c.S};
    g.node(n).attrs["pads"] = std::vector<int64_t>{1, 1, 1, 1};
  }
  oneGroup(g, y);
  HostTensor in({1, c.C, c.H, c.W}, halves(randomData(size_t(c.C * c.H * c.W), 1)));
  npu::CompileOptions off;
  off.bankAware = false;
  NpuRun r0 = compileAndRun(g, t, {in}, off), r1 = compileAndRun(g, t, {in});
  const npu::BankReport &b = r1.seg.groupInfo.at(0).bank;
  EXPECT_FALSE(r0.seg.groupInfo.at(0).bank.ran);
  ASSERT_TRUE(b.ran);
  EXPECT_EQ(b.cyclesBefore, r0.stats.totalCycles);
  EXPECT_EQ(b.stallsBefore, r0.stats.bankConflictStallCycles);
  EXPECT_EQ(b.cyclesAfter, r1.stats.totalCycles);
  EXPECT_EQ(b.stallsAfter, r1.stats.bankConflictStallCycles);
  EXPECT_LE(r1.stats.totalCycles, r0.stats.totalCycles);
  EXPECT_LE(b.candidates, npu::kMaxCandidates);
  if (b.stallsBefore * npu::kMinStallShare < b.cyclesBefore) {
    EXPECT_EQ(b.candidates, 0) << "stalls too small to pay for a search";
  }
  EXPECT_EQ(b.change.empty(), b.cyclesAfter == b.cyclesBefore && b.stallsAfter == b.stallsBefore);
  // Every buffer moved regardless of stalls (CompileOptions::bankAlwaysMove): the kernel
  // re-lowered at the new addresses emits exactly the relocated program (asserted inside), the
  // hazard checker finds no overlap, and the data is bit for bit the same.
  npu::CompileOptions always;
  always.bankAlwaysMove = true;
  NpuRun r2 = compileAndRun(g, t, {in}, always);
  EXPECT_NE(r2.seg.groupInfo.at(0).bank.change, "");
  ASSERT_EQ(r0.out.data.size(), r1.out.data.size());
  ASSERT_EQ(r0.out.data.size(), r2.out.data.size());
  for (size_t i = 0; i < r0.out.data.size(); ++i) {
    ASSERT_EQ(r0.out.data[i], r1.out.data[i]) << i;
    ASSERT_EQ(r0.out.data[i], r2.out.data[i]) << i;
  }
  std::cout << c.what << ": " << b.stallsBefore << " stall cycles of " << b.cyclesBefore << " -> "
            << b.stallsAfter << " of " << b.cyclesAfter << " (" << b.candidates << " tried) "
            << b.change << "\n";
}

INSTANTIATE_TEST_SUITE_P(
    Kernels, BankAllocReal,
    ::testing::Values(RealCase{"depthwise", 32, 28, 28, 32, 3, 1, 32, false},
                      RealCase{"depthwise_1port", 32, 28, 28, 32, 3, 1, 32, true},
                      RealCase{"depthwise_s2_1port", 64, 14, 14, 64, 3, 2, 64, true},
                      RealCase{"conv3x3_1port", 32, 14, 14, 64, 3, 1, 1, true},
                      RealCase{"maxpool_1port", 32, 17, 17, 0, 3, 2, 1, true},
                      RealCase{"global_avg_pool", 48, 7, 7, -1, 1, 1, 1, false},
                      RealCase{"relu", 24, 9, 9, -2, 1, 1, 1, true},
                      RealCase{"channel_shuffle", 16, 6, 6, -3, 1, 1, 1, false}),
    [](const ::testing::TestParamInfo<RealCase> &i) { return std::string(i.param.what); });

} // namespace
} // namespace npuc::test
