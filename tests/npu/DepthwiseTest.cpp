// DepthwiseTest.cpp - depthwise convolutions (group == C == OC) compiled for the vector unit
// (npu/kernels/LowerDepthwise.cpp), simulated with the hazard checker on, and compared with the
// graph's fp32 reference executor; and the tensor-unit path on a target whose vector unit has no
// `mac`.
//
// Tolerance (derived): inputs are fp16 values in both computations and the weights are fp32 in
// both. The vector unit rounds each product and each partial sum to fp32 (taps + 3 roundings,
// bias and residual adds included, of at most 2^-24 relative each, bounded by
// (taps + 2) * 2^-23 * (sum|x*w| + |bias| + |residual|)), then rounds to fp16 (2^-11 |y|, plus
// half the fp16 subnormal spacing, 2^-25, below 2^-14).
#include "NpuTestUtil.h"

#include "graph/Reference.h"
#include "npu/kernels/Plan.h"
#include "support/Npy.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <gtest/gtest.h>
#include <map>

namespace npuc::test {
namespace {

using graph::Graph;

struct DwCase {
  int64_t C, H, W, K, S, D;
  int64_t padLo, padHi; // top/left and bottom/right
  bool bias, clip;
  std::string target = "npu-base.yaml";
  bool doubleBuffer = true;
  int64_t N = 1;
  bool residual = false; // + Add(a second input of the output's shape) after the conv [and clip]
};

std::ostream &operator<<(std::ostream &os, const DwCase &c) {
  return os << "C" << c.C << "_H" << c.H << "_W" << c.W << "_K" << c.K << "_S" << c.S << "_D" << c.D
            << "_P" << c.padLo << c.padHi << (c.bias ? "_bias" : "") << (c.clip ? "_clip" : "")
            << "_" << c.target << (c.doubleBuffer ? "" : "_single") << "_N" << c.N
            << (c.residual ? "_res" : "");
}

struct DwGraph {
  Graph g;
  HostTensor in, res;
  std::vector<float> w;
  int64_t OH = 0, OW = 0;
};

// Conv(group = C) [+ Clip(0, 6)] as one group; weights fp32 unless `halfWeights`.
DwGraph depthwiseGraph(const DwCase &c, bool halfWeights) {
  DwGraph r;
  r.OH = (c.H + c.padLo + c.padHi - c.D * (c.K - 1) - 1) / c.S + 1;
  r.OW = (c.W + c.padLo + c.padHi - c.D * (c.K - 1) - 1) / c.S + 1;
  Graph &g = r.g;
  auto x = g.addValue("x", {c.N, c.C, c.H, c.W}, graph::DType::F32);
  g.inputs = {x};
  r.w = randomData(static_cast<size_t>(c.C * c.K * c.K), 41);
  if (halfWeights)
    r.w = halves(r.w);
  std::vector<graph::ValueId> ins = {x, g.addConstant("w", {c.C, 1, c.K, c.K}, r.w)};
  if (c.bias)
    ins.push_back(g.addConstant("b", {c.C}, randomData(static_cast<size_t>(c.C), 42, -2.f, 2.f)));
  auto y = g.addValue("y", {c.N, c.C, r.OH, r.OW}, graph::DType::F32);
  auto conv = g.addNode(graph::OpKind::Conv, "dw", ins, {y});
  g.node(conv).attrs["strides"] = std::vector<int64_t>{c.S, c.S};
  g.node(conv).attrs["pads"] = std::vector<int64_t>{c.padLo, c.padLo, c.padHi, c.padHi};
  g.node(conv).attrs["dilations"] = std::vector<int64_t>{c.D, c.D};
  g.node(conv).attrs["group"] = c.C;
  auto out = y;
  if (c.clip) {
    out = g.addValue("r", {c.N, c.C, r.OH, r.OW}, graph::DType::F32);
    auto clip = g.addNode(graph::OpKind::Clip, "relu6", {y}, {out});
    g.node(clip).attrs["min"] = 0.0;
    g.node(clip).attrs["max"] = 6.0;
  }
  if (c.residual) {
    auto rv = g.addValue("res", {c.N, c.C, r.OH, r.OW}, graph::DType::F32);
    g.inputs.push_back(rv);
    auto sum = g.addValue("sum", {c.N, c.C, r.OH, r.OW}, graph::DType::F32);
    g.addNode(graph::OpKind::Add, "add", {out, rv}, {sum});
    out = sum;
    r.res = HostTensor({c.N, c.C, r.OH, r.OW},
                       halves(randomData(static_cast<size_t>(c.N * c.C * r.OH * r.OW), 44)));
  }
  oneGroup(g, out);
  // Inputs up to +-4 so that Clip(0, 6) cuts some outputs on both sides.
  r.in = HostTensor({c.N, c.C, c.H, c.W},
                    halves(randomData(static_cast<size_t>(c.N * c.C * c.H * c.W), 43, -4.f, 4.f)));
  return r;
}

// Compiles and simulates (hazard-checked), then compares every output with the reference.
NpuRun checkAgainstReference(const DwCase &c, const isa::Target &t, bool halfWeights) {
  DwGraph d = depthwiseGraph(c, halfWeights);
  npu::CompileOptions opt;
  opt.doubleBuffer = c.doubleBuffer;
  std::vector<HostTensor> ins = {d.in};
  std::map<graph::ValueId, HostTensor> refIns = {{d.g.inputs[0], d.in}};
  if (c.residual) {
    ins.push_back(d.res);
    refIns[d.g.inputs[1]] = d.res;
  }
  NpuRun r = compileAndRun(d.g, t, ins, opt);
  auto ref = graph::runReference(d.g, refIns);
  const HostTensor &want = ref.at(d.g.outputs[0]);
  EXPECT_EQ(r.out.shape, want.shape);
  const std::vector<float> &bias =
      c.bias ? *d.g.value(d.g.node(0).inputs[2]).f32 : std::vector<float>{};
  const int64_t taps = c.K * c.K;
  int64_t checked = 0;
  for (int64_t ch = 0; ch < c.N * c.C; ++ch) // image-major: (n, channel) pairs
    for (int64_t oy = 0; oy < d.OH; ++oy)
      for (int64_t ox = 0; ox < d.OW; ++ox) {
        double mag = c.bias ? std::fabs(bias[static_cast<size_t>(ch % c.C)]) : 0.0;
        for (int64_t kh = 0; kh < c.K; ++kh)
          for (int64_t kw = 0; kw < c.K; ++kw) {
            int64_t iy = oy * c.S - c.padLo + kh * c.D, ix = ox * c.S - c.padLo + kw * c.D;
            if (iy >= 0 && iy < c.H && ix >= 0 && ix < c.W)
              mag += std::fabs(double(d.in.data[static_cast<size_t>((ch * c.H + iy) * c.W + ix)]) *
                               d.w[static_cast<size_t>(((ch % c.C) * c.K + kh) * c.K + kw)]);
          }
        size_t at = static_cast<size_t>((ch * d.OH + oy) * d.OW + ox);
        if (c.residual) // one more fp32 rounding, of a sum bounded by mag + |res|
          mag += std::fabs(d.res.data[at]);
        double y = want.data[at];
        double tol = std::ldexp(std::fabs(y), -11) + (taps + 2) * std::ldexp(mag, -23) + 0x1p-25;
        EXPECT_NEAR(r.out.data[at], y, tol) << c << " ch=" << ch << " oy=" << oy << " ox=" << ox;
        if (std::fabs(r.out.data[at] - y) > tol)
          return r; // one report is enough
        ++checked;
      }
  EXPECT_EQ(checked, c.N * c.C * d.OH * d.OW);
  return r;
}

// The kernel's tile (rows, channels) from its tiling text.
std::pair<int64_t, int64_t> tileOf(const std::string &tiling) {
  long long rows = 0, cols = 0, ch = 0;
  size_t at = tiling.find("tile = ");
  if (at == std::string::npos ||
      std::sscanf(tiling.c_str() + at, "tile = %lld output rows x %lld cols x %lld channels", &rows,
                  &cols, &ch) != 3)
    return {0, 0};
  return {rows, ch};
}

class DepthwiseKernel : public ::testing::TestWithParam<DwCase> {};

TEST_P(DepthwiseKernel, MatchesReferenceOnTheVectorUnit) {
  const DwCase c = GetParam();
  isa::Target t = isa::loadTarget(configPath(c.target));
  NpuRun r = checkAgainstReference(c, t, false);
  const std::string &tiling = r.seg.groupInfo.at(0).tiling;
  EXPECT_NE(tiling.find("depthwise on the vector unit"), std::string::npos) << tiling;
  int64_t macOps = 0;
  for (const isa::Instr &in : r.seg.program.instrs)
    macOps += in.desc->semantics == isa::Semantics::Vector &&
              in.get("op") == t.vector.opCode(isa::VecOp::Mac);
  EXPECT_GT(macOps, 0);
  EXPECT_EQ(r.stats.macs, 0); // nothing ran on the tensor unit
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, DepthwiseKernel,
    ::testing::Values(DwCase{8, 13, 11, 3, 1, 1, 1, 1, true, true},   // pad 1, Relu6
                      DwCase{7, 13, 11, 3, 2, 1, 1, 1, false, false}, // stride 2, odd C
                      DwCase{16, 12, 10, 3, 1, 2, 2, 2, true, false}, // dilation 2
                      DwCase{12, 11, 13, 5, 1, 1, 2, 2, true, true},  // 5x5
                      DwCase{10, 12, 12, 3, 2, 1, 0, 1, true, true},  // SAME-style pads
                      DwCase{64, 40, 40, 3, 2, 1, 1, 1, true, true},  // several row tiles
                      DwCase{24, 9, 9, 3, 1, 1, 1, 1, true, true, "npu-base.yaml", false},
                      DwCase{9, 10, 7, 3, 2, 1, 1, 1, true, true, "npu-base.yaml", true, 2},
                      DwCase{20, 9, 8, 3, 1, 1, 1, 1, true, true, "npu-base.yaml", true, 1, true}),
    ParamName());

// On npu-tiny (32 KiB accumulator, double-buffered: 4096 fp32 per tile) a 120-wide row of 37
// channels (4440 values) cannot be one tile: the kernel blocks channels and rows.
TEST(DepthwiseKernel, BlocksChannelsAndRowsWhenTheTileIsTooLarge) {
  DwCase c{37, 5, 120, 3, 1, 1, 1, 1, true, true, "npu-tiny.yaml"};
  NpuRun r = checkAgainstReference(c, isa::loadTarget(configPath(c.target)), false);
  auto [rows, channels] = tileOf(r.seg.groupInfo.at(0).tiling);
  EXPECT_GT(rows, 0) << r.seg.groupInfo.at(0).tiling;
  EXPECT_LT(rows, 5);
  EXPECT_GT(channels, 0);
  EXPECT_LT(channels, 37);
}

// Without `mac` in the vector unit (npu-base with the op removed from its list) the depthwise
// conv stays a grouped conv on the tensor unit, and is still correct (fp16 weights, which that
// path rounds to, so the same bound holds).
TEST(DepthwiseKernel, TargetWithoutMacUsesTheTensorUnit) {
  std::string yaml = readFile(configPath("npu-base.yaml"));
  const std::string from = "muladd, mac]", to = "muladd]";
  ASSERT_NE(yaml.find(from), std::string::npos) << "npu-base's vector op list changed";
  yaml.replace(yaml.find(from), from.size(), to);
  isa::Target t = isa::parseTarget(yaml, "npu-base-no-mac");
  ASSERT_FALSE(t.vector.supports(isa::VecOp::Mac));
  DwCase c{8, 13, 11, 3, 1, 1, 1, 1, true, true};
  NpuRun r = checkAgainstReference(c, t, true);
  const std::string &tiling = r.seg.groupInfo.at(0).tiling;
  EXPECT_NE(tiling.find("implicit GEMM"), std::string::npos) << tiling;
  EXPECT_EQ(tiling.find("vector unit"), std::string::npos) << tiling;
  EXPECT_EQ(r.stats.macs, 8 * 13 * 11 * 9);
}

} // namespace
} // namespace npuc::test
