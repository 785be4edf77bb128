// BatchMatmulTest.cpp - MatMul of two activations on the tensor unit
// (npu/kernels/LowerBatchMatmul.cpp): 2-D, batched 3-D/4-D and broadcast shapes with odd sizes,
// k-chunked products, Transposes folded into the operand loads and fused epilogues, compiled for
// npu-base and npu-tiny, simulated with the hazard checker on and compared with the graph reference
// executor.
//
// Tolerance (derived): inputs are fp16 values and an fp16 x fp16 product is exact in fp32, so
// the NPU and the reference differ only by their fp32 summation orders (each within
// (K-1) * 2^-24 * sum|a_k b_k| of the exact sum, and sum|a_k b_k| <= K for |a|, |b| <= 1), the
// epilogue's fp32 ops (each 2^-24 relative) and the final rounding to fp16 (2^-11 * |y|). A wrong
// index is off by O(1), far above it.
#include "NpuTestUtil.h"

#include "graph/Reference.h"

#include <cmath>
#include <fmt/format.h>
#include <gtest/gtest.h>

namespace npuc::test {
namespace {

using graph::Graph;
using graph::ValueId;

struct Case {
  std::string name, target;
  Shape a, b;                          // the MatMul's operands as it sees them
  std::vector<int64_t> transposeB;     // non-empty: B = Transpose(x, perm) inside the group
  float scale = 0;                     // non-zero: Mul by this scalar constant after the MatMul
  bool mask = false;                   // Add of a runtime tensor of the output's shape
  bool bias = false;                   // Add of a constant per output column (the last axis)
  bool constA = false, constB = false; // the operand is a constant (fp16 values)
  // The mask's shape when it is not the output's: the output's matrix broadcast over the batch
  // dims (an attention mask); a constant mask is applied with Min (a causal bound), a runtime
  // one with Add.
  Shape maskShape = {};
  bool maskConstant = false;
  friend std::ostream &operator<<(std::ostream &os, const Case &c) {
    return os << c.name << "_" << c.target;
  }
};

Shape matmulShape(const Shape &a, const Shape &b) {
  size_t r = std::max(a.size(), b.size());
  Shape y(r);
  for (size_t i = 0; i + 2 < r; ++i) {
    int64_t da = i + a.size() >= r ? a[i + a.size() - r] : 1;
    int64_t db = i + b.size() >= r ? b[i + b.size() - r] : 1;
    y[i] = std::max(da, db);
  }
  y[r - 2] = a[a.size() - 2];
  y[r - 1] = b[b.size() - 1];
  return y;
}

struct Built {
  Graph g;
  std::vector<HostTensor> inputs;
  int64_t K = 0;
};

Built build(const Case &c) {
  Built r;
  Graph &g = r.g;
  auto input = [&](const std::string &name, const Shape &s) {
    ValueId v = g.addValue(name, s, graph::DType::F32);
    g.inputs.push_back(v);
    r.inputs.emplace_back(s, halves(randomData(static_cast<size_t>(numElements(s)),
                                               static_cast<unsigned>(17 + r.inputs.size()))));
    return v;
  };
  auto constant = [&](const std::string &name, const Shape &s, unsigned seed) {
    return g.addConstant(name, s, halves(randomData(static_cast<size_t>(numElements(s)), seed)));
  };
  ValueId a = c.constA ? constant("a", c.a, 41) : input("a", c.a);
  ValueId b;
  if (c.constB) {
    b = constant("b", c.b, 43);
  } else if (c.transposeB.empty()) {
    b = input("b", c.b);
  } else {
    Shape xs(c.b.size());
    for (size_t i = 0; i < c.b.size(); ++i) // x's dim perm[i] is B's dim i
      xs[static_cast<size_t>(c.transposeB[i])] = c.b[i];
    ValueId x = input("x", xs);
    b = g.addValue("b", c.b, graph::DType::F32);
    auto n = g.addNode(graph::OpKind::Transpose, "tr", {x}, {b});
    g.node(n).attrs["perm"] = c.transposeB;
  }
  Shape ys = matmulShape(c.a, c.b);
  ValueId y = g.addValue("mm", ys, graph::DType::F32);
  graph::NodeId mm = g.addNode(graph::OpKind::MatMul, "matmul", {a, b}, {y});
  if (c.scale != 0) {
    ValueId s = g.addConstant("scale", {}, {c.scale});
    ValueId z = g.addValue("scaled", ys, graph::DType::F32);
    g.addNode(graph::OpKind::Mul, "scale", {y, s}, {z});
    y = z;
  }
  if (c.bias) {
    const int64_t n = ys.back();
    ValueId bv = g.addConstant("bias", {n}, halves(randomData(static_cast<size_t>(n), 31)));
    ValueId z = g.addValue("biased", ys, graph::DType::F32);
    g.addNode(graph::OpKind::Add, "bias", {y, bv}, {z});
    y = z;
  }
  if (c.mask) {
    const Shape ms = c.maskShape.empty() ? ys : c.maskShape;
    ValueId m = c.maskConstant ? constant("mask", ms, 47) : input("mask", ms);
    ValueId z = g.addValue("masked", ys, graph::DType::F32);
    g.addNode(c.maskConstant ? graph::OpKind::Min : graph::OpKind::Add, "mask", {y, m}, {z});
    y = z;
  }
  oneGroup(g, y);
  g.groups[0].anchor = mm; // the MatMul, also when a Transpose precedes it
  g.groups[0].name = "matmul";
  r.K = c.a.back();
  return r;
}

class BatchMatmul : public ::testing::TestWithParam<Case> {};

TEST_P(BatchMatmul, MatchesReference) {
  const Case &c = GetParam();
  Built bt = build(c);
  const Graph &g = bt.g;
  isa::Target t = isa::loadTarget(configPath(c.target));
  ASSERT_EQ(npu::npuRejectReason(g, g.groups[0], t, /*loopNest=*/false), "");
  NpuRun r = compileAndRun(g, t, bt.inputs); // the simulator's hazard checker is on by default
  std::map<ValueId, HostTensor> ins;
  for (size_t i = 0; i < bt.inputs.size(); ++i)
    ins[g.inputs[i]] = bt.inputs[i];
  HostTensor want = graph::runReference(g, ins).at(g.outputs[0]);
  ASSERT_EQ(r.out.shape, want.shape);
  const double K = static_cast<double>(bt.K);
  const double sumBound = K * (c.scale != 0 ? std::fabs(c.scale) : 1.0);
  for (size_t i = 0; i < want.data.size(); ++i) {
    const double w = want.data[i];
    const double tol = std::ldexp(std::fabs(w), -11) + 2 * K * std::ldexp(sumBound, -24) +
                       std::ldexp(std::fabs(w), -21);
    ASSERT_NEAR(r.out.data[i], w, tol) << "element " << i;
  }
  const npu::GroupInfo &gi = r.seg.groupInfo.at(0);
  EXPECT_NE(gi.tiling.find("batched matmul on the tensor unit"), std::string::npos) << gi.tiling;
  const std::string mm = t.instrsWith(isa::Semantics::Matmul).front()->mnemonic;
  EXPECT_GT(gi.instrCounts.count(mm) ? gi.instrCounts.at(mm) : 0, 0) << gi.tiling;
  if (!c.transposeB.empty()) {
    EXPECT_NE(gi.tiling.find("1 Transpose(s) folded"), std::string::npos) << gi.tiling;
  }
  // Every MAC on the tensor unit: the kernel reports the product's MACs.
  int64_t macs = numElements(want.shape) * bt.K;
  EXPECT_EQ(gi.macs, macs);
}

const char *kBase = "npu-base.yaml", *kTiny = "npu-tiny.yaml";

std::vector<Case> cases() {
  std::vector<Case> v;
  for (const char *t : {kBase, kTiny}) {
    v.push_back({"plain2d", t, {37, 45}, {45, 29}, {}, 0, false});
    v.push_back({"batched3d", t, {3, 20, 33}, {3, 33, 17}, {}, 0, false});
    v.push_back({"batched4d", t, {2, 3, 19, 24}, {2, 3, 24, 21}, {}, 0, false});
    v.push_back({"broadcastB3d", t, {2, 3, 19, 24}, {3, 24, 21}, {}, 0, false});
    v.push_back({"broadcastB2d", t, {3, 10, 20}, {20, 12}, {}, 0, false});
    v.push_back({"broadcastA", t, {1, 9, 13}, {4, 13, 11}, {}, 0, false});
    // K^T as attention builds it: [S, H, D] -> [H, D, S] (perm 1, 2, 0) and the last two swapped.
    v.push_back({"transposedB", t, {4, 23, 16}, {4, 16, 23}, {1, 2, 0}, 0.25f, false});
    v.push_back({"transposedLast2", t, {3, 17, 40}, {3, 40, 21}, {0, 2, 1}, 0, false});
    v.push_back({"scaleAndMask", t, {4, 31, 24}, {4, 24, 31}, {}, 0.125f, true});
    v.push_back({"mask4d", t, {2, 2, 9, 12}, {2, 2, 12, 10}, {}, 0.5f, true});
    // A per-column constant, read at each column tile's first column (37: not a tile multiple).
    v.push_back({"biasColumns", t, {3, 11, 20}, {3, 20, 37}, {}, 0, false, true});
  }
  // K beyond one L0 slice: npu-tiny's 16 KiB L0B holds two 8-column slices of at most 512 rows,
  // npu-base's 64 KiB two 16-column slices of at most 1024 rows, so K = 700 / 1100 need k-chunks.
  v.push_back({"kChunks", kTiny, {2, 21, 700}, {2, 700, 19}, {}, 0, false});
  v.push_back({"kChunks", kBase, {2, 13, 1100}, {2, 1100, 35}, {}, 0, false});
  // A constant operand the implicit GEMM does not take: batched (per head) or broadcast constant
  // right operands, a constant left operand, a 4-D activation times a constant matrix (its output
  // is NHWC in DRAM), with an epilogue.
  for (const char *t : {kBase, kTiny}) {
    v.push_back({"constB3d", t, {3, 20, 33}, {3, 33, 17}, {}, 0, false, false, false, true});
    v.push_back(
        {"constB4dBroadcast", t, {2, 3, 19, 24}, {3, 24, 21}, {}, 0.5f, false, false, false, true});
    v.push_back({"constA2d", t, {21, 30}, {30, 19}, {}, 0, false, true, true, false});
    v.push_back({"constA3d", t, {4, 9, 13}, {4, 13, 11}, {}, 0, false, false, true, false});
    v.push_back(
        {"left4dConstMatrix", t, {1, 5, 7, 24}, {24, 18}, {}, 0, false, false, false, true});
    // Masks broadcast over the batch dims, read through strides of their own: a constant [M, N]
    // bound on [H, M, N] scores (as a causal mask's Min), a runtime [1, M, N] one on 4-D scores,
    // a constant of the output's whole shape.
    v.push_back({"constMaskOverHeads",
                 t,
                 {4, 23, 16},
                 {4, 16, 27},
                 {},
                 0.25f,
                 true,
                 false,
                 false,
                 false,
                 {23, 27},
                 true});
    v.push_back({"maskOverBatch4d",
                 t,
                 {2, 3, 9, 12},
                 {2, 3, 12, 10},
                 {},
                 0,
                 true,
                 false,
                 false,
                 false,
                 {1, 9, 10},
                 false});
    v.push_back({"constMaskFullShape",
                 t,
                 {3, 11, 20},
                 {3, 20, 13},
                 {},
                 0,
                 true,
                 false,
                 false,
                 false,
                 {3, 11, 13},
                 true});
  }
  return v;
}

INSTANTIATE_TEST_SUITE_P(Shapes, BatchMatmul, ::testing::ValuesIn(cases()), ParamName{});

// The k-chunked cases really split k (the L0 capacities force it), and the tiling text says so.
TEST(BatchMatmulTiling, KChunksWhenKExceedsL0) {
  for (const Case &c : cases()) {
    if (c.name != "kChunks")
      continue;
    Built bt = build(c);
    isa::Target t = isa::loadTarget(configPath(c.target));
    npu::Segment seg = npu::compileSegment(bt.g, {0}, t).value();
    const std::string &tiling = seg.groupInfo.at(0).tiling;
    EXPECT_EQ(tiling.find(fmt::format("k-chunk {} of {}", bt.K, bt.K)), std::string::npos)
        << tiling;
    EXPECT_NE(tiling.find(fmt::format(" of {};", bt.K)), std::string::npos) << tiling;
  }
}

// A constant right matrix keeps the implicit-GEMM kernel (weights repacked at compile time); a
// constant left operand with an activation right operand goes to the batched product, which
// places the constant itself.
TEST(BatchMatmulPlan, ConstantOperands) {
  isa::Target t = isa::loadTarget(configPath(kBase));
  {
    Graph g;
    ValueId a = g.addValue("a", {5, 8}, graph::DType::F32);
    g.inputs = {a};
    ValueId w = g.addConstant("w", {8, 6}, halves(randomData(48, 3)));
    ValueId y = g.addValue("y", {5, 6}, graph::DType::F32);
    g.addNode(graph::OpKind::MatMul, "mm", {a, w}, {y});
    oneGroup(g, y);
    npu::Segment seg = npu::compileSegment(g, {0}, t).value();
    EXPECT_NE(seg.groupInfo.at(0).tiling.find("implicit GEMM"), std::string::npos);
  }
  {
    Graph g;
    ValueId b = g.addValue("b", {8, 6}, graph::DType::F32);
    g.inputs = {b};
    ValueId w = g.addConstant("w", {5, 8}, halves(randomData(40, 4)));
    ValueId y = g.addValue("y", {5, 6}, graph::DType::F32);
    g.addNode(graph::OpKind::MatMul, "mm", {w, b}, {y});
    oneGroup(g, y);
    npu::Segment seg = npu::compileSegment(g, {0}, t).value();
    EXPECT_NE(seg.groupInfo.at(0).tiling.find("batched matmul on the tensor unit"),
              std::string::npos);
    EXPECT_EQ(seg.groupInfo.at(0).macs, 5 * 8 * 6);
  }
}

// Placement's NPU cost comes from the kernel that will run the group (npuGroupCycles). The same
// 64x64x64 product: with two activations the tensor-unit kernel runs it; with its left operand
// computed in the group (the batched product reads its operands from DRAM) no hand kernel takes
// it and the loop-nest kernel computes it with vector ops, at least
// M*K*N / lanes cycles (npu-base: 16 lanes -> 16384), where tensor-unit peak (256 MAC/cycle)
// would claim 1024.
TEST(PlacementCost, EstimateFollowsTheKernel) {
  isa::Target t = isa::loadTarget(configPath(kBase));
  const int64_t M = 64, K = 64, N = 64;
  const double peakCycles = double(M * K * N) / double(t.tensor.peakMacsPerCycle());
  const double vectorCycles = double(M * K * N) / t.vector.lanes;
  auto product = [&](bool computedA) {
    Graph g;
    ValueId b = g.addValue("b", {K, N}, graph::DType::F32);
    ValueId x = g.addValue("x", {M, K}, graph::DType::F32);
    g.inputs = {x, b};
    ValueId a = x;
    if (computedA) { // A computed inside the group: the batched product reads only DRAM operands
      a = g.addValue("a", {M, K}, graph::DType::F32);
      g.addNode(graph::OpKind::Neg, "neg", {x}, {a});
    }
    ValueId y = g.addValue("y", {M, N}, graph::DType::F32);
    g.addNode(graph::OpKind::MatMul, "mm", {a, b}, {y});
    oneGroup(g, y);
    return g;
  };
  Graph onTensor = product(false), onVector = product(true);
  ASSERT_EQ(npu::npuRejectReason(onVector, onVector.groups[0], t), "");
  EXPECT_NE(npu::npuRejectReason(onVector, onVector.groups[0], t, /*loopNest=*/false), "");
  const double tensorEst = npu::npuGroupCycles(onTensor, onTensor.groups[0], t);
  const double vectorEst = npu::npuGroupCycles(onVector, onVector.groups[0], t);
  EXPECT_GE(tensorEst, peakCycles);
  EXPECT_LT(tensorEst, vectorCycles);
  EXPECT_GE(vectorEst, vectorCycles);
  // A group the NPU cannot run has no estimate.
  Graph sm;
  ValueId x = sm.addValue("x", {4, 8}, graph::DType::F32);
  sm.inputs = {x};
  ValueId y = sm.addValue("y", {4, 8}, graph::DType::F32);
  sm.addNode(graph::OpKind::Softmax, "sm", {x}, {y});
  oneGroup(sm, y);
  EXPECT_EQ(npu::npuGroupCycles(sm, sm.groups[0], t), -1);
}

} // namespace
} // namespace npuc::test
