// ScheduleTest.cpp - the CPU convolution schedule (cpu_fallback/Schedule.h) on geometries that
// exercise each of its cases: a partial output-channel block, stride, dilation, asymmetric and no
// padding, 1x1 kernels, no bias, batch > 1, and a fused epilogue (Add + Relu) after the conv.
// Each group is lowered with the schedule, JIT-compiled and run with 1 and 3 threads, and
// compared with the graph's fp32 reference executor (an independent naive implementation);
// tolerance 1e-5 relative to the output scale plus 1e-5 absolute (summation order differs).
#include "cpu_fallback/Schedule.h"
#include "cpu_fallback/Jit.h"
#include "cpu_fallback/Lower.h"
#include "graph/Reference.h"
#include "lowering/LowerOps.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace npuc;
using graph::Graph;
using graph::ValueId;

namespace {

std::vector<float> randomData(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> v(size_t(n), 0.0f);
  for (float &x : v)
    x = d(rng);
  return v;
}

struct ConvCase {
  int64_t n, c, h, w, m, k, stride, dil;
  std::vector<int64_t> pads; // top, left, bottom, right
  bool bias, epilogue;
  int64_t group = 1; // depthwise when == c == m
};

int64_t outDim(int64_t in, int64_t k, int64_t s, int64_t d, int64_t p0, int64_t p1) {
  return (in + p0 + p1 - d * (k - 1) - 1) / s + 1;
}

void runCase(const ConvCase &cc) {
  Graph g;
  g.name = "conv";
  ValueId x = g.addValue("x", {cc.n, cc.c, cc.h, cc.w}, graph::DType::F32);
  g.inputs.push_back(x);
  const int64_t cg = cc.c / cc.group;
  ValueId w = g.addConstant("w", {cc.m, cg, cc.k, cc.k}, randomData(cc.m * cg * cc.k * cc.k, 2));
  std::vector<ValueId> ins{x, w};
  if (cc.bias)
    ins.push_back(g.addConstant("b", {cc.m}, randomData(cc.m, 3)));
  int64_t oh = outDim(cc.h, cc.k, cc.stride, cc.dil, cc.pads[0], cc.pads[2]);
  int64_t ow = outDim(cc.w, cc.k, cc.stride, cc.dil, cc.pads[1], cc.pads[3]);
  Shape os{cc.n, cc.m, oh, ow};
  ValueId y = g.addValue("y", os, graph::DType::F32);
  graph::NodeId conv = g.addNode(graph::OpKind::Conv, "conv", ins, {y});
  g.node(conv).attrs = {{"strides", std::vector<int64_t>{cc.stride, cc.stride}},
                        {"dilations", std::vector<int64_t>{cc.dil, cc.dil}},
                        {"pads", cc.pads},
                        {"kernel_shape", std::vector<int64_t>{cc.k, cc.k}},
                        {"group", cc.group}};
  ValueId out = y;
  if (cc.epilogue) {
    ValueId res = g.addValue("res", os, graph::DType::F32);
    g.inputs.push_back(res);
    ValueId s = g.addValue("s", os, graph::DType::F32);
    g.addNode(graph::OpKind::Add, "add", {y, res}, {s});
    out = g.addValue("r", os, graph::DType::F32);
    g.addNode(graph::OpKind::Relu, "relu", {s}, {out});
  }
  g.outputs.push_back(out);

  graph::FusedGroup grp;
  grp.id = 0;
  grp.name = "conv";
  grp.nodes = g.topoOrder();
  grp.anchor = conv;
  grp.inputs = g.inputs;
  grp.outputs = g.outputs;
  grp.placement = graph::Placement::Cpu;

  // The schedule applies (not silently left naive).
  {
    std::vector<ValueId> params;
    tir::PrimFunc f = tir::lowerGroup(g, grp, &params);
    ASSERT_TRUE(cpu::scheduleForCpu(g, grp, params, f));
  }
  std::map<ValueId, HostTensor> inputs;
  unsigned seed = 10;
  for (ValueId v : g.inputs) {
    HostTensor t(g.value(v).shape);
    t.data = randomData(numElements(t.shape), seed++);
    inputs[v] = t;
  }
  HostTensor ref = graph::runReference(g, inputs).at(out);
  double scale = 0;
  for (float v : ref.data)
    scale = std::max(scale, double(std::fabs(v)));
  // Weights packed by the kernel itself (JIT) and ahead of time (AOT's parameter file).
  for (bool prepack : {false, true}) {
    cpu::CpuKernel k = cpu::lowerGroupForCpu(g, grp, prepack);
    // The direct conv takes packed weights; depthwise reads OIHW as is.
    ASSERT_EQ(k.packed.size(), prepack && cc.group == 1 ? 1u : 0u);
    cpu::Jit jit;
    jit.add({k.func});
    cpu::Jit::Fn fn = jit.lookup(k.func.name);
    std::vector<std::vector<float>> consts(k.params.size());
    std::vector<void *> args;
    for (size_t i = 0; i < k.params.size(); ++i) {
      ValueId v = k.params[i];
      if (!g.value(v).isConstant())
        continue;
      consts[i] = graph::constantTensor(g.value(v)).data;
      for (const cpu::PackedParam &p : k.packed)
        if (p.param == i)
          consts[i] = p.pack(consts[i]);
    }
    for (int threads : {1, 3}) {
      cpu::Jit::setThreads(threads);
      HostTensor got(os);
      args.clear();
      for (size_t i = 0; i < k.params.size(); ++i) {
        ValueId v = k.params[i];
        args.push_back(v == out          ? got.data.data()
                       : inputs.count(v) ? inputs[v].data.data()
                                         : consts[i].data());
      }
      fn(args.data());
      double worst = 0;
      for (size_t i = 0; i < ref.data.size(); ++i)
        worst = std::max(worst, double(std::fabs(got.data[i] - ref.data[i])));
      EXPECT_LE(worst, 1e-5 * scale + 1e-5) << "threads=" << threads << " prepack=" << prepack;
    }
  }
  cpu::Jit::setThreads(1);
}

TEST(ConvSchedule, PaddedPartialChannelBlockWithEpilogue) {
  runCase({1, 5, 9, 11, 10, 3, 1, 1, {1, 1, 1, 1}, true, true});
}
TEST(ConvSchedule, StrideTwoAsymmetricPadsNoBias) {
  runCase({1, 3, 12, 13, 16, 3, 2, 1, {0, 1, 2, 0}, false, false});
}
TEST(ConvSchedule, DilatedBatchOfTwo) {
  runCase({2, 4, 10, 10, 8, 3, 1, 2, {2, 2, 2, 2}, true, false});
}
TEST(ConvSchedule, PointwiseUnpadded) {
  runCase({1, 7, 6, 5, 9, 1, 1, 1, {0, 0, 0, 0}, true, true});
}
TEST(ConvSchedule, PointwiseStrideTwoRaggedChannelsAndPixels) {
  // 1x1 stride 2, 20 output channels (a two-vector tile, ragged with AVX-512), a 6-wide row,
  // residual add + ReLU.
  runCase({1, 7, 13, 11, 20, 1, 2, 1, {0, 0, 0, 0}, true, true});
}
TEST(ConvSchedule, TwoVectorBlocksRaggedWithRemainderTile) {
  // 40 output channels (two-vector tiles, the last one partial) and a 23-wide row (no divisor
  // in [5, 8]: full tiles plus a remainder tile).
  runCase({1, 6, 5, 23, 40, 3, 1, 1, {1, 1, 1, 1}, true, true});
}
TEST(ConvSchedule, DepthwiseRaggedRowWithEpilogue) {
  // 20 channels, a 21-wide row (one full vector plus a remainder with AVX-512 or AVX).
  runCase({1, 20, 9, 21, 20, 3, 1, 1, {1, 1, 1, 1}, true, true, 20});
}
TEST(ConvSchedule, DepthwiseStrideTwoDilatedBatchOfTwo) {
  runCase({2, 12, 17, 19, 12, 3, 2, 2, {2, 1, 2, 0}, false, false, 12});
}
TEST(ConvSchedule, LargeStemLike) {
  // A 7x7 stride-2 stem on a 40x40 input: more channel blocks than threads.
  runCase({1, 3, 40, 40, 24, 7, 2, 1, {3, 3, 3, 3}, true, false});
}

} // namespace
