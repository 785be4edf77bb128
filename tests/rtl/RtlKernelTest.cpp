// RtlKernelTest.cpp - compiled kernels (conv+relu, a matmul with odd sizes, pooling, Softmax,
// LayerNorm and activations on the vector math, depthwise convolutions with mac) co-simulated on
// the RTL core and the simulator for configs/npu-rtl.yaml: outputs bit-identical, total cycles
// within 2% (the remaining difference is the simulator's statistical bank-conflict stall, which the
// RTL's ideal scratchpads do not pay; docs/RTL.md). The conv and vector-math outputs are also
// checked against a reference, so a bug common to both models cannot pass.
#include "simulator/rtl/RtlCore.h"
#include "tests/npu/NpuTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fmt/format.h>
#include <iostream>

using namespace npuc;
using namespace npuc::test;
using graph::Graph;

namespace {

struct Kernel {
  npu::Segment seg;
  sim::Memory mem;
};

/// Compiles group 0 of `g` for npu-rtl and lays out its DRAM image with `inputs`.
Kernel prepare(const Graph &g, const isa::Target &t, const std::vector<HostTensor> &inputs) {
  auto compiled = npu::compileSegment(g, {0}, t);
  if (!compiled)
    throw std::runtime_error("compileSegment: " + compiled.error().text());
  npu::Segment seg = std::move(compiled).value();
  sim::Memory mem(t, seg.dramBytes);
  std::copy(seg.constImage.begin(), seg.constImage.end(), mem.dram().begin() + seg.constBase);
  for (const npu::DramTensor &in : seg.inputs) {
    size_t idx = 0;
    while (g.inputs[idx] != in.value)
      ++idx;
    std::vector<uint8_t> bytes = npu::packTensor(inputs[idx], in.layout);
    std::copy(bytes.begin(), bytes.end(), mem.dram().begin() + in.addr);
  }
  return {std::move(seg), std::move(mem)};
}

rtl::CosimResult cosimKernel(const isa::Target &t, const Kernel &k) {
  std::vector<rtl::Region> regions;
  for (const npu::DramTensor &o : k.seg.outputs)
    regions.push_back({o.name, k.mem.dramIndex(), o.addr, o.bytes()});
  rtl::CosimResult r = rtl::cosim(t, k.seg.program, k.mem, regions);
  // The figures bench/rtl/cosim_bench.sh collects for docs/PERFORMANCE.md.
  std::cout << ::testing::UnitTest::GetInstance()->current_test_info()->name() << ": "
            << k.seg.program.instrs.size() << " instructions\n"
            << r.summary(t);
  EXPECT_TRUE(r.dataMatch) << r.dataDivergence;
  EXPECT_LE(r.cycleError(), 0.02) << r.summary(t);
  EXPECT_EQ(r.rtl.macs, r.sim.macs);
  for (size_t e = 0; e < t.engines.size(); ++e)
    EXPECT_EQ(r.rtl.engines[e].instructions, r.sim.engines[e].instructions);
  return r;
}

/// The RTL's output `y` against the graph reference on `inputs`: within 2^-10 of each value (the
/// fp16 rounding of the output and of the kernel's fp16 intermediates) plus `abs`.
void expectRtlNearReference(const isa::Target &t, const Kernel &k, const Graph &g,
                            const std::map<graph::ValueId, HostTensor> &inputs, graph::ValueId y,
                            double abs) {
  sim::Memory mem = k.mem;
  rtl::runRtl(t, k.seg.program, mem);
  const npu::DramTensor &o = k.seg.outputs.at(0);
  HostTensor got = npu::unpackTensor(mem.dram().data() + o.addr, o.shape, o.layout);
  HostTensor want = graph::runReference(g, inputs).at(y);
  for (size_t i = 0; i < want.data.size(); ++i)
    ASSERT_NEAR(got.data[i], want.data[i], std::ldexp(std::fabs(want.data[i]), -10) + abs) << i;
}

isa::Target rtlTarget() {
  return isa::loadTarget(configPath("npu-rtl.yaml"));
}

} // namespace

TEST(RtlKernel, ConvReluMatchesSimulatorAndReference) {
  isa::Target t = rtlTarget();
  const int64_t C = 5, H = 9, W = 7, OC = 6, K = 3;
  Graph g;
  auto x = g.addValue("x", {1, C, H, W}, graph::DType::F32);
  g.inputs = {x};
  auto wdata = halves(randomData(static_cast<size_t>(OC * C * K * K), 2));
  auto bdata = randomData(static_cast<size_t>(OC), 3);
  auto w = g.addConstant("w", {OC, C, K, K}, wdata);
  auto b = g.addConstant("b", {OC}, bdata);
  auto y = g.addValue("y", {1, OC, H, W}, graph::DType::F32);
  auto conv = g.addNode(graph::OpKind::Conv, "conv", {x, w, b}, {y});
  g.node(conv).attrs["strides"] = std::vector<int64_t>{1, 1};
  g.node(conv).attrs["pads"] = std::vector<int64_t>{1, 1, 1, 1};
  g.node(conv).attrs["dilations"] = std::vector<int64_t>{1, 1};
  g.node(conv).attrs["group"] = int64_t(1);
  auto out = g.addValue("r", {1, OC, H, W}, graph::DType::F32);
  g.addNode(graph::OpKind::Relu, "relu", {y}, {out});
  oneGroup(g, out);
  HostTensor in({1, C, H, W}, halves(randomData(static_cast<size_t>(C * H * W), 1)));
  Kernel k = prepare(g, t, {in});
  rtl::CosimResult r = cosimKernel(t, k);
  EXPECT_EQ(r.rtl.macs, OC * H * W * C * K * K);

  // The RTL's output against a naive reference (tolerance: fp16 output rounding + fp32 sums).
  sim::Memory mem = k.mem;
  rtl::runRtl(t, k.seg.program, mem);
  const npu::DramTensor &o = k.seg.outputs.at(0);
  HostTensor got = npu::unpackTensor(mem.dram().data() + o.addr, o.shape, o.layout);
  for (int64_t oc = 0; oc < OC; ++oc)
    for (int64_t oy = 0; oy < H; ++oy)
      for (int64_t ox = 0; ox < W; ++ox) {
        double sum = bdata[size_t(oc)], mag = std::fabs(bdata[size_t(oc)]);
        for (int64_t ic = 0; ic < C; ++ic)
          for (int64_t kh = 0; kh < K; ++kh)
            for (int64_t kw = 0; kw < K; ++kw) {
              int64_t iy = oy - 1 + kh, ix = ox - 1 + kw;
              if (iy < 0 || iy >= H || ix < 0 || ix >= W)
                continue;
              double p = double(in.data[size_t((ic * H + iy) * W + ix)]) *
                         wdata[size_t(((oc * C + ic) * K + kh) * K + kw)];
              sum += p;
              mag += std::fabs(p);
            }
        double want = std::max(sum, 0.0);
        double tol = std::ldexp(std::fabs(want), -11) + C * K * K * std::ldexp(mag, -23) + 1e-6;
        ASSERT_NEAR(got.data[size_t((oc * H + oy) * W + ox)], want, tol)
            << oc << "," << oy << "," << ox;
      }
}

TEST(RtlKernel, MatmulOddSizes) {
  isa::Target t = rtlTarget();
  const int64_t M = 5, K = 19, N = 11;
  Graph g;
  auto a = g.addValue("a", {M, K}, graph::DType::F32);
  g.inputs = {a};
  auto w = g.addConstant("w", {K, N}, halves(randomData(static_cast<size_t>(K * N), 5)));
  auto y = g.addValue("y", {M, N}, graph::DType::F32);
  g.addNode(graph::OpKind::MatMul, "mm", {a, w}, {y});
  oneGroup(g, y);
  HostTensor in({M, K}, halves(randomData(static_cast<size_t>(M * K), 4)));
  rtl::CosimResult r = cosimKernel(t, prepare(g, t, {in}));
  EXPECT_EQ(r.rtl.macs, M * K * N);
}

TEST(RtlKernel, MaxAndAveragePool) {
  isa::Target t = rtlTarget();
  for (bool isMax : {true, false}) {
    const int64_t C = 3, H = 8, W = 9;
    Graph g;
    auto x = g.addValue("x", {1, C, H, W}, graph::DType::F32);
    g.inputs = {x};
    auto y = g.addValue("y", {1, C, 4, 5}, graph::DType::F32);
    auto n =
        g.addNode(isMax ? graph::OpKind::MaxPool : graph::OpKind::AveragePool, "pool", {x}, {y});
    g.node(n).attrs["kernel_shape"] = std::vector<int64_t>{3, 3};
    g.node(n).attrs["strides"] = std::vector<int64_t>{2, 2};
    g.node(n).attrs["pads"] = std::vector<int64_t>{1, 1, 1, 1};
    g.node(n).attrs["count_include_pad"] = int64_t(0);
    oneGroup(g, y);
    HostTensor in({1, C, H, W}, halves(randomData(static_cast<size_t>(C * H * W), 7)));
    SCOPED_TRACE(isMax ? "max" : "average");
    cosimKernel(t, prepare(g, t, {in}));
  }
}

// The vector math (exp, div, sqrt, tanh, sigmoid, erf; isa/VectorMath.h) in compiled kernels:
// Softmax and LayerNormalization over the last axis and the activations, each one group on the
// vector unit. RTL and simulator agree bit for bit; the RTL's output is also compared with the
// graph reference (tolerance: the fp16 rounding of the input and output plus the ops' bounds).
TEST(RtlKernel, SoftmaxLayerNormAndActivations) {
  isa::Target t = rtlTarget();
  const int64_t R = 6, C = 40;
  struct Case {
    graph::OpKind kind;
    const char *name;
  };
  for (Case c :
       {Case{graph::OpKind::Softmax, "softmax"},
        Case{graph::OpKind::LayerNormalization, "layernorm"}, Case{graph::OpKind::Tanh, "tanh"},
        Case{graph::OpKind::Sigmoid, "sigmoid"}, Case{graph::OpKind::Erf, "erf"}}) {
    SCOPED_TRACE(c.name);
    Graph g;
    auto x = g.addValue("x", {R, C}, graph::DType::F32);
    g.inputs = {x};
    auto y = g.addValue("y", {R, C}, graph::DType::F32);
    std::vector<graph::ValueId> ins = {x};
    if (c.kind == graph::OpKind::LayerNormalization) {
      ins.push_back(g.addConstant("scale", {C}, randomData(static_cast<size_t>(C), 12)));
      ins.push_back(g.addConstant("bias", {C}, randomData(static_cast<size_t>(C), 13)));
    }
    auto n = g.addNode(c.kind, c.name, ins, {y});
    if (c.kind == graph::OpKind::Softmax || c.kind == graph::OpKind::LayerNormalization)
      g.node(n).attrs["axis"] = int64_t(1); // the last (graph IR axes are non-negative)
    if (c.kind == graph::OpKind::LayerNormalization)
      g.node(n).attrs["epsilon"] = 1e-5;
    oneGroup(g, y);
    std::vector<float> data = randomData(static_cast<size_t>(R * C), 11);
    for (float &v : data)
      v *= 3.0f;
    HostTensor in({R, C}, halves(data));
    Kernel k = prepare(g, t, {in});
    cosimKernel(t, k);
    expectRtlNearReference(t, k, g, {{x, in}}, y, 2e-3);
  }
}

// A depthwise 3x3 convolution, stride 1 and 2: the depthwise kernel accumulates its taps with
// `mac` (dst += x * w, the destination read first). RTL and simulator agree bit for bit; the RTL's
// output against the graph reference (fp16 inputs and weights, fp32 sums of 9 products, fp16
// output: 2^-10 |y| plus the sums' rounding).
TEST(RtlKernel, DepthwiseConvUsesMac) {
  isa::Target t = rtlTarget();
  for (int64_t stride : {1, 2}) {
    SCOPED_TRACE(fmt::format("stride {}", stride));
    const int64_t C = 8, H = 9, W = 10, K = 3, OH = (H + 2 - K) / stride + 1,
                  OW = (W + 2 - K) / stride + 1;
    Graph g;
    auto x = g.addValue("x", {1, C, H, W}, graph::DType::F32);
    g.inputs = {x};
    auto w =
        g.addConstant("w", {C, 1, K, K}, halves(randomData(static_cast<size_t>(C * K * K), 21)));
    auto bias = g.addConstant("b", {C}, randomData(static_cast<size_t>(C), 22));
    auto y = g.addValue("y", {1, C, OH, OW}, graph::DType::F32);
    auto conv = g.addNode(graph::OpKind::Conv, "dw", {x, w, bias}, {y});
    g.node(conv).attrs["strides"] = std::vector<int64_t>{stride, stride};
    g.node(conv).attrs["pads"] = std::vector<int64_t>{1, 1, 1, 1};
    g.node(conv).attrs["dilations"] = std::vector<int64_t>{1, 1};
    g.node(conv).attrs["group"] = C;
    oneGroup(g, y);
    HostTensor in({1, C, H, W}, halves(randomData(static_cast<size_t>(C * H * W), 23)));
    Kernel k = prepare(g, t, {in});
    EXPECT_NE(isa::disassemble(t, k.seg.program).find("op=mac "), std::string::npos)
        << "the depthwise kernel accumulates with mac";
    cosimKernel(t, k);
    expectRtlNearReference(t, k, g, {{x, in}}, y, 1e-5);
  }
}

// Attention in one kernel (npu/kernels/LowerAttention.cpp): the scores' product and scale, the
// Softmax of a block of rows kept in L1 (max and add reductions, exp, div) and the second product
// on the tensor unit. RTL and simulator agree bit for bit; the RTL's output against the graph
// reference within the fp16 bound of tests/npu/AttentionTest.cpp (scores up to K * scale = 4:
// 2 * 4 * 2^-11 + 2^-10 absolute).
TEST(RtlKernel, FusedAttention) {
  isa::Target t = rtlTarget();
  const int64_t H = 2, M = 20, K = 16, S = 24, D = 16;
  Graph g;
  auto q = g.addValue("q", {1, H, M, K}, graph::DType::F32);
  auto k = g.addValue("k", {1, H, K, S}, graph::DType::F32);
  auto v = g.addValue("v", {1, H, S, D}, graph::DType::F32);
  g.inputs = {q, k, v};
  auto s = addOp(g, graph::OpKind::MatMul, "qk", {q, k});
  auto sc = addOp(g, graph::OpKind::Mul, "scale", {s, g.addConstant("c", {}, {0.25f})});
  auto p = addOp(g, graph::OpKind::Softmax, "softmax", {sc}, {{"axis", int64_t(3)}});
  auto y = addOp(g, graph::OpKind::MatMul, "pv", {p, v});
  oneGroup(g, y);
  std::vector<HostTensor> ins;
  for (size_t i = 0; i < 3; ++i) {
    const Shape &sh = g.value(g.inputs[i]).shape;
    ins.emplace_back(sh, halves(randomData(static_cast<size_t>(numElements(sh)),
                                           static_cast<unsigned>(41 + i))));
  }
  Kernel kn = prepare(g, t, ins);
  ASSERT_NE(kn.seg.groupInfo.at(0).tiling.find("fused attention"), std::string::npos)
      << kn.seg.groupInfo.at(0).tiling;
  cosimKernel(t, kn);
  expectRtlNearReference(t, kn, g, {{q, ins[0]}, {k, ins[1]}, {v, ins[2]}}, y,
                         8 * std::ldexp(1.0, -11) + std::ldexp(1.0, -10));
}
