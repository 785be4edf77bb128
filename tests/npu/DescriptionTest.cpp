// DescriptionTest.cpp - the compiler follows the target description: a copy of npu-base with one
// more vector op and a wider vop field compiles a group the original must leave to the CPU, and
// the program survives encode -> decode with the new layout and runs correctly on the simulator.
#include "NpuTestUtil.h"

#include "npu/kernels/Plan.h"
#include "support/Npy.h"

#include <cmath>
#include <gtest/gtest.h>

namespace npuc::test {
namespace {

using graph::Graph;

// npu-base, plus `sigmoid` in the vector unit's op list and vop's n0 widened from 16 to 20 bits
// (every later vop field moves up by 4 bits).
std::string modifiedBase() {
  std::string y = readFile(configPath("npu-base.yaml"));
  const std::string ops = "ops: [copy, add, sub, mul, max, min, relu, clip, muladd, mac]";
  EXPECT_NE(y.find(ops), std::string::npos) << "npu-base's vector op list changed";
  y.replace(y.find(ops), ops.size(),
            "ops: [copy, add, sub, mul, max, min, relu, clip, muladd, mac, sigmoid]");
  size_t vop = y.find("mnemonic: vop");
  const std::string n0 = "{name: n0, width: 16}";
  size_t at = y.find(n0, vop);
  EXPECT_NE(at, std::string::npos) << "npu-base's vop n0 field changed";
  y.replace(at, n0.size(), "{name: n0, width: 20}");
  return y;
}

Graph convSigmoid(HostTensor &in, std::vector<float> &w) {
  Graph g;
  auto x = g.addValue("x", {1, 8, 6, 6}, graph::DType::F32);
  g.inputs = {x};
  w = halves(randomData(8 * 8 * 9, 31));
  auto wv = g.addConstant("w", {8, 8, 3, 3}, w);
  auto y = g.addValue("y", {1, 8, 6, 6}, graph::DType::F32);
  auto s = g.addValue("s", {1, 8, 6, 6}, graph::DType::F32);
  auto n = g.addNode(graph::OpKind::Conv, "conv", {x, wv}, {y});
  g.node(n).attrs["pads"] = std::vector<int64_t>{1, 1, 1, 1};
  g.addNode(graph::OpKind::Sigmoid, "sig", {y}, {s});
  oneGroup(g, s);
  in = HostTensor({1, 8, 6, 6}, halves(randomData(8 * 36, 32)));
  return g;
}

TEST(Description, AddedVectorOpAndWiderFieldFlowThroughCompilerAndSimulator) {
  isa::Target base = isa::loadTarget(configPath("npu-base.yaml"));
  isa::Target mod = isa::parseTarget(modifiedBase(), "npu-base+sigmoid");
  ASSERT_EQ(mod.findInstr("vop")->field("n0")->width, 20);
  EXPECT_EQ(mod.findInstr("vop")->field("n1")->lsb, base.findInstr("vop")->field("n1")->lsb + 4);

  HostTensor in;
  std::vector<float> w;
  Graph g = convSigmoid(in, w);
  EXPECT_NE(npu::npuRejectReason(g, g.groups[0], base).find("no 'sigmoid' op"), std::string::npos);
  ASSERT_EQ(npu::npuRejectReason(g, g.groups[0], mod), "");

  NpuRun r = compileAndRun(g, mod, {in});
  // The program in the new binary layout decodes to the same instructions.
  isa::Program back = isa::decode(mod, isa::encode(mod, r.seg.program));
  ASSERT_EQ(back.instrs.size(), r.seg.program.instrs.size());
  for (size_t i = 0; i < back.instrs.size(); ++i)
    for (const auto &[name, v] : r.seg.program.instrs[i].fields())
      ASSERT_EQ(back.instrs[i].get(name), v) << "instruction " << i << " field " << name;

  // sigmoid(conv) against fp64: the conv is exact to the fp32-sum bound, sigmoid is computed in
  // fp32 and rounded once to fp16 (<= 2^-11 relative), so 2^-10 relative covers both.
  for (int64_t oc = 0; oc < 8; ++oc)
    for (int64_t oy = 0; oy < 6; ++oy)
      for (int64_t ox = 0; ox < 6; ++ox) {
        double s = 0;
        for (int64_t ic = 0; ic < 8; ++ic)
          for (int64_t kh = 0; kh < 3; ++kh)
            for (int64_t kw = 0; kw < 3; ++kw) {
              int64_t iy = oy - 1 + kh, ix = ox - 1 + kw;
              if (iy >= 0 && iy < 6 && ix >= 0 && ix < 6)
                s += double(in.data[static_cast<size_t>((ic * 6 + iy) * 6 + ix)]) *
                     w[static_cast<size_t>(((oc * 8 + ic) * 3 + kh) * 3 + kw)];
            }
        double want = 1.0 / (1.0 + std::exp(-s));
        EXPECT_NEAR(r.out.data[static_cast<size_t>((oc * 6 + oy) * 6 + ox)], want,
                    std::ldexp(want, -10) + 1e-6);
      }
}

} // namespace
} // namespace npuc::test
