// ConcatBroadcastTest.cpp - the NPU's Concat kernel and elementwise ops with a per-channel or
// scalar tensor operand (the squeeze-excitation gate), compiled, simulated with the hazard
// checker and compared with expectations derived here and with the fp32 reference executor.
//
// Expectations (derived, not measured): inputs are fp16 values, so a Concat on the NPU moves
// their bits and must equal the naive concatenation exactly. A Mul/Add/Sub of two fp16 values
// is computed in fp32 and rounded once to fp16: a product of two fp16 values is exact in fp32,
// so Mul must equal roundToHalf(a*b) exactly; a sum may be rounded twice (fp32, then fp16),
// which stays within 2^-11 |r| (1 + 2^-13) of the exact r, plus half an fp16 subnormal step.
#include "NpuTestUtil.h"

#include "graph/Reference.h"
#include "npu/kernels/Plan.h"

#include <cmath>
#include <gtest/gtest.h>

namespace npuc::test {
namespace {

using graph::Graph;
using graph::ValueId;

// Flat index helpers over a row-major logical shape.
std::vector<int64_t> stridesOf(const Shape &s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;)
    st[i - 1] = st[i] * s[i];
  return st;
}

// The naive concatenation of `ins` along `axis`: for every output element, the input and the
// coordinate it comes from.
std::vector<float> naiveConcat(const std::vector<HostTensor> &ins, int64_t axis, const Shape &out) {
  std::vector<float> y(static_cast<size_t>(numElements(out)));
  auto ost = stridesOf(out);
  for (int64_t f = 0; f < numElements(out); ++f) {
    std::vector<int64_t> idx(out.size());
    for (size_t d = 0; d < out.size(); ++d)
      idx[d] = f / ost[d] % out[d];
    int64_t a = idx[static_cast<size_t>(axis)];
    size_t k = 0;
    while (a >= ins[k].shape[static_cast<size_t>(axis)])
      a -= ins[k++].shape[static_cast<size_t>(axis)];
    idx[static_cast<size_t>(axis)] = a;
    auto ist = stridesOf(ins[k].shape);
    int64_t src = 0;
    for (size_t d = 0; d < out.size(); ++d)
      src += idx[d] * ist[d];
    y[static_cast<size_t>(f)] = ins[k].data[static_cast<size_t>(src)];
  }
  return y;
}

struct ConcatCase {
  std::vector<Shape> inputs;
  int64_t axis;
  std::string target = "npu-base.yaml";
  bool doubleBuffer = true;
  bool firstConstant = false; // input 0 is an initializer instead of a graph input
};

class ConcatKernel : public ::testing::TestWithParam<ConcatCase> {};

TEST_P(ConcatKernel, MatchesNaiveConcatAndReference) {
  const ConcatCase c = GetParam();
  isa::Target t = isa::loadTarget(configPath(c.target));
  const size_t rank = c.inputs[0].size();
  const int64_t ax = c.axis < 0 ? c.axis + static_cast<int64_t>(rank) : c.axis;
  Shape out = c.inputs[0];
  out[static_cast<size_t>(ax)] = 0;
  for (const Shape &s : c.inputs)
    out[static_cast<size_t>(ax)] += s[static_cast<size_t>(ax)];
  Graph g;
  std::vector<ValueId> ins;
  std::vector<HostTensor> data, fed;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    HostTensor h(c.inputs[i],
                 halves(randomData(static_cast<size_t>(numElements(c.inputs[i])), 40 + i)));
    data.push_back(h);
    if (i == 0 && c.firstConstant) {
      ins.push_back(g.addConstant("k", h.shape, h.data));
    } else {
      // (not "x" + std::to_string(i): GCC 12 raises a false -Wrestrict on that form)
      std::string name = "x";
      name += std::to_string(i);
      ins.push_back(g.addValue(name, h.shape, graph::DType::F32));
      g.inputs.push_back(ins.back());
      fed.push_back(h);
    }
  }
  auto y = g.addValue("y", out, graph::DType::F32);
  auto n = g.addNode(graph::OpKind::Concat, "cat", ins, {y});
  g.node(n).attrs["axis"] = c.axis;
  oneGroup(g, y);
  ASSERT_EQ(npu::npuRejectReason(g, g.groups[0], t), "") << "Concat runs on the NPU";
  npu::CompileOptions opt;
  opt.doubleBuffer = c.doubleBuffer;
  NpuRun r = compileAndRun(g, t, fed, opt);
  EXPECT_NE(r.seg.groupInfo.at(0).tiling.find("concat"), std::string::npos)
      << r.seg.groupInfo.at(0).tiling;
  std::vector<float> want = naiveConcat(data, ax, out);
  ASSERT_EQ(r.out.data.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_EQ(r.out.data[i], want[i]) << "element " << i;
  std::map<ValueId, HostTensor> feeds;
  for (size_t i = 0; i < g.inputs.size(); ++i)
    feeds[g.inputs[i]] = fed[i];
  auto ref = graph::runReference(g, feeds);
  EXPECT_EQ(ref.at(y).data, r.out.data) << "the reference executor agrees bit for bit";
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ConcatKernel,
    ::testing::Values(
        ConcatCase{{{1, 3, 5, 7}, {1, 13, 5, 7}}, 1},                        // channel slices, odd
        ConcatCase{{{2, 13, 3, 5}, {2, 40, 3, 5}, {2, 3, 3, 5}}, 1},         // 3 inputs, batch 2
        ConcatCase{{{1, 4, 3, 5}, {1, 4, 6, 5}}, 2},                         // along H
        ConcatCase{{{2, 3, 4, 5}, {2, 3, 4, 2}}, -1},                        // along W
        ConcatCase{{{1, 3, 2, 5}, {2, 3, 2, 5}}, 0},                         // along N
        ConcatCase{{{3, 5}, {3, 7}}, 1},                                     // 2-D row-major
        ConcatCase{{{3, 5}, {4, 5}}, -2},                                    // 2-D along rows
        ConcatCase{{{2, 3, 5}, {2, 4, 5}, {2, 1, 5}}, 1},                    // 3-D row-major
        ConcatCase{{{1, 6, 5, 7}, {1, 6, 5, 7}}, 1, "npu-base.yaml", false}, // single buffer
        ConcatCase{{{1, 5, 3, 3}, {1, 7, 3, 3}}, 1, "npu-base.yaml", true, true}, // constant
        // npu-tiny's 256 KiB L1: a 64 x 64 x 40 input (160 Ki elements) needs several tiles per
        // input, so loads and stores of different tiles overlap in two buffers.
        ConcatCase{{{1, 40, 64, 64}, {1, 24, 64, 64}}, 1, "npu-tiny.yaml"},
        // Along H, a 64 x 96 x 16 input is one row of 98304 elements in NHWC (outer = 1): more
        // than a DMA extent (16 bits), so the row is cut into pieces.
        ConcatCase{{{1, 16, 64, 96}, {1, 16, 40, 96}}, 2, "npu-tiny.yaml"}),
    [](const ::testing::TestParamInfo<ConcatCase> &i) {
      std::string t = i.param.target.substr(0, i.param.target.find('.'));
      for (char &ch : t)
        ch = ch == '-' ? '_' : ch;
      return "axis" + std::to_string(i.param.axis < 0 ? -i.param.axis : i.param.axis) +
             (i.param.axis < 0 ? "neg_" : "_") + std::to_string(i.param.inputs.size()) + "in_" +
             std::to_string(i.param.inputs[0].size()) + "d_" + t + "_" + std::to_string(i.index);
    });

TEST(ConcatKernel, IntegerTensorsStayOnTheCpu) {
  isa::Target t = isa::loadTarget(configPath("npu-base.yaml"));
  Graph g;
  auto a = g.addValue("a", {2, 3}, graph::DType::I64);
  auto b = g.addValue("b", {2, 3}, graph::DType::I64);
  g.inputs = {a, b};
  auto y = g.addValue("y", {4, 3}, graph::DType::I64);
  auto n = g.addNode(graph::OpKind::Concat, "icat", {a, b}, {y});
  g.node(n).attrs["axis"] = int64_t(0);
  oneGroup(g, y);
  // Neither the Concat kernel nor the loop-nest kernel takes integer tensors; the reason names
  // both refusals.
  EXPECT_EQ(npu::npuRejectReason(g, g.groups[0], t),
            "icat (Concat): only float tensors are concatenated on the NPU (its fp16 storage "
            "would round integer values); loop-nest kernel: tensor 'a' is not float32 (the NPU "
            "keeps tensors as fp16)");
}

// x op gate with the gate broadcast per channel (or a scalar) and a per-channel constant after
// it, as squeeze-excitation does (x * sigmoid-like gate), then Relu.
struct BcastCase {
  Shape x, gate;
  graph::OpKind kind;
  bool gateFirst = false;
};

class BroadcastOperand : public ::testing::TestWithParam<BcastCase> {};

TEST_P(BroadcastOperand, MatchesDerivedResultAndReference) {
  const BcastCase c = GetParam();
  isa::Target t = isa::loadTarget(configPath("npu-base.yaml"));
  Graph g;
  auto x = g.addValue("x", c.x, graph::DType::F32);
  auto gate = g.addValue("gate", c.gate, graph::DType::F32);
  g.inputs = {x, gate};
  auto y = g.addValue("y", c.x, graph::DType::F32);
  g.addNode(c.kind, "se",
            c.gateFirst ? std::vector<ValueId>{gate, x} : std::vector<ValueId>{x, gate}, {y});
  oneGroup(g, y);
  ASSERT_EQ(npu::npuRejectReason(g, g.groups[0], t), "");
  HostTensor tx(c.x, halves(randomData(static_cast<size_t>(numElements(c.x)), 51)));
  HostTensor tg(c.gate, halves(randomData(static_cast<size_t>(numElements(c.gate)), 52, 0.f, 1.f)));
  NpuRun r = compileAndRun(g, t, {tx, tg});
  // The gate element of output element f: per channel (axis 1 of 4-D, the last axis otherwise)
  // or the single value.
  const Shape &s = c.x;
  const int64_t cax = s.size() == 4 ? 1 : static_cast<int64_t>(s.size()) - 1;
  const int64_t inner = stridesOf(s)[static_cast<size_t>(cax)];
  auto ref = graph::runReference(g, {{x, tx}, {gate, tg}});
  // fp32 then fp16 rounding of the exact r (and the reference's fp32 rounding, within the same
  // factor); 2^-25 is half the spacing of fp16 subnormals, for results near 0.
  auto tol = [](double r) { return std::ldexp(std::fabs(r), -11) * (1 + 0x1p-13) + 0x1p-25; };
  for (int64_t f = 0; f < numElements(s); ++f) {
    float gv = tg.data.size() == 1
                   ? tg.data[0]
                   : tg.data[static_cast<size_t>(f / inner % s[static_cast<size_t>(cax)])];
    float xv = tx.data[static_cast<size_t>(f)];
    double exact = c.kind == graph::OpKind::Mul   ? double(xv) * gv
                   : c.kind == graph::OpKind::Add ? double(xv) + gv
                   : c.gateFirst                  ? double(gv) - xv
                                                  : double(xv) - gv;
    float got = r.out.data[static_cast<size_t>(f)];
    if (c.kind == graph::OpKind::Mul)
      ASSERT_EQ(got, roundToHalf(static_cast<float>(exact))) << "element " << f;
    else
      ASSERT_NEAR(got, exact, tol(exact)) << "element " << f;
    ASSERT_NEAR(got, ref.at(y).data[static_cast<size_t>(f)], tol(exact))
        << "reference, element " << f;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, BroadcastOperand,
    ::testing::Values(BcastCase{{1, 37, 5, 7}, {1, 37, 1, 1}, graph::OpKind::Mul},
                      BcastCase{{2, 37, 3, 5}, {37, 1, 1}, graph::OpKind::Sub, true},
                      BcastCase{{1, 6, 3, 5}, {1, 1, 1, 1}, graph::OpKind::Add},
                      BcastCase{{1, 6, 3, 5}, {1}, graph::OpKind::Mul, true},
                      BcastCase{{4, 37}, {37}, graph::OpKind::Mul},
                      BcastCase{{3, 4, 37}, {1, 1, 37}, graph::OpKind::Add}),
    [](const ::testing::TestParamInfo<BcastCase> &i) {
      return graph::opName(i.param.kind) + std::string(i.param.gateFirst ? "_gate_first_" : "_") +
             std::to_string(i.param.x.size()) + "d_" + std::to_string(numElements(i.param.gate)) +
             "_" + std::to_string(i.index);
    });

// The gate followed by more of the chain: (x * gate) + per-channel constant, then Relu; the
// gate's view and the constant's are offset independently.
TEST(BroadcastOperand, ChainAfterTheGate) {
  isa::Target t = isa::loadTarget(configPath("npu-base.yaml"));
  const int64_t C = 37, H = 5, W = 7;
  Graph g;
  auto x = g.addValue("x", {1, C, H, W}, graph::DType::F32);
  auto gate = g.addValue("gate", {1, C, 1, 1}, graph::DType::F32);
  g.inputs = {x, gate};
  auto bias = randomData(static_cast<size_t>(C), 53);
  auto k = g.addConstant("k", {C, 1, 1}, bias);
  auto m = g.addValue("m", {1, C, H, W}, graph::DType::F32);
  auto s = g.addValue("s", {1, C, H, W}, graph::DType::F32);
  auto y = g.addValue("y", {1, C, H, W}, graph::DType::F32);
  g.addNode(graph::OpKind::Mul, "se", {x, gate}, {m});
  g.addNode(graph::OpKind::Add, "bias", {m, k}, {s});
  g.addNode(graph::OpKind::Relu, "relu", {s}, {y});
  oneGroup(g, y);
  HostTensor tx({1, C, H, W}, halves(randomData(static_cast<size_t>(C * H * W), 54)));
  HostTensor tg({1, C, 1, 1}, halves(randomData(static_cast<size_t>(C), 55, 0.f, 1.f)));
  NpuRun r = compileAndRun(g, t, {tx, tg});
  for (int64_t f = 0; f < C * H * W; ++f) {
    int64_t ch = f / (H * W);
    // x*gate is exact in fp32 and stays in the fp32 accumulator; + bias rounds in fp32, Relu is
    // exact, and the fp16 store rounds once more.
    double want =
        std::max(0.0, double(tx.data[static_cast<size_t>(f)]) * tg.data[static_cast<size_t>(ch)] +
                          bias[static_cast<size_t>(ch)]);
    ASSERT_NEAR(r.out.data[static_cast<size_t>(f)], want,
                std::ldexp(std::fabs(want), -11) + std::ldexp(2.0, -24) + 0x1p-25)
        << "element " << f;
  }
}

// A gate right after a convolution (fusion may put it in the conv's epilogue): the matmul kernel
// offsets the gate's view to each output-channel block. npu-tiny's small accumulator splits the
// 70 output channels into several blocks. Tolerance as in KernelTest's ConvKernel: fp32
// accumulation of K products, then the exact-in-fp32 product with the fp16 gate rounded in fp32
// and once more to fp16.
TEST(BroadcastOperand, GateInAConvEpilogue) {
  isa::Target t = isa::loadTarget(configPath("npu-tiny.yaml"));
  const int64_t C = 16, H = 9, W = 11, OC = 70, K = 3;
  Graph g;
  auto x = g.addValue("x", {1, C, H, W}, graph::DType::F32);
  auto gate = g.addValue("gate", {1, OC, 1, 1}, graph::DType::F32);
  g.inputs = {x, gate};
  auto wdata = halves(randomData(static_cast<size_t>(OC * C * K * K), 56));
  auto w = g.addConstant("w", {OC, C, K, K}, wdata);
  auto y = g.addValue("y", {1, OC, H, W}, graph::DType::F32);
  auto out = g.addValue("out", {1, OC, H, W}, graph::DType::F32);
  auto conv = g.addNode(graph::OpKind::Conv, "conv", {x, w}, {y});
  g.node(conv).attrs["pads"] = std::vector<int64_t>{1, 1, 1, 1};
  g.addNode(graph::OpKind::Mul, "se", {y, gate}, {out});
  oneGroup(g, out);
  ASSERT_EQ(npu::npuRejectReason(g, g.groups[0], t), "");
  HostTensor tx({1, C, H, W}, halves(randomData(static_cast<size_t>(C * H * W), 57)));
  HostTensor tg({1, OC, 1, 1}, halves(randomData(static_cast<size_t>(OC), 58, 0.f, 1.f)));
  NpuRun r = compileAndRun(g, t, {tx, tg});
  for (int64_t oc = 0; oc < OC; ++oc)
    for (int64_t oy = 0; oy < H; ++oy)
      for (int64_t ox = 0; ox < W; ++ox) {
        double s = 0, mag = 0;
        for (int64_t ic = 0; ic < C; ++ic)
          for (int64_t kh = 0; kh < K; ++kh)
            for (int64_t kw = 0; kw < K; ++kw) {
              int64_t iy = oy - 1 + kh, ix = ox - 1 + kw;
              if (iy < 0 || iy >= H || ix < 0 || ix >= W)
                continue;
              double p = double(tx.data[static_cast<size_t>((ic * H + iy) * W + ix)]) *
                         wdata[static_cast<size_t>(((oc * C + ic) * K + kh) * K + kw)];
              s += p;
              mag += std::fabs(p);
            }
        const double gv = tg.data[static_cast<size_t>(oc)], want = s * gv;
        const double tol =
            std::ldexp(std::fabs(want), -10) + C * K * K * std::ldexp(mag * gv, -24) + 0x1p-25;
        ASSERT_NEAR(r.out.data[static_cast<size_t>((oc * H + oy) * W + ox)], want, tol)
            << oc << "," << oy << "," << ox;
      }
}

// MobileNetV3's squeeze-excitation gate fused after a depthwise conv, which runs on the vector
// unit (LowerDepthwise.cpp) on npu-base: the gate is offset per channel block there too.
TEST(BroadcastOperand, GateInADepthwiseEpilogue) {
  isa::Target t = isa::loadTarget(configPath("npu-base.yaml"));
  const int64_t C = 40, H = 9, W = 11, K = 3;
  Graph g;
  auto x = g.addValue("x", {1, C, H, W}, graph::DType::F32);
  auto gate = g.addValue("gate", {1, C, 1, 1}, graph::DType::F32);
  g.inputs = {x, gate};
  auto wdata = halves(randomData(static_cast<size_t>(C * K * K), 61));
  auto w = g.addConstant("w", {C, 1, K, K}, wdata);
  auto y = g.addValue("y", {1, C, H, W}, graph::DType::F32);
  auto out = g.addValue("out", {1, C, H, W}, graph::DType::F32);
  auto conv = g.addNode(graph::OpKind::Conv, "dw", {x, w}, {y});
  g.node(conv).attrs["pads"] = std::vector<int64_t>{1, 1, 1, 1};
  g.node(conv).attrs["group"] = C;
  g.addNode(graph::OpKind::Mul, "se", {y, gate}, {out});
  oneGroup(g, out);
  ASSERT_EQ(npu::npuRejectReason(g, g.groups[0], t), "");
  HostTensor tx({1, C, H, W}, halves(randomData(static_cast<size_t>(C * H * W), 62)));
  HostTensor tg({1, C, 1, 1}, halves(randomData(static_cast<size_t>(C), 63, 0.f, 1.f)));
  NpuRun r = compileAndRun(g, t, {tx, tg});
  ASSERT_NE(r.seg.groupInfo.at(0).tiling.find("on the vector unit"), std::string::npos)
      << r.seg.groupInfo.at(0).tiling;
  for (int64_t c = 0; c < C; ++c)
    for (int64_t oy = 0; oy < H; ++oy)
      for (int64_t ox = 0; ox < W; ++ox) {
        double s = 0, mag = 0;
        for (int64_t kh = 0; kh < K; ++kh)
          for (int64_t kw = 0; kw < K; ++kw) {
            int64_t iy = oy - 1 + kh, ix = ox - 1 + kw;
            if (iy < 0 || iy >= H || ix < 0 || ix >= W)
              continue;
            double p = double(tx.data[static_cast<size_t>((c * H + iy) * W + ix)]) *
                       wdata[static_cast<size_t>((c * K + kh) * K + kw)];
            s += p;
            mag += std::fabs(p);
          }
        const double gv = tg.data[static_cast<size_t>(c)], want = s * gv;
        const double tol =
            std::ldexp(std::fabs(want), -10) + K * K * std::ldexp(mag * gv, -24) + 0x1p-25;
        ASSERT_NEAR(r.out.data[static_cast<size_t>((c * H + oy) * W + ox)], want, tol)
            << c << "," << oy << "," << ox;
      }
}

} // namespace
} // namespace npuc::test
