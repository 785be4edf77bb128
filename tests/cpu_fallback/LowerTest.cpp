// LowerTest.cpp - every lowered op kind, JIT-compiled, against graph's reference executor on
// small random inputs (tolerance 1e-5 relative plus 1e-5 absolute for fp32 vs double sums).
#include "cpu_fallback/Jit.h"
#include "graph/Reference.h"
#include "lowering/LowerOps.h"
#include "support/Error.h"
#include "tir/Printer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace npuc;
using graph::Graph;
using graph::ValueId;

namespace {

std::vector<float> randomData(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-2, 2);
  std::vector<float> v(static_cast<size_t>(n));
  for (float &x : v)
    x = d(rng);
  return v;
}

ValueId input(Graph &g, const std::string &name, Shape s) {
  ValueId v = g.addValue(name, s, graph::DType::F32);
  g.inputs.push_back(v);
  return v;
}

ValueId constant(Graph &g, const std::string &name, Shape s, unsigned seed) {
  return g.addConstant(name, s, randomData(numElements(s), seed));
}

// Adds a node with one fp32 output of shape `out` and attributes; marks it a graph output.
ValueId node(Graph &g, graph::OpKind op, std::vector<ValueId> ins, Shape out,
             std::map<std::string, graph::AttrValue> attrs = {}, bool isOutput = true) {
  ValueId o = g.addValue(fmt::format("{}_out{}", op, g.values.size()), out, graph::DType::F32);
  graph::NodeId n = g.addNode(op, fmt::format("{}{}", op, g.nodes.size()), ins, {o});
  g.node(n).attrs = std::move(attrs);
  if (isOutput)
    g.outputs.push_back(o);
  return o;
}

// Lowers the whole graph as one group, runs it through the JIT and compares every output.
void checkAgainstReference(Graph &g) {
  graph::FusedGroup grp;
  grp.id = 0;
  grp.name = g.name.empty() ? "test" : g.name;
  grp.nodes = g.topoOrder();
  grp.inputs = g.inputs;
  grp.outputs = g.outputs;
  std::map<ValueId, HostTensor> inputs;
  unsigned seed = 100;
  for (ValueId v : g.inputs)
    inputs[v] = HostTensor(g.value(v).shape, randomData(numElements(g.value(v).shape), seed++));
  std::map<ValueId, HostTensor> ref = graph::runReference(g, inputs);

  std::vector<ValueId> pv;
  tir::PrimFunc f = tir::lowerGroup(g, grp, &pv);
  ASSERT_EQ(pv.size(), f.params.size());
  std::map<ValueId, HostTensor> data = inputs;
  std::vector<void *> args;
  for (size_t i = 0; i < pv.size(); ++i) {
    ValueId v = pv[i];
    EXPECT_EQ(f.params[i]->shape, g.value(v).shape);
    if (!data.count(v))
      data[v] = g.value(v).isConstant() ? graph::constantTensor(g.value(v))
                                        : HostTensor(g.value(v).shape);
    args.push_back(data[v].data.data());
  }
  cpu::Jit jit;
  jit.add({f});
  jit.lookup(f.name)(args.data());
  for (ValueId o : g.outputs) {
    const HostTensor &want = ref.at(o), &got = data.at(o);
    ASSERT_EQ(want.size(), got.size());
    for (int64_t i = 0; i < want.size(); ++i) {
      float w = want.data[i], v = got.data[i];
      if (std::isinf(w)) {
        EXPECT_EQ(w, v) << g.value(o).name << "[" << i << "]";
        continue;
      }
      ASSERT_NEAR(v, w, 1e-5 * (1 + std::fabs(w))) << g.value(o).name << "[" << i << "]\n"
                                                   << tir::toText(f);
    }
  }
}

TEST(Lower, BroadcastBinaries) {
  for (graph::OpKind op : {graph::OpKind::Add, graph::OpKind::Sub, graph::OpKind::Mul,
                           graph::OpKind::Div, graph::OpKind::Max, graph::OpKind::Min}) {
    Graph g;
    ValueId a = input(g, "a", {2, 3, 4}), b = input(g, "b", {3, 1});
    ValueId c = constant(g, "c", {4}, 7);
    ValueId t = node(g, op, {a, b}, {2, 3, 4}, {}, false);
    node(g, op, {t, c}, {2, 3, 4});
    SCOPED_TRACE(graph::opName(op));
    checkAgainstReference(g);
  }
}

TEST(Lower, UnaryActivationsAndClip) {
  for (graph::OpKind op : {graph::OpKind::Relu, graph::OpKind::Sigmoid, graph::OpKind::Tanh,
                           graph::OpKind::Exp, graph::OpKind::Identity}) {
    Graph g;
    ValueId a = input(g, "a", {3, 5});
    node(g, op, {a}, {3, 5});
    SCOPED_TRACE(graph::opName(op));
    checkAgainstReference(g);
  }
  Graph g;
  ValueId a = input(g, "a", {17});
  node(g, graph::OpKind::Clip, {a}, {17}, {{"min", -0.5}, {"max", 1.0}});
  checkAgainstReference(g);
}

TEST(Lower, ConvGroupsStridesPadsDilationsBias) {
  Graph g;
  ValueId x = input(g, "x", {2, 4, 7, 6});
  ValueId w = constant(g, "w", {6, 2, 3, 2}, 3), b = constant(g, "b", {6}, 4);
  // OH = (7 + 1 + 2 - 2*(3-1) - 1)/2 + 1 = 3, OW = (6 + 0 + 1 - 3*(2-1) - 1)/1 + 1 = 4.
  node(g, graph::OpKind::Conv, {x, w, b}, {2, 6, 3, 4},
       {{"group", int64_t{2}},
        {"strides", std::vector<int64_t>{2, 1}},
        {"pads", std::vector<int64_t>{1, 0, 2, 1}},
        {"dilations", std::vector<int64_t>{2, 3}}});
  ValueId w2 = constant(g, "w2", {3, 4, 1, 1}, 5);
  node(g, graph::OpKind::Conv, {x, w2}, {2, 3, 7, 6});
  checkAgainstReference(g);
}

TEST(Lower, Pools) {
  Graph g;
  ValueId x = input(g, "x", {1, 2, 7, 7});
  // ceil_mode: OH = ceil((7 + 1 + 1 - 3) / 2) + 1 = 4 (the last window starts in the end pad).
  std::map<std::string, graph::AttrValue> win{{"kernel_shape", std::vector<int64_t>{3, 3}},
                                              {"strides", std::vector<int64_t>{2, 2}},
                                              {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                                              {"ceil_mode", int64_t{1}}};
  node(g, graph::OpKind::MaxPool, {x}, {1, 2, 4, 4}, win);
  node(g, graph::OpKind::AveragePool, {x}, {1, 2, 4, 4}, win);
  win["count_include_pad"] = int64_t{1};
  node(g, graph::OpKind::AveragePool, {x}, {1, 2, 4, 4}, win);
  node(g, graph::OpKind::GlobalAveragePool, {x}, {1, 2, 1, 1});
  checkAgainstReference(g);
}

TEST(Lower, GemmAndMatMul) {
  Graph g;
  ValueId a = input(g, "a", {5, 3}); // transA: M = 3, K = 5
  ValueId b = constant(g, "b", {4, 5}, 9), c = constant(g, "c", {4}, 10);
  node(g, graph::OpKind::Gemm, {a, b, c}, {3, 4},
       {{"transA", int64_t{1}}, {"transB", int64_t{1}}, {"alpha", 0.5}, {"beta", 2.0}});
  ValueId p = input(g, "p", {2, 1, 3, 4}), q = input(g, "q", {3, 4, 2});
  node(g, graph::OpKind::MatMul, {p, q}, {2, 3, 3, 2});
  ValueId r = input(g, "r", {3, 4});
  node(g, graph::OpKind::MatMul, {r, q}, {3, 3, 2});
  checkAgainstReference(g);
}

TEST(Lower, ShapeOpsSoftmaxBatchNorm) {
  Graph g;
  ValueId x = input(g, "x", {2, 3, 4});
  node(g, graph::OpKind::Transpose, {x}, {4, 2, 3}, {{"perm", std::vector<int64_t>{2, 0, 1}}});
  ValueId y = input(g, "y", {2, 2, 4});
  node(g, graph::OpKind::Concat, {x, y, x}, {2, 8, 4}, {{"axis", int64_t{-2}}});
  node(g, graph::OpKind::Softmax, {x}, {2, 3, 4}, {{"axis", int64_t{1}}});
  ValueId shape = g.addConstantI64("shape", {2}, {6, 4});
  node(g, graph::OpKind::Reshape, {x, shape}, {6, 4});
  node(g, graph::OpKind::Flatten, {x}, {2, 12}, {{"axis", int64_t{1}}});
  ValueId s = constant(g, "s", {3}, 1), bb = constant(g, "bb", {3}, 2);
  ValueId m = constant(g, "m", {3}, 3);
  ValueId v = g.addConstant("v", {3}, {0.5f, 1.5f, 2.5f});
  node(g, graph::OpKind::BatchNormalization, {x, s, bb, m, v}, {2, 3, 4}, {{"epsilon", 1e-3}});
  node(g, graph::OpKind::Pad, {x}, {3, 5, 5},
       {{"pads", std::vector<int64_t>{0, 1, 0, 1, 1, 1}}, {"value", 0.25}});
  checkAgainstReference(g);
}

TEST(Lower, FusedChainAllocatesIntermediatesAndOrdersParams) {
  Graph g;
  ValueId x = input(g, "x", {1, 2, 5, 5});
  ValueId w = constant(g, "w", {4, 2, 3, 3}, 11), b = constant(g, "b", {4}, 12);
  ValueId conv = node(g, graph::OpKind::Conv, {x, w, b}, {1, 4, 5, 5},
                      {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}, false);
  ValueId k = constant(g, "k", {4, 1, 1}, 13);
  ValueId mul = node(g, graph::OpKind::Mul, {conv, k}, {1, 4, 5, 5}, {}, false);
  node(g, graph::OpKind::Relu, {mul}, {1, 4, 5, 5});
  g.name = "fused";
  checkAgainstReference(g);

  graph::FusedGroup grp;
  grp.id = 3;
  grp.name = "conv/1";
  grp.nodes = g.topoOrder();
  grp.inputs = g.inputs;
  grp.outputs = g.outputs;
  std::vector<ValueId> pv;
  tir::PrimFunc f = tir::lowerGroup(g, grp, &pv);
  EXPECT_EQ(f.name, "group3_conv_1");
  EXPECT_EQ(pv, (std::vector<ValueId>{x, w, b, k, g.outputs[0]}));
  std::string text = tir::toText(f);
  EXPECT_NE(text.find("allocate " + g.value(conv).name), std::string::npos) << text;
  EXPECT_NE(text.find("allocate " + g.value(mul).name), std::string::npos) << text;
}

TEST(Lower, UnsupportedOpIsAUserError) {
  Graph g;
  ValueId x = input(g, "x", {4});
  // Size is folded at import and has no loop nest of its own.
  node(g, graph::OpKind::Size, {x}, {4});
  graph::FusedGroup grp;
  grp.nodes = g.topoOrder();
  grp.inputs = g.inputs;
  grp.outputs = g.outputs;
  try {
    tir::lowerGroup(g, grp);
    FAIL() << "expected npuc::Error";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("(Size): no TIR lowering"), std::string::npos) << e.what();
  }
}

} // namespace
