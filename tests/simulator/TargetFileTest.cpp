// TargetFileTest.cpp - the simulator on the bundled configs/npu-base.yaml, with a program written
// in assembly: load A and B, feed them to L0, matmul, relu epilogue to fp16, store.
//
// Data is checked against a naive fp16 reference; every cycle count is derived by hand from the
// YAML's parameters and docs/SIMULATOR.md (see the comments at the expectations).
#include "isa/Program.h"
#include "isa/Target.h"
#include "simulator/Simulator.h"
#include "support/Half.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

using namespace npuc;

namespace {

const char *kProgram = R"(
# engines: load=0 feed=1 tensor=2 vector=3 store=4 (token bit = engine index)
ld  push=2 src_addr=0 dst_space=l1 dst_addr=0 elem_bytes=2 n0=256 n1=1 n2=1 src_s0=1 dst_s0=1
ld  push=2 src_addr=0x1000 dst_space=l1 dst_addr=0x1000 elem_bytes=2 n0=512 n1=1 n2=1 src_s0=1 dst_s0=1
mov pop=1 src_space=l1 src_addr=0 dst_space=l0a dst_addr=0 elem_bytes=2 n0=256 n1=1 n2=1 src_s0=1 dst_s0=1
mov pop=1 push=4 src_space=l1 src_addr=0x1000 dst_space=l0b dst_addr=0 elem_bytes=2 n0=512 n1=1 n2=1 src_s0=1 dst_s0=1
mm  pop=2 push=8 a_addr=0 b_addr=0 c_addr=0 m=8 k=32 n=16
vop pop=4 push=16 op=relu dst_space=l1 dst_addr=0x4000 dst_dtype=fp16 src1_space=acc src1_addr=0 src1_dtype=fp32 n0=128 n1=1 n2=1 dst_s0=1 src1_s0=1
st  pop=8 src_space=l1 src_addr=0x4000 dst_addr=0x8000 elem_bytes=2 n0=128 n1=1 n2=1 src_s0=1 dst_s0=1
finish
)";

TEST(SimTargetFile, NpuBaseMatmulReluProgram) {
  isa::Target t = isa::loadTarget(std::string(NPUC_SOURCE_DIR) + "/configs/npu-base.yaml");
  // Run the program after an encode/decode round trip, as a compiled package would.
  isa::Program p = isa::decode(t, isa::encode(t, isa::assemble(t, kProgram, "test.s")));
  sim::Memory mem(t, 1 << 16);
  const int m = 8, k = 32, n = 16;
  std::mt19937 rng(4);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<uint16_t> a(m * k), b(k * n);
  for (auto &x : a)
    x = floatToHalf(u(rng));
  for (auto &x : b)
    x = floatToHalf(u(rng));
  std::memcpy(mem.dram().data(), a.data(), a.size() * 2);
  std::memcpy(mem.dram().data() + 0x1000, b.data(), b.size() * 2);
  sim::SimOptions opt;
  opt.trace = true;
  sim::SimStats s = sim::run(t, p, mem, opt);

  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      float acc = 0;
      for (int kk = 0; kk < k; ++kk)
        acc = acc + halfToFloat(a[i * k + kk]) * halfToFloat(b[kk * n + j]);
      uint16_t got;
      std::memcpy(&got, mem.dram().data() + 0x8000 + 2 * (i * n + j), 2);
      ASSERT_EQ(got, floatToHalf(acc > 0 ? acc : 0.0f)) << i << "," << j;
    }

  auto ev = [&](int64_t i) {
    for (const sim::TraceEvent &e : s.trace)
      if (e.index == i)
        return e;
    return sim::TraceEvent{};
  };
  // ld #0: 4 + 100 + 512 B / min(32, 16) = 136. ld #1 follows on the load engine at 136; DRAM is
  // free since 32: 1024 / 16 = 64 -> 136 + 64 + 104 = 304.
  EXPECT_EQ(ev(0).end, 136);
  EXPECT_EQ(ev(1).start, 136);
  EXPECT_EQ(ev(1).end, 304);
  // mov #2 starts at 136 with ld #1 (committed first: lower engine). It reads l1 [0, 512) =
  // one word in each of banks 0-7 over 2 + 512/64 = 10 cycles (0.1 access/cycle per bank)
  // while ld #1 writes [0x1000, 0x1400) = one word per bank over 168 cycles: far below the 2
  // ports, so no stall (docs/SIMULATOR.md, "Banks").
  EXPECT_EQ(ev(2).start, 136);
  EXPECT_EQ(ev(2).end, 136 + 10);
  EXPECT_EQ(s.bankConflictStallCycles, 0);
  // mov #3 waits for ld #1's token: 304 + 2 + 1024/64 = 322.
  EXPECT_EQ(ev(3).start, 304);
  EXPECT_EQ(ev(3).end, 322);
  // mm: fill 32 + 8 * ceil(32/16) * ceil(16/16) = 48.
  EXPECT_EQ(ev(4).start, 322);
  EXPECT_EQ(ev(4).end, 370);
  // vop: 2 + 128/16 = 10; st: 4 + 100 + 256/16 = 120; finish (vector engine): latency 1.
  EXPECT_EQ(ev(5).end, 380);
  EXPECT_EQ(ev(6).start, 380);
  EXPECT_EQ(ev(6).end, 500);
  EXPECT_EQ(ev(7).start, 380);
  EXPECT_EQ(ev(7).end, 381);
  EXPECT_EQ(s.totalCycles, 500);
  EXPECT_EQ(s.macs, m * k * n);
  EXPECT_EQ(s.dramBytesRead, 512 + 1024);
  EXPECT_EQ(s.dramBytesWritten, 256);
  EXPECT_EQ(s.engines[3].instructions, 2); // vop + finish
}

} // namespace
