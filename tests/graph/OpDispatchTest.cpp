// OpDispatchTest.cpp - the handler columns of graph/Ops.def as shape inference and the reference
// executor use them: the `Unsupported` handlers reject a node by name, shared rules keep each
// operator's own contract, and a node's declared outputs must be the ones its rule produces.
#include "graph/Reference.h"
#include "graph/ShapeInference.h"

#include "support/Error.h"

#include <gtest/gtest.h>

#include <string>

using namespace npuc;
using namespace npuc::graph;

namespace {

// The message of the npuc::Error that f throws, or "" when it throws none.
template <typename F> std::string errorOf(F f) {
  try {
    f();
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

// A graph with input x of `shape` and one node `name` of kind op reading it, with `outputs`
// output values; returns the node.
NodeId oneNode(Graph &g, OpKind op, const std::string &name, Shape shape, size_t outputs = 1) {
  ValueId x = g.addValue("x", shape, DType::F32);
  g.inputs.push_back(x);
  std::vector<ValueId> outs;
  for (size_t i = 0; i < outputs; ++i)
    outs.push_back(g.addValue(name + std::to_string(i), {}, DType::F32));
  return g.addNode(op, name, {x}, outs);
}

TEST(OpDispatch, ImportOnlyOperatorsHaveNoShapeRule) {
  Graph g;
  NodeId n = oneNode(g, OpKind::Upsample, "up", {1, 1, 2, 2});
  EXPECT_EQ(errorOf([&] { inferNodeShape(g, n); }), "node 'up' (Upsample): unsupported operator");
}

TEST(OpDispatch, ImportOnlyOperatorsHaveNoReferenceKernel) {
  Graph g;
  NodeId n = oneNode(g, OpKind::Constant, "k", {2});
  HostTensor x({2}, {1, 2});
  EXPECT_EQ(errorOf([&] { evalNode(g, g.node(n), {&x}); }),
            "node 'k' (Constant): the reference executor has no kernel for this operator");
}

TEST(OpDispatch, DropoutMaskIsABoolOfTheDataShape) {
  Graph g;
  NodeId n = oneNode(g, OpKind::Dropout, "drop", {2, 3}, 2);
  inferNodeShape(g, n);
  const Node &d = g.node(n);
  EXPECT_EQ(g.value(d.outputs[0]).shape, (Shape{2, 3}));
  EXPECT_EQ(g.value(d.outputs[0]).dtype, DType::F32);
  EXPECT_EQ(g.value(d.outputs[1]).shape, (Shape{2, 3}));
  EXPECT_EQ(g.value(d.outputs[1]).dtype, DType::Bool);
}

// Relu shares the same-shape rule with Identity and the ops along an axis; Not shares the unary
// map rule with Abs, but its result is bool and Abs keeps its input's dtype.
TEST(OpDispatch, SharedRulesKeepEachOperatorsDtype) {
  for (auto [op, in, want] : {std::tuple{OpKind::Relu, DType::F32, DType::F32},
                              std::tuple{OpKind::LogSoftmax, DType::F32, DType::F32},
                              std::tuple{OpKind::Not, DType::Bool, DType::Bool},
                              std::tuple{OpKind::Abs, DType::I64, DType::I64},
                              std::tuple{OpKind::Sqrt, DType::I64, DType::F32}}) {
    Graph g;
    NodeId n = oneNode(g, op, "n", {4});
    g.value(g.inputs[0]).dtype = in;
    inferNodeShape(g, n);
    EXPECT_EQ(g.value(g.node(n).outputs[0]).dtype, want) << op;
    EXPECT_EQ(g.value(g.node(n).outputs[0]).shape, (Shape{4})) << op;
  }
}

TEST(OpDispatch, DeclaredOutputsMustMatchTheRule) {
  Graph g;
  NodeId relu = oneNode(g, OpKind::Relu, "r", {4}, 2);
  EXPECT_EQ(errorOf([&] { inferNodeShape(g, relu); }),
            "node 'r' (Relu): output 1 is not supported");
  Graph h;
  NodeId none = oneNode(h, OpKind::Relu, "r", {4}, 0);
  EXPECT_EQ(errorOf([&] { inferNodeShape(h, none); }),
            "node 'r' (Relu): the node declares 0 outputs, the operator produces 1");
}

} // namespace
