// CompiledTest.cpp - the simulator on compiler output: a compiled conv + relu and a residual
// add pass the hazard checker, and --timing-only (SimOptions::functional = false) gives exactly
// the functional run's cycles and statistics on them.
#include "../npu/NpuTestUtil.h"

#include <gtest/gtest.h>

namespace npuc::test {
namespace {

graph::Graph convRelu(int64_t C, int64_t H, int64_t OC) {
  graph::Graph g;
  auto x = g.addValue("x", {1, C, H, H}, graph::DType::F32);
  g.inputs = {x};
  auto w = g.addConstant("w", {OC, C, 3, 3}, halves(randomData(size_t(OC * C * 9), 2)));
  auto b = g.addConstant("b", {OC}, randomData(size_t(OC), 3));
  auto y = g.addValue("y", {1, OC, H, H}, graph::DType::F32);
  auto conv = g.addNode(graph::OpKind::Conv, "conv", {x, w, b}, {y});
  g.node(conv).attrs["strides"] = std::vector<int64_t>{1, 1};
  g.node(conv).attrs["pads"] = std::vector<int64_t>{1, 1, 1, 1};
  auto r = g.addValue("r", {1, OC, H, H}, graph::DType::F32);
  g.addNode(graph::OpKind::Relu, "relu", {y}, {r});
  oneGroup(g, r);
  return g;
}

void expectSameTiming(const isa::Target &t, const npu::Segment &seg) {
  auto runWith = [&](bool functional) {
    sim::Memory mem(t, seg.dramBytes);
    std::copy(seg.constImage.begin(), seg.constImage.end(), mem.dram().begin() + seg.constBase);
    sim::SimOptions o;
    o.functional = functional;
    o.trace = true;
    return sim::run(t, seg.program, mem, o); // hazard checking on (the default)
  };
  sim::SimStats f = runWith(true), q = runWith(false);
  EXPECT_GT(f.totalCycles, 0);
  EXPECT_EQ(f.totalCycles, q.totalCycles);
  EXPECT_EQ(f.bankConflictStallCycles, q.bankConflictStallCycles);
  ASSERT_EQ(f.engines.size(), q.engines.size());
  int64_t path = f.criticalPathOtherCycles;
  for (size_t e = 0; e < f.engines.size(); ++e) {
    EXPECT_EQ(f.engines[e].busyCycles, q.engines[e].busyCycles) << e;
    EXPECT_EQ(f.engines[e].tokenWaitCycles, q.engines[e].tokenWaitCycles) << e;
    EXPECT_EQ(f.engines[e].busyCycles + f.engines[e].tokenWaitCycles + f.engines[e].idleCycles,
              f.totalCycles)
        << e;
    path += f.engines[e].criticalPathCycles;
  }
  EXPECT_EQ(path, f.totalCycles); // the critical path's composition covers the whole run
  ASSERT_EQ(f.trace.size(), q.trace.size());
  for (size_t i = 0; i < f.trace.size(); ++i) {
    EXPECT_EQ(f.trace[i].start, q.trace[i].start) << i;
    EXPECT_EQ(f.trace[i].end, q.trace[i].end) << i;
  }
}

TEST(SimCompiled, ConvReluPassesCheckerAndTimingOnlyMatches) {
  for (const char *target : {"npu-base.yaml", "npu-tiny.yaml"}) {
    isa::Target t = isa::loadTarget(configPath(target));
    graph::Graph g = convRelu(16, 12, 32);
    npu::Segment seg = npu::compileSegment(g, {0}, t, {}).value();
    SCOPED_TRACE(target);
    expectSameTiming(t, seg);
  }
}

} // namespace
} // namespace npuc::test
