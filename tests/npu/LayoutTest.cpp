// LayoutTest.cpp - DRAM layouts and transform cancellation (npu/hw/DramLayout.h).
//
// Small graphs fused with the compiler's NPU filter, compiled as one segment and run on the
// simulator with its hazard checker, every output compared with the reference executor. Values
// are multiples of 1/4 in [-1, 1] and conv weights too, so every product is a multiple of 1/16
// and every sum below 2^6 needs at most 11 significant bits: fp16 storage and fp32 accumulation
// are exact, and the outputs must equal the reference exactly.
#include "NpuTestUtil.h"

#include "graph/Passes.h"
#include "graph/Reference.h"
#include "graph/ShapeInference.h"
#include "npu/hw/DramLayout.h"

#include <gtest/gtest.h>

namespace npuc::test {
namespace {

using graph::Graph;
using graph::NodeId;
using graph::ValueId;

std::vector<float> quarters(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(-4, 4);
  std::vector<float> v(n);
  for (float &x : v)
    x = static_cast<float>(d(rng)) / 4.0f;
  return v;
}

struct Net {
  Graph g;
  ValueId x;
  explicit Net(Shape in) {
    x = g.addValue("x", std::move(in), graph::DType::F32);
    g.inputs = {x};
  }
  ValueId node(graph::OpKind op, const std::string &name, std::vector<ValueId> ins,
               std::map<std::string, graph::AttrValue> attrs = {}) {
    ValueId o = g.addValue(name, {}, graph::DType::F32);
    NodeId n = g.addNode(op, name, std::move(ins), {o});
    g.node(n).attrs = std::move(attrs);
    graph::inferNodeShape(g, n);
    return o;
  }
  ValueId reshape(const std::string &name, ValueId in, std::vector<int64_t> s) {
    ValueId c = g.addConstantI64(name + ".shape", {int64_t(s.size())}, s);
    return node(graph::OpKind::Reshape, name, {in, c});
  }
  ValueId transpose(const std::string &name, ValueId in, std::vector<int64_t> perm) {
    return node(graph::OpKind::Transpose, name, {in}, {{"perm", perm}});
  }
  ValueId conv3x3(const std::string &name, ValueId in, int64_t oc) {
    const int64_t c = g.value(in).shape[1];
    ValueId w = g.addConstant(name + ".w", {oc, c, 3, 3}, quarters(size_t(oc * c * 9), 5));
    return node(graph::OpKind::Conv, name, {in, w}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  }
};

struct Result {
  npu::Segment seg;
  std::map<ValueId, HostTensor> outs; // every segment output, read back on the host
  std::map<ValueId, HostTensor> want; // the reference executor's values
};

// Fuses with the compiler's filter (groups the NPU runs stay runnable), puts every group on the
// NPU as one segment, runs it and reads back every segment output through its DRAM layout.
Result compileAndRunAll(Net &m, std::vector<ValueId> outputs, const HostTensor &in) {
  isa::Target t = isa::loadTarget(configPath("npu-base.yaml"));
  m.g.outputs = outputs;
  auto reject = [&t](const Graph &g, const graph::FusedGroup &grp) {
    return npu::npuRejectReason(g, grp, t);
  };
  auto hand = graph::preserveRunnable([&t](const Graph &g, const graph::FusedGroup &grp) {
    return npu::npuRejectReason(g, grp, t, /*loopNest=*/false);
  });
  auto any = graph::preserveRunnable(reject);
  graph::fuseOps(m.g, [&](const Graph &g, const graph::FusedGroup &merged,
                          const std::vector<graph::FusedGroup> &parts) {
    return hand(g, merged, parts) && any(g, merged, parts);
  });
  std::vector<int> ids;
  for (graph::FusedGroup &grp : m.g.groups) {
    EXPECT_EQ(reject(m.g, grp), "") << grp.name;
    grp.placement = graph::Placement::Npu;
    ids.push_back(grp.id);
  }
  Result r;
  r.seg = npu::compileSegment(m.g, ids, t).value();
  sim::Memory mem(t, r.seg.dramBytes);
  auto &dram = mem.dram();
  std::copy(r.seg.constImage.begin(), r.seg.constImage.end(), dram.begin() + r.seg.constBase);
  auto bytes = npu::packTensor(in, r.seg.inputs.at(0));
  std::copy(bytes.begin(), bytes.end(), dram.begin() + r.seg.inputs.at(0).addr);
  sim::run(t, r.seg.program, mem, sim::SimOptions{}); // hazard checker on
  for (const npu::DramTensor &o : r.seg.outputs)
    r.outs[o.value] = npu::unpackTensor(dram.data() + o.addr, o);
  r.want = graph::runReference(m.g, {{m.x, in}});
  for (ValueId v : outputs) {
    EXPECT_EQ(r.outs.at(v).shape, r.want.at(v).shape);
    EXPECT_EQ(r.outs.at(v).data, r.want.at(v).data) << m.g.value(v).name;
  }
  return r;
}

// The GroupInfo of the group whose ops are exactly `ops`.
const npu::GroupInfo &groupWith(const npu::Segment &s, std::vector<std::string> ops) {
  for (const npu::GroupInfo &gi : s.groupInfo)
    if (gi.ops == ops)
      return gi;
  std::string all;
  for (const npu::GroupInfo &gi : s.groupInfo)
    for (const std::string &op : gi.ops)
      all += op + (&op == &gi.ops.back() ? "; " : "+");
  ADD_FAILURE() << "no group of exactly these ops; groups: " << all;
  return s.groupInfo.at(0);
}

int64_t instructions(const npu::GroupInfo &gi) {
  return gi.instrEnd - gi.instrBegin;
}

class ConvToTokens : public ::testing::TestWithParam<int64_t> {};

// vit's patch embedding: conv [N,C,H,W] (NHWC in DRAM) -> Reshape [N,C,HW] -> Transpose
// [N,HW,C], whose row-major bytes are the conv output's NHWC bytes: the NPU's layout change and
// the model's transforms cancel.
TEST_P(ConvToTokens, ReshapeTransposeIsAZeroCopyView) {
  const int64_t N = GetParam(), C = 8, H = 5, W = 6;
  Net m({N, 3, H, W});
  ValueId c = m.conv3x3("conv", m.x, C);
  ValueId r = m.reshape("flat", c, {N, C, H * W});
  ValueId tok = m.transpose("tokens", r, {0, 2, 1});
  HostTensor in({N, 3, H, W}, quarters(size_t(N * 3 * H * W), 1));
  Result res = compileAndRunAll(m, {tok}, in);
  const npu::GroupInfo &view = groupWith(res.seg, {"Reshape", "Transpose"});
  EXPECT_EQ(instructions(view), 0);
  EXPECT_EQ(view.layout, "transforms cancel (zero-copy view)");
  EXPECT_EQ(view.layoutOpsCancelled, 2);
  EXPECT_EQ(view.layoutBytesNotMoved, 2 * N * H * W * C * 2); // a copy's fp16 read + write
  const npu::DramTensor &o = res.seg.outputs.at(0);
  EXPECT_EQ(o.layout, npu::DramLayout::RowMajor);
  // The view aliases the conv output: DRAM holds the input and the conv output only (each
  // region 64-byte aligned by the segment compiler).
  auto aligned = [](int64_t b) { return (b + 63) / 64 * 64; };
  EXPECT_EQ(res.seg.activationBytesNoReuse,
            aligned(N * 3 * H * W * 2) + aligned(N * C * H * W * 2));
}

INSTANTIATE_TEST_SUITE_P(Layout, ConvToTokens, ::testing::Values(1, 2));

// [S,1,D] -> [1,S,D] (vit's self_attention/Transpose) moves only a unit dim: no byte moves.
TEST(Layout, UnitDimTransposeIsAView) {
  Net m({5, 1, 8});
  ValueId a = m.node(graph::OpKind::Relu, "relu", {m.x});
  ValueId t = m.transpose("swap", a, {1, 0, 2});
  Result res = compileAndRunAll(m, {t}, HostTensor({5, 1, 8}, quarters(40, 2)));
  const npu::GroupInfo &view = groupWith(res.seg, {"Transpose"});
  EXPECT_EQ(instructions(view), 0);
  EXPECT_EQ(view.layout, "transforms cancel (zero-copy view)");
  EXPECT_EQ(view.layoutOpsCancelled, 1);
}

// A real transpose between two kernels moves bytes: one copy group, and the report says which
// transform runs.
TEST(Layout, ByteMovingTransposeRunsAsACopy) {
  Net m({6, 10});
  ValueId a = m.node(graph::OpKind::Relu, "relu", {m.x});
  ValueId t = m.transpose("tr", a, {1, 0});
  ValueId b = m.node(graph::OpKind::Relu, "relu2", {t});
  Result res = compileAndRunAll(m, {b}, HostTensor({6, 10}, quarters(60, 3)));
  const npu::GroupInfo &copy = groupWith(res.seg, {"Transpose"});
  EXPECT_GT(instructions(copy), 0);
  EXPECT_EQ(copy.layout.rfind("transform runs (one copy)", 0), 0u) << copy.layout;
  EXPECT_EQ(copy.layoutOpsCancelled, 0);
  EXPECT_EQ(copy.layoutBytesNotMoved, 0);
}

// A transpose whose output only the host reads: the host reads it in the layout that makes the
// transform cancel (dims in the input's physical order), so no copy runs on the NPU.
TEST(Layout, HostReadsABoundaryTransposeInItsOwnLayout) {
  Net m({6, 10});
  ValueId a = m.node(graph::OpKind::Relu, "relu", {m.x});
  ValueId t = m.transpose("tr", a, {1, 0});
  Result res = compileAndRunAll(m, {t}, HostTensor({6, 10}, quarters(60, 7)));
  const npu::GroupInfo &view = groupWith(res.seg, {"Transpose"});
  EXPECT_EQ(instructions(view), 0);
  EXPECT_EQ(view.layout.rfind("transforms cancel against a chosen layout", 0), 0u) << view.layout;
  ASSERT_EQ(res.seg.outputs.size(), 1u);
  EXPECT_EQ(res.seg.outputs[0].layout, (npu::DramLayout{{1, 0}}));
}

// A segment made of nothing but that transpose: no instruction at all.
TEST(Layout, SegmentOfOnlyABoundaryTransposeHasNoInstructions) {
  Net m({4, 2, 3});
  ValueId t = m.transpose("tr", m.x, {2, 0, 1});
  Result res = compileAndRunAll(m, {t}, HostTensor({4, 2, 3}, quarters(24, 8)));
  EXPECT_EQ(instructions(groupWith(res.seg, {"Transpose"})), 0);
}

// A transpose of a batched MatMul's output (attention's context [H,S,D] -> [S,H,D]): the MatMul
// stores its output through element strides, so it stores it in the layout that cancels the
// transpose, and the transpose is a view.
TEST(Layout, BatchedMatMulStoresInTheLayoutThatCancelsItsTranspose) {
  Net m({3, 4, 4});
  ValueId a = m.node(graph::OpKind::Relu, "a", {m.x});
  ValueId half = m.g.addConstant("half", {1}, {0.5f});
  ValueId b = m.node(graph::OpKind::Mul, "b", {m.x, half});
  ValueId p = m.node(graph::OpKind::MatMul, "mm", {a, b}); // [3,4,4]
  ValueId t = m.transpose("heads", p, {1, 0, 2}); // [4,3,4]
  ValueId y = m.node(graph::OpKind::Relu, "post", {t});
  Result res = compileAndRunAll(m, {y}, HostTensor({3, 4, 4}, quarters(48, 11)));
  const npu::GroupInfo &view = groupWith(res.seg, {"Transpose"});
  EXPECT_EQ(instructions(view), 0);
  EXPECT_NE(view.layout.find("the batched MatMul 'mm' stores 'mm' in layout 1,0,2"),
            std::string::npos)
      << view.layout;
}

// The same with the product's last two dims swapped: the MatMul stores its columns with a
// non-unit element stride.
TEST(Layout, BatchedMatMulStoresTransposedColumns) {
  Net m({2, 3, 3});
  ValueId a = m.node(graph::OpKind::Relu, "a", {m.x});
  ValueId half = m.g.addConstant("half", {1}, {0.5f});
  ValueId b = m.node(graph::OpKind::Mul, "b", {m.x, half});
  ValueId p = m.node(graph::OpKind::MatMul, "mm", {a, b});
  ValueId t = m.transpose("swap", p, {0, 2, 1});
  ValueId y = m.node(graph::OpKind::Relu, "post", {t});
  Result res = compileAndRunAll(m, {y}, HostTensor({2, 3, 3}, quarters(18, 12)));
  const npu::GroupInfo &view = groupWith(res.seg, {"Transpose"});
  EXPECT_EQ(instructions(view), 0);
  EXPECT_NE(view.layout.find("stores 'mm' in layout 0,2,1"), std::string::npos) << view.layout;
}

class BoundaryInput : public ::testing::TestWithParam<int64_t> {};

// The host writes a segment input in the layout that makes the layout ops reading it cancel:
// [N,3,4] -> Transpose [N,4,3] -> Reshape [N,12] is the identity on bytes when the input is
// stored with its dims in order {0, 2, 1}.
TEST_P(BoundaryInput, HostWritesTheInputInTheLayoutThatCancels) {
  const int64_t N = GetParam();
  Net m({N, 3, 4});
  ValueId t = m.transpose("tr", m.x, {0, 2, 1});
  ValueId r = m.reshape("flat", t, {N, 12});
  ValueId y = m.node(graph::OpKind::Relu, "relu", {r});
  Result res = compileAndRunAll(m, {y}, HostTensor({N, 3, 4}, quarters(size_t(12 * N), 9)));
  const npu::GroupInfo &view = groupWith(res.seg, {"Transpose", "Reshape"});
  EXPECT_EQ(instructions(view), 0);
  EXPECT_EQ(view.layoutOpsCancelled, 2);
  ASSERT_EQ(res.seg.inputs.size(), 1u);
  EXPECT_EQ(res.seg.inputs[0].layout, (npu::DramLayout{{0, 2, 1}}));
}

INSTANTIATE_TEST_SUITE_P(Layout, BoundaryInput, ::testing::Values(1, 2));

class TokensToImage : public ::testing::TestWithParam<int64_t> {};

// The inverse direction: tokens [N,HW,C] (row-major) -> Transpose [N,C,HW] -> Reshape
// [N,C,H,W], which is NHWC: a view whose 4-D output leaves the segment (the host reads it back
// through its NHWC layout from the tokens' bytes) and feeds a conv that reads it in place.
TEST_P(TokensToImage, SegmentOutputOfACancelledViewReadsBackOnTheHost) {
  const int64_t N = GetParam(), C = 4, H = 3, W = 5;
  Net m({N, H * W, C});
  ValueId a = m.node(graph::OpKind::Relu, "relu", {m.x});
  ValueId t = m.transpose("tr", a, {0, 2, 1});
  ValueId img = m.reshape("img", t, {N, C, H, W});
  ValueId c = m.conv3x3("conv", img, 4);
  Result res = compileAndRunAll(m, {img, c}, HostTensor({N, H * W, C}, quarters(60 * N, 4)));
  const npu::GroupInfo &view = groupWith(res.seg, {"Transpose", "Reshape"});
  EXPECT_EQ(instructions(view), 0);
  EXPECT_EQ(view.layout, "transforms cancel (zero-copy view)");
  bool found = false;
  for (const npu::DramTensor &o : res.seg.outputs)
    if (o.value == img) {
      found = true;
      EXPECT_EQ(o.layout, npu::DramLayout::NHWC);
    }
  EXPECT_TRUE(found) << "the view's output is a segment output";
}

INSTANTIATE_TEST_SUITE_P(Layout, TokensToImage, ::testing::Values(1, 2));

// Stride propagation: a reshape merges dims only when they are contiguous in memory.
TEST(Layout, ReshapeStridesMergeOnlyContiguousDims) {
  // NHWC [1,8,5,6]: H and W are contiguous (stride W*C, C), C and H are not.
  const Shape s = {1, 8, 5, 6};
  const std::vector<int64_t> st = npu::layoutStrides(s, npu::DramLayout::NHWC);
  EXPECT_EQ(st, (std::vector<int64_t>{240, 1, 48, 8}));
  auto hw = npu::reshapeStrides(s, st, {1, 8, 30});
  ASSERT_TRUE(hw.has_value());
  EXPECT_EQ((*hw)[1], 1);
  EXPECT_EQ((*hw)[2], 8);
  EXPECT_FALSE(npu::reshapeStrides(s, st, {1, 40, 6}).has_value()) << "C and H are not adjacent";
  // Unit dims are free: [5,1,8] row-major as [1,5,8] keeps every non-unit stride.
  auto u = npu::reshapeStrides({5, 1, 8}, {8, 8, 1}, {1, 5, 8});
  ASSERT_TRUE(u.has_value());
  EXPECT_EQ((*u)[1], 8);
  EXPECT_EQ((*u)[2], 1);
}

// The host conversion for any physical order: element (a, b, c) of a [2,3,4] tensor stored in
// order {2, 0, 1} (c outermost, then a, then b) sits at (c * 2 + a) * 3 + b.
TEST(Layout, PackAndUnpackFollowAnyDimOrder) {
  HostTensor t({2, 3, 4}, quarters(24, 6));
  const npu::DramLayout l{{2, 0, 1}};
  std::vector<uint8_t> bytes = npu::packTensor(t, l);
  ASSERT_EQ(bytes.size(), 48u);
  for (int64_t a = 0; a < 2; ++a)
    for (int64_t b = 0; b < 3; ++b)
      for (int64_t c = 0; c < 4; ++c) {
        const size_t at = size_t(((c * 2 + a) * 3 + b) * 2);
        const uint16_t h = uint16_t(bytes[at] | bytes[at + 1] << 8);
        EXPECT_EQ(halfToFloat(h), t.data[size_t((a * 3 + b) * 4 + c)]);
      }
  HostTensor back = npu::unpackTensor(bytes.data(), t.shape, l);
  EXPECT_EQ(back.data, t.data);
  EXPECT_EQ(l.name(), "2,0,1");
  EXPECT_EQ(npu::DramLayout::parse("2,0,1"), l);
  EXPECT_EQ(npu::DramLayout::parse("nhwc"), npu::DramLayout::NHWC);
  EXPECT_FALSE(npu::DramLayout::parse("0,0,1").has_value());
  EXPECT_FALSE(npu::DramLayout::parse("a,b").has_value());
}

} // namespace
} // namespace npuc::test
