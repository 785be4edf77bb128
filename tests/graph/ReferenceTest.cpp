// ReferenceTest.cpp - reference kernels against values worked out by hand.
#include "graph/Reference.h"
#include "graph/ShapeInference.h"

#include "support/Error.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace npuc;
using namespace npuc::graph;

namespace {

// Builds a one-node graph over the given inputs (nullopt data = graph input) and runs it.
struct OneOp {
  Graph g;
  std::map<ValueId, HostTensor> feeds;
  std::vector<ValueId> ins;

  void input(Shape s, std::vector<float> d) {
    ValueId v = g.addValue(fmt::format("in{}", ins.size()), s, DType::F32);
    g.inputs.push_back(v);
    feeds[v] = HostTensor(s, std::move(d));
    ins.push_back(v);
  }
  void constant(Shape s, std::vector<float> d) {
    ins.push_back(g.addConstant(fmt::format("c{}", ins.size()), s, std::move(d)));
  }
  HostTensor run(graph::OpKind op, std::map<std::string, AttrValue> attrs = {}) {
    ValueId o = g.addValue("out", {}, DType::F32);
    NodeId n = g.addNode(op, opName(op), ins, {o});
    g.node(n).attrs = std::move(attrs);
    inferNodeShape(g, n);
    g.outputs = {o};
    return runReference(g, feeds).at(o);
  }
};

using Ints = std::vector<int64_t>;

TEST(Reference, ConvValid) {
  OneOp t;
  t.input({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  t.constant({1, 1, 2, 2}, {1, 1, 1, 1});
  HostTensor y = t.run(graph::OpKind::Conv, {{"kernel_shape", Ints{2, 2}}});
  EXPECT_EQ(y.shape, (Shape{1, 1, 2, 2}));
  EXPECT_EQ(y.data, (std::vector<float>{12, 16, 24, 28}));
}

TEST(Reference, ConvStridePadDilationGroupBias) {
  // Depthwise (group 2) 1x1 conv scales each channel; bias added.
  OneOp t;
  t.input({1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  t.constant({2, 1, 1, 1}, {2, 3});
  t.constant({2}, {0.5f, -1});
  HostTensor y = t.run(graph::OpKind::Conv, {{"group", int64_t{2}}});
  EXPECT_EQ(y.data, (std::vector<float>{2.5f, 4.5f, 6.5f, 8.5f, 14, 17, 20, 23}));
  // 3x3 kernel of ones, dilation 2, pad 2, stride 2 on a 3x3 ramp: out 2x2; (0,0) taps
  // rows/cols {-2,0,2} -> in-range (0,0),(0,2),(2,0),(2,2) = 1+3+7+9.
  OneOp u;
  u.input({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  u.constant({1, 1, 3, 3}, std::vector<float>(9, 1));
  HostTensor z =
      u.run(graph::OpKind::Conv,
            {{"dilations", Ints{2, 2}}, {"pads", Ints{2, 2, 2, 2}}, {"strides", Ints{2, 2}}});
  EXPECT_EQ(z.shape, (Shape{1, 1, 2, 2}));
  EXPECT_EQ(z.data[0], 20);
  EXPECT_EQ(z.data[3], 20); // (1,1) taps rows/cols {0,2,4} -> same four corners
}

TEST(Reference, MaxPoolCeilMode) {
  OneOp t;
  t.input({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  HostTensor y =
      t.run(graph::OpKind::MaxPool,
            {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}, {"ceil_mode", int64_t{1}}});
  EXPECT_EQ(y.shape, (Shape{1, 1, 2, 2}));
  EXPECT_EQ(y.data, (std::vector<float>{5, 6, 8, 9}));
}

TEST(Reference, AveragePoolCountIncludePad) {
  std::map<std::string, AttrValue> a{{"kernel_shape", Ints{3, 3}}, {"pads", Ints{1, 1, 1, 1}}};
  OneOp t;
  t.input({1, 1, 2, 2}, {1, 2, 3, 4});
  HostTensor ex = t.run(graph::OpKind::AveragePool, a);
  EXPECT_EQ(ex.shape, (Shape{1, 1, 2, 2}));
  EXPECT_FLOAT_EQ(ex.data[0], 2.5f); // all four real values, padding not counted
  a["count_include_pad"] = int64_t{1};
  OneOp u;
  u.input({1, 1, 2, 2}, {1, 2, 3, 4});
  EXPECT_FLOAT_EQ(u.run(graph::OpKind::AveragePool, a).data[0], 10.0f / 9.0f);
}

TEST(Reference, GemmAlphaBetaTrans) {
  OneOp t;
  t.input({1, 2}, {1, 2});
  t.constant({3, 2}, {1, 0, 0, 1, 1, 1});
  t.constant({1}, {1});
  HostTensor y =
      t.run(graph::OpKind::Gemm, {{"transB", int64_t{1}}, {"alpha", 2.0}, {"beta", 0.5}});
  EXPECT_EQ(y.shape, (Shape{1, 3}));
  EXPECT_EQ(y.data, (std::vector<float>{2.5f, 4.5f, 6.5f}));
}

TEST(Reference, MatMulBroadcastBatch) {
  OneOp t;
  t.input({2, 1, 2}, {1, 2, 3, 4});
  t.constant({2, 1}, {10, 1});
  HostTensor y = t.run(graph::OpKind::MatMul);
  EXPECT_EQ(y.shape, (Shape{2, 1, 1}));
  EXPECT_EQ(y.data, (std::vector<float>{12, 34}));
}

TEST(Reference, SoftmaxAndBroadcastSub) {
  OneOp t;
  t.input({1, 2}, {0, std::log(3.0f)});
  HostTensor y = t.run(graph::OpKind::Softmax, {{"axis", int64_t{1}}});
  EXPECT_NEAR(y.data[0], 0.25f, 1e-6);
  EXPECT_NEAR(y.data[1], 0.75f, 1e-6);
  OneOp u;
  u.input({2, 1}, {10, 20});
  u.constant({3}, {1, 2, 3});
  HostTensor z = u.run(graph::OpKind::Sub);
  EXPECT_EQ(z.shape, (Shape{2, 3}));
  EXPECT_EQ(z.data, (std::vector<float>{9, 8, 7, 19, 18, 17}));
}

TEST(Reference, TransposeConcatPadClip) {
  OneOp t;
  t.input({2, 3}, {1, 2, 3, 4, 5, 6});
  HostTensor y = t.run(graph::OpKind::Transpose, {{"perm", Ints{1, 0}}});
  EXPECT_EQ(y.shape, (Shape{3, 2}));
  EXPECT_EQ(y.data, (std::vector<float>{1, 4, 2, 5, 3, 6}));
  OneOp c;
  c.input({1, 2}, {1, 2});
  c.constant({1, 1}, {9});
  HostTensor z = c.run(graph::OpKind::Concat, {{"axis", int64_t{1}}});
  EXPECT_EQ(z.data, (std::vector<float>{1, 2, 9}));
  OneOp p;
  p.input({1, 2}, {1, 2});
  HostTensor q = p.run(graph::OpKind::Pad, {{"pads", Ints{0, 1, 1, 0}}, {"value", 7.0}});
  EXPECT_EQ(q.shape, (Shape{2, 3}));
  EXPECT_EQ(q.data, (std::vector<float>{7, 1, 2, 7, 7, 7}));
  OneOp cl;
  cl.input({3}, {-1, 0.5f, 9});
  EXPECT_EQ(cl.run(graph::OpKind::Clip, {{"min", 0.0}, {"max", 6.0}}).data,
            (std::vector<float>{0, 0.5f, 6}));
}

TEST(Reference, BatchNormalization) {
  OneOp t;
  t.input({1, 2, 1, 1}, {3, 5});
  t.constant({2}, {2, 1});  // scale
  t.constant({2}, {1, 0});  // bias
  t.constant({2}, {1, 1});  // mean
  t.constant({2}, {4, 16}); // var
  HostTensor y = t.run(graph::OpKind::BatchNormalization, {{"epsilon", 0.0}});
  EXPECT_FLOAT_EQ(y.data[0], (3 - 1) / 2.0f * 2 + 1);
  EXPECT_FLOAT_EQ(y.data[1], (5 - 1) / 4.0f);
}

TEST(Reference, ShapeErrorsNameTheNode) {
  OneOp t;
  t.input({1, 3, 4, 4}, std::vector<float>(48));
  t.constant({2, 2, 1, 1}, {1, 1, 1, 1});
  try {
    t.run(graph::OpKind::Conv);
    FAIL();
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("node 'Conv' (Conv)"), std::string::npos) << e.what();
  }
}

} // namespace
