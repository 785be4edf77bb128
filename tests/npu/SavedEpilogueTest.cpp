// SavedEpilogueTest.cpp - epilogues that read an earlier value of their own chain again (x * f(x):
// erf-GELU, SiLU; a square), fused after a matmul, a conv, a depthwise conv on the vector unit, a
// pool, or in an elementwise chain (EpilogueOp::Operand::Saved, Plan.h). The
// value is saved into a tile buffer when the chain reaches it, so the group moves only its input,
// its weights and its output; the outputs are checked against the fp32 reference on the simulator
// with its hazard checker on, and the DRAM traffic against those three tensors' bytes.
#include "NpuTestUtil.h"

#include "graph/Passes.h"
#include "npu/kernels/Plan.h"

#include <cmath>
#include <gtest/gtest.h>

namespace npuc::test {
namespace {

using graph::Graph;
using graph::OpKind;
using graph::ValueId;

ValueId scalar(Graph &g, const std::string &name, float v) {
  return g.addConstant(name, {}, {v});
}

// GELU as torch exports it at opsets below 20: x * (erf(x / sqrt 2) + 1) * 0.5.
ValueId gelu(Graph &g, ValueId x) {
  ValueId a = addOp(g, OpKind::Div, "gelu.div", {x, scalar(g, "sqrt2", std::sqrt(2.f))});
  ValueId e = addOp(g, OpKind::Erf, "gelu.erf", {a});
  ValueId c = addOp(g, OpKind::Add, "gelu.add", {e, scalar(g, "one", 1.f)});
  ValueId m = addOp(g, OpKind::Mul, "gelu.mul", {x, c});
  return addOp(g, OpKind::Mul, "gelu.half", {m, scalar(g, "half", 0.5f)});
}

struct Case {
  Graph g;
  ValueId x = graph::kNoValue, y = graph::kNoValue;
  int64_t weightElems = 0;
};

// A Linear layer [tokens, k] x [k, n] with bias, then GELU.
Case linearGelu(int64_t tokens, int64_t k, int64_t n) {
  Case c;
  c.x = c.g.addValue("x", {1, tokens, k}, graph::DType::F32);
  c.g.inputs = {c.x};
  ValueId w = c.g.addConstant("w", {k, n}, halves(randomData(size_t(k * n), 3, -0.2f, 0.2f)));
  ValueId b = c.g.addConstant("b", {n}, halves(randomData(size_t(n), 4, -0.5f, 0.5f)));
  ValueId mm = addOp(c.g, OpKind::MatMul, "fc", {c.x, w});
  c.y = gelu(c.g, addOp(c.g, OpKind::Add, "fc.bias", {mm, b}));
  c.weightElems = k * n;
  return c;
}

// A 3x3 conv with bias (depthwise: one group per channel, oc == ch), then x * gate(x): SiLU with
// the default sigmoid gate.
Case convSilu(int64_t ch, int64_t hw, int64_t oc, bool depthwise = false,
              OpKind gate = OpKind::Sigmoid) {
  Case c;
  c.x = c.g.addValue("x", {1, ch, hw, hw}, graph::DType::F32);
  c.g.inputs = {c.x};
  const int64_t cin = depthwise ? 1 : ch;
  ValueId w = c.g.addConstant("w", {oc, cin, 3, 3},
                              halves(randomData(size_t(oc * cin * 9), 5, -0.3f, 0.3f)));
  ValueId b = c.g.addConstant("b", {oc}, halves(randomData(size_t(oc), 6, -0.2f, 0.2f)));
  ValueId conv =
      addOp(c.g, OpKind::Conv, "conv", {c.x, w, b},
            {{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"group", depthwise ? ch : int64_t(1)}});
  ValueId s = addOp(c.g, gate, "silu.gate", {conv});
  c.y = addOp(c.g, OpKind::Mul, "silu.mul", {conv, s});
  c.weightElems = oc * cin * 9;
  return c;
}

// A 2x2/2 max pool, then relu -> tanh -> mul(tanh, relu): the relu's value read again.
Case poolThenReusedRelu(int64_t ch, int64_t hw) {
  Case c;
  c.x = c.g.addValue("x", {1, ch, hw, hw}, graph::DType::F32);
  c.g.inputs = {c.x};
  ValueId p = addOp(
      c.g, OpKind::MaxPool, "pool", {c.x},
      {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}});
  ValueId r = addOp(c.g, OpKind::Relu, "relu", {p});
  ValueId t = addOp(c.g, OpKind::Tanh, "tanh", {r});
  c.y = addOp(c.g, OpKind::Mul, "mul", {t, r});
  return c;
}

// An elementwise chain on a streamed input, relu -> sigmoid, then either mul(relu, sigmoid) and
// the square of that product (mul(v, v): the chain value itself read again), or (`outOfOrder`)
// the sigmoid's square, then times the relu: the sigmoid's value gets the first slot, the relu's
// (earlier in the chain, so saved first) the second.
Case eltwiseReuse(int64_t ch, int64_t hw, bool outOfOrder) {
  Case c;
  c.x = c.g.addValue("x", {1, ch, hw, hw}, graph::DType::F32);
  c.g.inputs = {c.x};
  ValueId r = addOp(c.g, OpKind::Relu, "relu", {c.x});
  ValueId s = addOp(c.g, OpKind::Sigmoid, "sig", {r});
  if (outOfOrder) {
    ValueId q = addOp(c.g, OpKind::Mul, "square", {s, s});
    c.y = addOp(c.g, OpKind::Mul, "mul", {q, r});
  } else {
    ValueId m = addOp(c.g, OpKind::Mul, "mul", {r, s});
    c.y = addOp(c.g, OpKind::Mul, "square", {m, m});
  }
  return c;
}

// Attention-style scores x x^T of an activation (the Transpose folds into the batched matmul's
// strides; grouped by hand, as fusion leaves a Transpose whose input is read elsewhere on its own),
// then relu -> mul(relu, relu).
Case scoresSquared(int64_t heads, int64_t tokens, int64_t d) {
  Case c;
  c.x = c.g.addValue("x", {heads, tokens, d}, graph::DType::F32);
  c.g.inputs = {c.x};
  ValueId t = addOp(c.g, OpKind::Transpose, "kt", {c.x}, {{"perm", std::vector<int64_t>{0, 2, 1}}});
  ValueId s = addOp(c.g, OpKind::MatMul, "scores", {c.x, t});
  ValueId r = addOp(c.g, OpKind::Relu, "relu", {s});
  c.y = addOp(c.g, OpKind::Mul, "square", {r, r});
  oneGroup(c.g, c.y);
  c.g.groups[0].anchor = c.g.value(s).producer;
  return c;
}

// Fuses the case into groups (it must be one) and runs it on `target` with kernel `kind` (whose
// tiling text starts with `tiling`): the plan saves `saved` chain values, each read once, the
// outputs match the reference, and DRAM moves input, constants and output once.
void check(Case &c, const std::string &target, size_t epilogueOps, size_t saved = 1,
           npu::KernelKind kind = npu::KernelKind::Matmul,
           const std::string &tiling = "implicit GEMM") {
  c.g.outputs = {c.y};
  if (c.g.groups.empty())
    graph::fuseOps(c.g);
  ASSERT_EQ(c.g.groups.size(), 1u) << "the chain fuses into its anchor's group";
  c.g.groups[0].placement = graph::Placement::Npu;
  isa::Target t = isa::loadTarget(configPath(target));
  npu::Hw hw;
  ASSERT_EQ(npu::Hw::derive(t, hw), "");
  const npu::GroupPlan plan = npu::planGroup(c.g, c.g.groups[0], hw);
  ASSERT_EQ(plan.reject, "");
  EXPECT_EQ(plan.kind, kind);
  ASSERT_EQ(plan.epilogue.size(), epilogueOps);
  size_t saves = 0, reads = 0;
  for (const npu::EpilogueOp &e : plan.epilogue) {
    saves += e.save;
    reads += e.operand == npu::EpilogueOp::Operand::Saved && !e.save;
  }
  EXPECT_EQ(saves, saved);
  EXPECT_EQ(reads, saved);

  const graph::Value &xv = c.g.value(c.x);
  HostTensor in(xv.shape, halves(randomData(size_t(numElements(xv.shape)), 7, -2.f, 2.f)));
  NpuRun r = compileAndRun(c.g, t, {in});
  EXPECT_EQ(r.seg.groupInfo.at(0).tiling.rfind(tiling, 0), 0u) << r.seg.groupInfo.at(0).tiling;
  expectMatchesReference(c.g, c.x, c.y, in, r.out);
  // The input (with the halos of row tiles where a window needs them) and every constant
  // (weights, bias, the epilogue's scalars) read, the output written once, nothing else: the
  // saved value never leaves the chip.
  using sim::DramClass;
  const sim::DramTraffic &traffic = r.stats.dramByClass;
  EXPECT_GE(traffic.readOf(DramClass::Input), numElements(xv.shape) * 2);
  EXPECT_EQ(traffic.readOf(DramClass::Intermediate), 0);
  EXPECT_EQ(traffic.writtenOf(DramClass::Intermediate), 0);
  // (the constant image pads each constant to the DRAM alignment; the padding is not read)
  EXPECT_LE(traffic.readOf(DramClass::Constant), int64_t(r.seg.constImage.size()));
  EXPECT_GE(traffic.readOf(DramClass::Constant), c.weightElems * 2);
  EXPECT_EQ(traffic.writtenOf(DramClass::Output), numElements(c.g.value(c.y).shape) * 2);
  EXPECT_EQ(r.stats.dramBytesRead + r.stats.dramBytesWritten,
            traffic.readOf(DramClass::Input) + traffic.readOf(DramClass::Constant) +
                traffic.writtenOf(DramClass::Output));
}

TEST(SavedEpilogue, LinearThenErfGeluIsOneTensorUnitGroup) {
  // bias, save, div (a multiply by 1/sqrt 2), erf, add, mul by the saved value, mul by 0.5
  Case c = linearGelu(40, 64, 96);
  check(c, "npu-transformer.yaml", 7);
}

TEST(SavedEpilogue, ConvThenSiluIsOneTensorUnitGroup) {
  // save, sigmoid, mul by the saved value (the conv's bias is its own, not an epilogue op)
  Case c = convSilu(16, 12, 24);
  check(c, "npu-transformer.yaml", 3);
}

TEST(SavedEpilogue, DepthwiseConvThenSiluOnTheVectorUnit) {
  Case c = convSilu(24, 10, 24, true);
  check(c, "npu-transformer.yaml", 3, 1, npu::KernelKind::Matmul, "depthwise on the vector unit");
}

TEST(SavedEpilogue, PoolThenAValueReadAgain) {
  // relu, save, tanh, mul by the saved value
  Case c = poolThenReusedRelu(16, 12);
  check(c, "npu-transformer.yaml", 4, 1, npu::KernelKind::Pool, "max pool");
}

TEST(SavedEpilogue, SlotsNumberedOutOfChainOrder) {
  // relu, save (slot 1), sigmoid, save (slot 0), mul by slot 0, mul by slot 1
  Case c = eltwiseReuse(16, 9, true);
  check(c, "npu-transformer.yaml", 6, 2, npu::KernelKind::Eltwise, "elementwise");
}

TEST(SavedEpilogue, ElementwiseChainSquaresItsOwnValue) {
  // relu, save, sigmoid, mul by the saved relu, save, mul by the saved product: two slots
  Case c = eltwiseReuse(16, 9, false);
  check(c, "npu-transformer.yaml", 6, 2, npu::KernelKind::Eltwise, "elementwise");
}

TEST(SavedEpilogue, BatchedMatmulThenASquare) {
  // relu, save, mul by the saved value
  Case c = scoresSquared(2, 9, 20);
  check(c, "npu-transformer.yaml", 3, 1, npu::KernelKind::BatchMatmul, "batched matmul");
}

// int8 targets do not track a saved value's scale: a conv times its own ReLU (ops the
// int8 kernels run otherwise) is refused with the reason, not computed on int8 bytes as
// if fp16.
TEST(SavedEpilogue, Int8RefusesWithTheReason) {
  Case c = convSilu(8, 6, 16, false, OpKind::Relu);
  c.g.outputs = {c.y};
  graph::fuseOps(c.g);
  ASSERT_EQ(c.g.groups.size(), 1u);
  isa::Target t = isa::loadTarget(configPath("npu-int8.yaml"));
  const std::string why = npu::npuRejectReason(c.g, c.g.groups[0], t, false);
  EXPECT_NE(why.find("reads a chain value again (x * f(x)) is not quantised"), std::string::npos)
      << why;
}

} // namespace
} // namespace npuc::test

namespace npuc::test {
namespace {

// A saved chain value is a tile buffer, not DRAM traffic: the roofline's compulsory bytes are the
// input and the output once (2 x 2 bytes per element), so this chain of six vector ops per
// element (16 lanes, 16 DRAM bytes per cycle on npu-transformer) is vector-bound; counting its two
// saves as tensors read would make it DRAM-bound (8 bytes per element).
TEST(SavedEpilogue, SavesAreNotCompulsoryDramBytes) {
  Case c = eltwiseReuse(16, 9, false);
  c.g.outputs = {c.y};
  graph::fuseOps(c.g);
  ASSERT_EQ(c.g.groups.size(), 1u);
  c.g.groups[0].placement = graph::Placement::Npu;
  isa::Target t = isa::loadTarget(configPath("npu-transformer.yaml"));
  const int64_t E = 16 * 9 * 9;
  HostTensor in({1, 16, 9, 9}, halves(randomData(size_t(E), 7, -2.f, 2.f)));
  NpuRun r = compileAndRun(c.g, t, {in});
  const npu::GroupInfo &gi = r.seg.groupInfo.at(0);
  EXPECT_EQ(gi.bound, "vector") << gi.tiling;
  EXPECT_GT(gi.rooflineCycles, E * 4 / 16) << gi.tiling;
}

} // namespace
} // namespace npuc::test
