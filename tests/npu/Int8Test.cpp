// Int8Test.cpp - int8 compilation for quantised targets (npu-int8.yaml): hand-built Conv/Gemm/
// MatMul groups compiled with calibrated scales, simulated with the hazard checker on, and
// compared element by element with the fake-quantised reference (npu/hw/Quant.h), plus the fp32
// reference; groups the int8 path does not quantise fall back to the CPU through the driver.
//
// Tolerances (derived, not measured): the NPU and the quantised reference quantise the same
// weights and inputs with the same scales, and both outputs are int8 multiples of the output
// scale. The NPU sums exact int8 products in int32 and applies the epilogue in fp32 in a
// different association (scales folded into operands, npu/kernels/Epilogue.cpp), so the
// pre-rounding values differ by a few fp32 ulps: the rounded results may differ by one step where a
// value lies within that distance of a rounding tie, never by more. Against the fp32 reference, the
// int8 error (half a step per tensor) keeps the cosine similarity above 0.99 for these sizes.
#include "NpuTestUtil.h"

#include "graph/Reference.h"
#include "npu/hw/Quant.h"
#include "support/Npy.h"
#include "tools/driver/Package.h"
#include "tools/driver/Runtime.h"

#include <cmath>
#include <cstdio>

namespace npuc::test {
namespace {

using graph::Graph;
using graph::ValueId;

const isa::Target &int8Target() {
  static const isa::Target t = isa::loadTarget(configPath("npu-int8.yaml"));
  return t;
}

double cosine(const std::vector<float> &a, const std::vector<float> &b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ab += double(a[i]) * b[i];
    aa += double(a[i]) * a[i];
    bb += double(b[i]) * b[i];
  }
  return ab / std::sqrt(aa * bb);
}

// Weights whose output channels span different magnitudes, so that per-channel scales matter.
std::vector<float> channelWeights(int64_t oc, int64_t rest, unsigned seed) {
  std::vector<float> w = randomData(static_cast<size_t>(oc * rest), seed);
  for (int64_t o = 0; o < oc; ++o)
    for (int64_t i = 0; i < rest; ++i)
      w[static_cast<size_t>(o * rest + i)] *= 0.25f * float(1 + o % 5);
  return w;
}

struct Int8Run {
  HostTensor npu, quantRef, ref;
  float outScale = 1;
  npu::Segment seg;
};

// Calibrates on the inputs scaled by `calib` (< 1: the test input saturates the int8 range),
// compiles group 0 for npu-int8, runs it (hazard checking is on by default) and evaluates both
// references on the inputs.
Int8Run runInt8(const Graph &g, const std::vector<HostTensor> &inputs, float calib = 1.0f) {
  std::map<ValueId, HostTensor> in, cal;
  for (size_t i = 0; i < inputs.size(); ++i) {
    in[g.inputs[i]] = inputs[i];
    HostTensor c = inputs[i];
    for (float &x : c.data)
      x *= calib;
    cal[g.inputs[i]] = c;
  }
  auto q = std::make_shared<npu::QuantTable>(npu::calibrate(g, cal, "test input"));
  npu::CompileOptions opt;
  opt.quant = q;
  NpuRun r = compileAndRun(g, int8Target(), inputs, opt);
  Int8Run out;
  out.npu = r.out;
  out.seg = r.seg;
  const ValueId y = g.outputs.at(0);
  out.quantRef = npu::runQuantisedReference(g, *q, in).at(y);
  out.ref = graph::runReference(g, in).at(y);
  out.outScale = q->of(y);
  EXPECT_EQ(r.seg.outputs.at(0).dtype, isa::ElemType::I8);
  EXPECT_EQ(r.seg.outputs.at(0).scale, out.outScale);
  return out;
}

// Every element within one int8 step of the quantised reference, a non-trivial output, and,
// unless the calibration made the output saturate (`saturating`), the fp32 reference's direction.
void expectClose(const Int8Run &r, bool saturating = false) {
  ASSERT_EQ(r.npu.shape, r.quantRef.shape);
  int64_t offByOne = 0, nonZero = 0;
  for (size_t i = 0; i < r.npu.data.size(); ++i) {
    const double steps = (r.npu.data[i] - r.quantRef.data[i]) / r.outScale;
    ASSERT_LE(std::fabs(steps), 1.0 + 1e-3)
        << "element " << i << ": npu " << r.npu.data[i] << ", quantised reference "
        << r.quantRef.data[i] << " (scale " << r.outScale << ")";
    offByOne += std::fabs(steps) > 0.5;
    nonZero += r.npu.data[i] != 0;
  }
  EXPECT_GT(nonZero, 0);
  if (!saturating) {
    EXPECT_GE(cosine(r.npu.data, r.ref.data), 0.99);
  }
  ::testing::Test::RecordProperty("off_by_one", std::to_string(offByOne));
}

struct Int8Conv {
  int64_t C, H, W, OC, K, S, P, G;
  bool bias, relu, residual;
  float calib = 1.0f;
};

std::ostream &operator<<(std::ostream &os, const Int8Conv &c) {
  return os << "C" << c.C << "_H" << c.H << "_W" << c.W << "_OC" << c.OC << "_K" << c.K << "_S"
            << c.S << "_P" << c.P << "_G" << c.G << (c.bias ? "_bias" : "")
            << (c.relu ? "_relu" : "") << (c.residual ? "_residual" : "")
            << (c.calib != 1.0f ? "_saturating" : "");
}

class Int8ConvTest : public ::testing::TestWithParam<Int8Conv> {};

TEST_P(Int8ConvTest, MatchesQuantisedReference) {
  const Int8Conv c = GetParam();
  const int64_t OH = (c.H + 2 * c.P - c.K) / c.S + 1, OW = (c.W + 2 * c.P - c.K) / c.S + 1;
  Graph g;
  auto x = g.addValue("x", {1, c.C, c.H, c.W}, graph::DType::F32);
  g.inputs = {x};
  ValueId r = graph::kNoValue;
  if (c.residual) {
    r = g.addValue("res", {1, c.OC, OH, OW}, graph::DType::F32);
    g.inputs.push_back(r);
  }
  auto w = g.addConstant("w", {c.OC, c.C / c.G, c.K, c.K},
                         channelWeights(c.OC, c.C / c.G * c.K * c.K, 2));
  std::vector<ValueId> ins = {x, w};
  if (c.bias)
    ins.push_back(g.addConstant("b", {c.OC}, randomData(static_cast<size_t>(c.OC), 3)));
  auto y = g.addValue("y", {1, c.OC, OH, OW}, graph::DType::F32);
  auto conv = g.addNode(graph::OpKind::Conv, "conv", ins, {y});
  g.node(conv).attrs["strides"] = std::vector<int64_t>{c.S, c.S};
  g.node(conv).attrs["pads"] = std::vector<int64_t>{c.P, c.P, c.P, c.P};
  g.node(conv).attrs["group"] = c.G;
  ValueId out = y;
  if (c.residual) {
    auto s = g.addValue("sum", {1, c.OC, OH, OW}, graph::DType::F32);
    g.addNode(graph::OpKind::Add, "add", {out, r}, {s});
    out = s;
  }
  if (c.relu) {
    auto z = g.addValue("z", {1, c.OC, OH, OW}, graph::DType::F32);
    g.addNode(graph::OpKind::Relu, "relu", {out}, {z});
    out = z;
  }
  oneGroup(g, out);
  std::vector<HostTensor> inputs = {
      HostTensor({1, c.C, c.H, c.W}, randomData(static_cast<size_t>(c.C * c.H * c.W), 1))};
  if (c.residual)
    inputs.emplace_back(Shape{1, c.OC, OH, OW},
                        randomData(static_cast<size_t>(c.OC * OH * OW), 4, -3.f, 3.f));
  Int8Run run = runInt8(g, inputs, c.calib);
  expectClose(run, c.calib < 1.0f);
  // A depthwise conv with many channels on a small image runs on the vector unit (mul + add:
  // npu-int8 has no `mac`): one array column per channel would leave the tensor unit idle.
  if (c.G == c.C && c.C >= 128) {
    EXPECT_NE(run.seg.groupInfo.at(0).tiling.find("depthwise on the vector unit"),
              std::string::npos)
        << run.seg.groupInfo.at(0).tiling;
  }
  EXPECT_EQ(run.seg.program.instrs.empty(), false);
}

INSTANTIATE_TEST_SUITE_P(
    Int8, Int8ConvTest,
    ::testing::Values(Int8Conv{3, 16, 16, 16, 3, 1, 1, 1, true, true, false},    // conv+bias+relu
                      Int8Conv{8, 15, 13, 24, 3, 2, 1, 1, true, false, false},   // strided, padded
                      Int8Conv{5, 9, 7, 13, 3, 1, 1, 1, true, true, false},      // odd channels
                      Int8Conv{3, 32, 32, 16, 7, 2, 3, 1, true, true, false},    // stem-like 7x7
                      Int8Conv{40, 6, 6, 70, 1, 1, 0, 1, false, false, false},   // 1x1, no bias
                      Int8Conv{8, 10, 10, 12, 3, 1, 1, 4, true, true, false},    // grouped
                      Int8Conv{16, 8, 8, 16, 3, 1, 1, 16, true, true, false},    // depthwise
                      Int8Conv{64, 14, 14, 64, 3, 1, 1, 64, true, true, false},  // vector dw
                      Int8Conv{48, 15, 15, 48, 3, 2, 1, 48, true, false, false}, // strided dw
                      Int8Conv{16, 8, 8, 24, 3, 1, 1, 1, true, true, true},      // residual add
                      Int8Conv{16, 8, 8, 24, 1, 1, 0, 1, false, false, true}, // residual, no relu
                      Int8Conv{8, 8, 8, 16, 3, 1, 1, 1, true, true, true, 0.5f}), // saturating
    ParamName{});

// Gemm (alpha, transB, bias) and MatMul with a constant B: the 1x1 case on a row-major matrix.
TEST(Int8Gemm, BiasAlphaTransB) {
  const int64_t M = 5, K = 37, N = 19;
  Graph g;
  auto a = g.addValue("a", {M, K}, graph::DType::F32);
  g.inputs = {a};
  auto w = g.addConstant("w", {N, K}, channelWeights(N, K, 5));
  auto bias = g.addConstant("c", {N}, randomData(static_cast<size_t>(N), 6));
  auto y = g.addValue("y", {M, N}, graph::DType::F32);
  auto n = g.addNode(graph::OpKind::Gemm, "fc", {a, w, bias}, {y});
  g.node(n).attrs["transB"] = int64_t(1);
  g.node(n).attrs["alpha"] = 0.5;
  oneGroup(g, y);
  expectClose(runInt8(g, {HostTensor({M, K}, randomData(static_cast<size_t>(M * K), 4))}));
}

TEST(Int8Gemm, MatMulConstantB) {
  const int64_t M = 7, K = 48, N = 33;
  Graph g;
  auto a = g.addValue("a", {M, K}, graph::DType::F32);
  g.inputs = {a};
  // B is [K][N]: output channels are columns, quantised per column.
  std::vector<float> b = randomData(static_cast<size_t>(K * N), 8);
  for (int64_t k = 0; k < K; ++k)
    for (int64_t o = 0; o < N; ++o)
      b[static_cast<size_t>(k * N + o)] *= float(1 + o % 7);
  auto w = g.addConstant("b", {K, N}, b);
  auto y = g.addValue("y", {M, N}, graph::DType::F32);
  g.addNode(graph::OpKind::MatMul, "mm", {a, w}, {y});
  oneGroup(g, y);
  expectClose(runInt8(g, {HostTensor({M, K}, randomData(static_cast<size_t>(M * K), 9))}));
}

TEST(Int8Quant, RoundsTiesToEvenAndSaturates) {
  EXPECT_EQ(npu::quantise(2.5f, 1.0f), 2);
  EXPECT_EQ(npu::quantise(3.5f, 1.0f), 4);
  EXPECT_EQ(npu::quantise(-2.5f, 1.0f), -2);
  EXPECT_EQ(npu::quantise(1000.0f, 1.0f), 127);
  EXPECT_EQ(npu::quantise(-1000.0f, 1.0f), -128);
  std::vector<int8_t> q;
  std::vector<float> s = npu::quantiseWeights({-2.0f, 1.0f, 0.0f, 0.0f}, 2, q);
  EXPECT_FLOAT_EQ(s[0], 2.0f / 127);
  EXPECT_FLOAT_EQ(s[1], 1.0f / 127); // an all-zero channel: the scale of the range [-1, 1]
  EXPECT_EQ(q[0], -127);
  EXPECT_EQ(q[1], 64); // 63.5 rounds to even
  HostTensor t({1, 2, 1, 2}, {0.5f, -1.0f, 0.25f, 2.0f});
  std::vector<uint8_t> bytes = npu::packTensor(t, npu::DramLayout::NHWC, isa::ElemType::I8, 0.25f);
  ASSERT_EQ(bytes.size(), 4u);                 // one byte per element, NHWC order
  EXPECT_EQ(static_cast<int8_t>(bytes[1]), 1); // (c=1, x=0): 0.25 / 0.25
  HostTensor back =
      npu::unpackTensor(bytes.data(), t.shape, npu::DramLayout::NHWC, isa::ElemType::I8, 0.25f);
  EXPECT_EQ(back.data, t.data);
}

// Window pools, global average pooling and elementwise chains on the vector unit in int8.
TEST(Int8Vector, MaxPoolPadded) {
  Graph g;
  auto x = g.addValue("x", {1, 24, 11, 11}, graph::DType::F32);
  g.inputs = {x};
  auto y = g.addValue("y", {1, 24, 6, 6}, graph::DType::F32);
  auto n = g.addNode(graph::OpKind::MaxPool, "pool", {x}, {y});
  g.node(n).attrs["kernel_shape"] = std::vector<int64_t>{3, 3};
  g.node(n).attrs["strides"] = std::vector<int64_t>{2, 2};
  g.node(n).attrs["pads"] = std::vector<int64_t>{1, 1, 1, 1};
  oneGroup(g, y);
  // All-negative inputs: a padded tap must never win the max.
  expectClose(runInt8(g, {HostTensor({1, 24, 11, 11}, randomData(24 * 11 * 11, 21, -3.f, -.1f))}));
}

TEST(Int8Vector, AveragePoolExcludingPadding) {
  Graph g;
  auto x = g.addValue("x", {1, 9, 8, 8}, graph::DType::F32);
  g.inputs = {x};
  auto y = g.addValue("y", {1, 9, 4, 4}, graph::DType::F32);
  auto n = g.addNode(graph::OpKind::AveragePool, "pool", {x}, {y});
  g.node(n).attrs["kernel_shape"] = std::vector<int64_t>{3, 3};
  g.node(n).attrs["strides"] = std::vector<int64_t>{2, 2};
  g.node(n).attrs["pads"] = std::vector<int64_t>{1, 1, 1, 1};
  g.node(n).attrs["count_include_pad"] = int64_t(0);
  oneGroup(g, y);
  expectClose(runInt8(g, {HostTensor({1, 9, 8, 8}, randomData(9 * 8 * 8, 22))}));
}

TEST(Int8Vector, GlobalAveragePool) {
  Graph g;
  auto x = g.addValue("x", {1, 40, 7, 7}, graph::DType::F32);
  g.inputs = {x};
  auto y = g.addValue("y", {1, 40, 1, 1}, graph::DType::F32);
  g.addNode(graph::OpKind::GlobalAveragePool, "gap", {x}, {y});
  oneGroup(g, y);
  expectClose(runInt8(g, {HostTensor({1, 40, 7, 7}, randomData(40 * 49, 23, -1.f, 3.f))}));
}

TEST(Int8Vector, AddReluOfTwoScales) {
  Graph g;
  auto a = g.addValue("a", {1, 20, 5, 6}, graph::DType::F32);
  auto b = g.addValue("b", {1, 20, 5, 6}, graph::DType::F32);
  g.inputs = {a, b};
  auto s = g.addValue("s", {1, 20, 5, 6}, graph::DType::F32);
  g.addNode(graph::OpKind::Add, "add", {a, b}, {s});
  auto y = g.addValue("y", {1, 20, 5, 6}, graph::DType::F32);
  g.addNode(graph::OpKind::Relu, "relu", {s}, {y});
  oneGroup(g, y);
  // Inputs of different ranges, so that their scales differ.
  expectClose(runInt8(g, {HostTensor({1, 20, 5, 6}, randomData(600, 24)),
                          HostTensor({1, 20, 5, 6}, randomData(600, 25, -4.f, 4.f))}));
}

// Concat copies int8 bytes: calibration gives the inputs (ranges 1 and 4) and the output one
// scale, and the constant input is quantised with it.
TEST(Int8Vector, ConcatSharesOneScale) {
  Graph g;
  auto a = g.addValue("a", {1, 8, 4, 4}, graph::DType::F32);
  auto b = g.addValue("b", {1, 5, 4, 4}, graph::DType::F32);
  g.inputs = {a, b};
  auto c = g.addConstant("c", {1, 3, 4, 4}, randomData(48, 26, -2.f, 2.f));
  auto y = g.addValue("y", {1, 16, 4, 4}, graph::DType::F32);
  auto n = g.addNode(graph::OpKind::Concat, "cat", {a, c, b}, {y});
  g.node(n).attrs["axis"] = int64_t(1);
  oneGroup(g, y);
  std::map<ValueId, HostTensor> in = {{a, HostTensor({1, 8, 4, 4}, randomData(128, 27))},
                                      {b, HostTensor({1, 5, 4, 4}, randomData(80, 28, -4.f, 4.f))}};
  npu::QuantTable q = npu::calibrate(g, in, "test input");
  EXPECT_EQ(q.of(a), q.of(y));
  EXPECT_EQ(q.of(b), q.of(y));
  expectClose(runInt8(g, {in.at(a), in.at(b)}));
}

// A constant first input is the group's main input, which calibration gives no scale: ViT's
// class token concatenated before the patch embeddings aborted vit_b_16's compile for npu-int8
// ("calibration gives every non-constant value a scale" in the quantise phase).
TEST(Int8Vector, ConcatWithAConstantFirstInput) {
  Graph g;
  auto a = g.addValue("patches", {1, 6, 8}, graph::DType::F32);
  g.inputs = {a};
  auto c = g.addConstant("cls", {1, 1, 8}, randomData(8, 30, -3.f, 3.f));
  auto y = g.addValue("y", {1, 7, 8}, graph::DType::F32);
  auto n = g.addNode(graph::OpKind::Concat, "cat", {c, a}, {y});
  g.node(n).attrs["axis"] = int64_t(1);
  oneGroup(g, y);
  expectClose(runInt8(g, {HostTensor({1, 6, 8}, randomData(48, 31))}));
}

// Difftest finding F2: m = Min(w, x + (-x)) = min(w, 0) is concatenated with Relu(m), which is 0
// wherever calibration looks. The Concat shares one scale among its tensors, the one of the
// largest range, m's 0.5 (the most negative w); a zero range sizes nothing and must not impose
// a scale (it was 1, which rounded every value of m, all in (-0.5, 0], to 0).
TEST(Int8Quant, ZeroRangeValuesImposeNoScale) {
  EXPECT_FLOAT_EQ(npu::symmetricScale(2.54f), 0.02f);
  EXPECT_FLOAT_EQ(npu::symmetricScale(0.0f), 1.0f / 127);
  EXPECT_FLOAT_EQ(npu::symmetricScale(INFINITY), 1.0f / 127);
  EXPECT_FLOAT_EQ(npu::symmetricScale(1e-42f), 1.0f / 127); // 127 / 1e-42 overflows fp32
  Graph g;
  auto x = g.addValue("x", {1, 4, 1}, graph::DType::F32);
  g.inputs = {x};
  auto w = g.addConstant("w", {4, 1}, {-0.5f, 0.3f, -0.125f, 0.8f});
  auto nx = g.addValue("nx", {1, 4, 1}, graph::DType::F32);
  auto z = g.addValue("z", {1, 4, 1}, graph::DType::F32);
  auto m = g.addValue("m", {1, 4, 1}, graph::DType::F32);
  auto r = g.addValue("r", {1, 4, 1}, graph::DType::F32);
  auto c = g.addValue("c", {1, 4, 2}, graph::DType::F32);
  g.addNode(graph::OpKind::Neg, "neg", {x}, {nx});
  g.addNode(graph::OpKind::Add, "sum", {x, nx}, {z});
  g.addNode(graph::OpKind::Min, "min", {w, z}, {m});
  g.addNode(graph::OpKind::Relu, "relu", {m}, {r});
  auto n = g.addNode(graph::OpKind::Concat, "cat", {m, r}, {c});
  g.node(n).attrs["axis"] = int64_t(-1);
  g.outputs = {c};
  npu::QuantTable q = npu::calibrate(g, {{x, HostTensor({1, 4, 1}, randomData(4, 29))}}, "test");
  EXPECT_FLOAT_EQ(q.of(z), 1.0f / 127); // its own range, 0: the default
  EXPECT_FLOAT_EQ(q.of(m), 0.5f / 127);
  EXPECT_EQ(q.of(r), q.of(m));
  EXPECT_EQ(q.of(c), q.of(m));
  // m's values survive quantisation: -0.5 is -127 steps exactly, -0.125 within half a step.
  EXPECT_FLOAT_EQ(npu::fakeQuantise(-0.5f, q.of(m)), -0.5f);
  EXPECT_NEAR(npu::fakeQuantise(-0.125f, q.of(m)), -0.125f, 0.5f * q.of(m));
}

// A group the int8 kernels do not quantise is rejected by name, so it runs on the CPU.
TEST(Int8Fallback, UnquantisedKernelsAreRejectedByName) {
  Graph g; // a squeeze-excitation style gate: a per-channel tensor broadcast over the pixels
  auto x = g.addValue("x", {1, 8, 4, 4}, graph::DType::F32);
  auto s = g.addValue("gate", {1, 8, 1, 1}, graph::DType::F32);
  g.inputs = {x, s};
  auto y = g.addValue("y", {1, 8, 4, 4}, graph::DType::F32);
  g.addNode(graph::OpKind::Mul, "scale", {x, s}, {y});
  oneGroup(g, y);
  std::string why = npu::npuRejectReason(g, g.groups[0], int8Target());
  EXPECT_NE(why.find("int8 target: scale: a broadcast tensor operand (gate) is not quantised on "
                     "the NPU yet"),
            std::string::npos)
      << why;
  // The same group compiles for the fp16 sibling: the rejection is the quantisation's.
  EXPECT_EQ(npu::npuRejectReason(g, g.groups[0], isa::loadTarget(configPath("npu-base.yaml"))), "");
}

// A reduction long enough to wrap the int32 accumulator (2^17 products of up to 2^14) is refused.
TEST(Int8Fallback, Int32OverflowingReductionIsRejected) {
  const int64_t K = int64_t(1) << 17;
  Graph g;
  auto a = g.addValue("a", {1, K}, graph::DType::F32);
  g.inputs = {a};
  auto w = g.addConstant("b", {K, 1}, std::vector<float>(static_cast<size_t>(K), 1.0f));
  auto y = g.addValue("y", {1, 1}, graph::DType::F32);
  g.addNode(graph::OpKind::MatMul, "mm", {a, w}, {y});
  oneGroup(g, y);
  std::string why = npu::npuRejectReason(g, g.groups[0], int8Target());
  EXPECT_NE(why.find("could overflow the int32 accumulator"), std::string::npos) << why;
}

// The whole driver on a small CNN: NPU groups in int8, Softmax (no `exp` on the target) on the
// CPU with dequantisation at the segment boundary, through a package round trip.
TEST(Int8Model, TinyCnnMatchesQuantisedReference) {
  const std::string model = std::string(NPUC_SOURCE_DIR) + "/models/tinycnn.onnx";
  driver::CompiledModel m = driver::compileModel(model, int8Target(), {});
  ASSERT_TRUE(m.options.quant);
  int npuGroups = 0, cpuGroups = 0;
  for (const graph::FusedGroup &grp : m.graph.groups) {
    npuGroups += grp.placement == graph::Placement::Npu;
    cpuGroups += grp.placement == graph::Placement::Cpu;
  }
  EXPECT_GE(npuGroups, 5);
  EXPECT_GE(cpuGroups, 1);
  driver::CompiledModel loaded = driver::parsePackage(driver::packageBytes(m), "tinycnn-int8.npub");
  const graph::Value &inV = m.graph.value(m.graph.inputs.at(0));
  HostTensor in(inV.shape, randomData(static_cast<size_t>(numElements(inV.shape)), 11, -2.f, 2.f));
  driver::RunResult r = driver::runModel(loaded, {{inV.name, in}});
  const ValueId yv = m.graph.outputs.at(0);
  const HostTensor &got = r.outputs.at(m.graph.value(yv).name);
  std::map<ValueId, HostTensor> ins = {{inV.id, in}};
  HostTensor qref = npu::runQuantisedReference(m.graph, *m.options.quant, ins).at(yv);
  HostTensor ref = graph::runReference(m.graph, ins).at(yv);
  ASSERT_EQ(got.shape, qref.shape);
  // The output is a CPU Softmax over dequantised int8 values, identical in both up to the CPU
  // code generator's fp32 rounding; a one-step difference inside the NPU part moves a
  // probability by far less than 1e-2.
  for (size_t i = 0; i < got.data.size(); ++i)
    EXPECT_NEAR(got.data[i], qref.data[i], 1e-2) << i;
  EXPECT_GE(cosine(got.data, ref.data), 0.99);
  auto argmax = [](const std::vector<float> &v) {
    return std::max_element(v.begin(), v.end()) - v.begin();
  };
  EXPECT_EQ(argmax(got.data), argmax(ref.data));
}

// Tiling and buffering change only the order of exact int32 sums and where tiles live, so every
// ablation gives bit-identical int8 results.
TEST(Int8Model, AblationsAreBitIdentical) {
  const std::string model = std::string(NPUC_SOURCE_DIR) + "/models/tinycnn.onnx";
  auto outputOf = [&](const npu::CompileOptions &opt) {
    driver::CompiledModel m = driver::compileModel(model, int8Target(), {}, opt);
    const graph::Value &inV = m.graph.value(m.graph.inputs.at(0));
    HostTensor in(inV.shape, randomData(static_cast<size_t>(numElements(inV.shape)), 12));
    return driver::runModel(m, {{inV.name, in}}).outputs.begin()->second.data;
  };
  const std::vector<float> base = outputOf({});
  npu::CompileOptions single, naive, noPrefetch, noBanks, noResidency;
  single.doubleBuffer = false;
  naive.naiveTiling = true;
  noPrefetch.crossGroupPrefetch = false;
  noBanks.bankAware = false;
  noResidency.residency = false;
  for (const npu::CompileOptions &o : {single, naive, noPrefetch, noBanks, noResidency})
    EXPECT_EQ(outputOf(o), base);
  // Residency acts on the int8 tensors here (so the last comparison exercises it), at one byte
  // per element.
  driver::CompiledModel m = driver::compileModel(model, int8Target(), {}, {});
  int kept = 0;
  for (const npu::Segment &s : m.npuSegments)
    for (const npu::ResidencyEntry &e : s.residency)
      if (e.dropped.empty()) {
        ++kept;
        auto v = m.graph.findValue(e.name);
        ASSERT_TRUE(v) << e.name;
        EXPECT_EQ(e.bytes, numElements(m.graph.value(*v).shape)) << e.name;
      }
  EXPECT_GT(kept, 0);
}

// The other bundled models (depthwise + average pool, branches with CPU groups between NPU
// segments, an MLP) on their bundled inputs: the NPU tracks the quantised reference far more
// closely than either tracks fp32. Where an element of a group boundary lands within fp32
// rounding of a tie, the NPU and the reference round it to neighbouring int8 steps; later
// layers carry such one-step differences on, so the bound is on the direction (cosine), not
// per element.
class Int8BundledTest : public ::testing::TestWithParam<std::string> {};

TEST_P(Int8BundledTest, TracksQuantisedReference) {
  const std::string base = std::string(NPUC_SOURCE_DIR) + "/models/" + GetParam();
  driver::CompiledModel m = driver::compileModel(base + ".onnx", int8Target(), {});
  ASSERT_TRUE(m.options.quant);
  const graph::Value &inV = m.graph.value(m.graph.inputs.at(0));
  HostTensor in = readNpy(base + "_input.npy");
  driver::RunResult r = driver::runModel(m, {{inV.name, in}});
  const ValueId yv = m.graph.outputs.at(0);
  const HostTensor &got = r.outputs.at(m.graph.value(yv).name);
  std::map<ValueId, HostTensor> ins = {{inV.id, in}};
  HostTensor qref = npu::runQuantisedReference(m.graph, *m.options.quant, ins).at(yv);
  HostTensor ref = graph::runReference(m.graph, ins).at(yv);
  const double cq = cosine(got.data, qref.data), cf = cosine(got.data, ref.data);
  std::printf("%s: cosine vs quantised reference %.7f, vs fp32 %.7f\n", GetParam().c_str(), cq, cf);
  EXPECT_GE(cq, 0.9999);
  EXPECT_GE(cf, 0.99);
}

INSTANTIATE_TEST_SUITE_P(Int8, Int8BundledTest, ::testing::Values("dwnet", "branchy", "mlp"));

} // namespace
} // namespace npuc::test
