// TypedReferenceTest.cpp - the reference executor on integer and bool tensors (Reference.h):
// exact results where fp32 would round (values beyond 2^24), ONNX's wrap-around, truncating
// division and Mod's sign rules, the data-movement kernels keeping their type, and the clear
// error when an fp32-only kernel meets an integer fp32 cannot hold. Expected values are numpy's
// for the same dtypes, worked out by hand.
#include "graph/Reference.h"
#include "graph/ShapeInference.h"

#include "support/Error.h"

#include <gtest/gtest.h>

using namespace npuc;
using namespace npuc::graph;

namespace {

constexpr int64_t k24 = int64_t{1} << 24;
using Ints = std::vector<int64_t>;

// A one-node graph over typed graph inputs and constants.
struct TypedOp {
  Graph g;
  std::map<ValueId, HostTensor> feeds;
  std::vector<ValueId> ins;

  void input(DType t, Shape s, Ints v) {
    ValueId id = g.addValue(fmt::format("in{}", ins.size()), s, t);
    g.inputs.push_back(id);
    feeds[id] = HostTensor(s, t, std::move(v));
    ins.push_back(id);
  }
  void constant(DType t, Shape s, Ints v) {
    ins.push_back(g.addConstantI64(fmt::format("c{}", ins.size()), s, std::move(v), t));
  }
  std::vector<HostTensor> runAll(OpKind op, std::map<std::string, AttrValue> attrs = {},
                                 size_t outs = 1) {
    std::vector<ValueId> o;
    for (size_t i = 0; i < outs; ++i)
      o.push_back(g.addValue(fmt::format("out{}", i), {}, DType::F32));
    NodeId n = g.addNode(op, "node", ins, o);
    g.node(n).attrs = std::move(attrs);
    inferNodeShape(g, n);
    g.outputs = o;
    std::map<ValueId, HostTensor> r = runReference(g, feeds);
    std::vector<HostTensor> res;
    for (ValueId v : o)
      res.push_back(r.at(v));
    return res;
  }
  HostTensor run(OpKind op, std::map<std::string, AttrValue> attrs = {}) {
    return runAll(op, std::move(attrs)).at(0);
  }
};

std::string errorOf(TypedOp &t, OpKind op, std::map<std::string, AttrValue> attrs = {}) {
  try {
    t.run(op, std::move(attrs));
  } catch (const Error &e) {
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST(TypedReference, Int64ArithmeticIsExactBeyondFp32) {
  TypedOp t;
  t.input(DType::I64, {2}, {k24 + 1, -(int64_t{1} << 40) - 3});
  t.constant(DType::I64, {}, {1});
  HostTensor y = t.run(OpKind::Add);
  EXPECT_EQ(y.dtype, DType::I64);
  EXPECT_EQ(y.ints, (Ints{k24 + 2, -(int64_t{1} << 40) - 2}));
}

TEST(TypedReference, NarrowIntegersWrap) {
  TypedOp u8;
  u8.input(DType::U8, {2}, {200, 5});
  u8.input(DType::U8, {2}, {100, 10});
  EXPECT_EQ(u8.run(OpKind::Add).ints, (Ints{44, 15})); // np.uint8(200) + np.uint8(100) = 44
  TypedOp i32;
  i32.input(DType::I32, {1}, {2147483647});
  i32.constant(DType::I32, {}, {1});
  EXPECT_EQ(i32.run(OpKind::Add).ints, (Ints{-2147483648}));
  TypedOp neg;
  neg.input(DType::I8, {2}, {-128, 5});
  EXPECT_EQ(neg.run(OpKind::Neg).ints, (Ints{-128, -5}));
}

TEST(TypedReference, DivTruncatesAndModTakesItsSign) {
  auto op = [](OpKind k, std::map<std::string, AttrValue> attrs = {}) {
    TypedOp t;
    t.input(DType::I32, {4}, {7, -7, 7, -7});
    t.input(DType::I32, {4}, {2, 2, -2, -2});
    return t.run(k, std::move(attrs)).ints;
  };
  EXPECT_EQ(op(OpKind::Div), (Ints{3, -3, -3, 3}));
  EXPECT_EQ(op(OpKind::Mod), (Ints{1, 1, -1, -1}));                         // np.mod
  EXPECT_EQ(op(OpKind::Mod, {{"fmod", int64_t{1}}}), (Ints{1, -1, 1, -1})); // np.fmod
  TypedOp z;
  z.input(DType::I64, {2}, {1, 2});
  z.input(DType::I64, {2}, {1, 0});
  EXPECT_NE(errorOf(z, OpKind::Div).find("node 'node' (Div): integer division by zero"),
            std::string::npos);
}

TEST(TypedReference, ComparisonsAndArgMaxBeyondFp32) {
  TypedOp eq;
  eq.input(DType::I64, {2}, {k24 + 1, 3});
  eq.input(DType::I64, {2}, {k24, 3});
  HostTensor e = eq.run(OpKind::Equal); // fp32 would round k24 + 1 to k24 and say true
  EXPECT_EQ(e.dtype, DType::Bool);
  EXPECT_EQ(e.ints, (Ints{0, 1}));
  TypedOp am;
  am.input(DType::I64, {1, 3}, {k24, k24 + 1, -5});
  HostTensor a = am.run(OpKind::ArgMax, {{"axis", int64_t{1}}, {"keepdims", int64_t{0}}});
  EXPECT_EQ(a.dtype, DType::I64);
  EXPECT_EQ(a.ints, (Ints{1}));
  TypedOp u64; // uint64 compares as unsigned: 2^64 - 1 > 1
  u64.input(DType::U64, {1}, {-1});
  u64.input(DType::U64, {1}, {1});
  EXPECT_EQ(u64.run(OpKind::Greater).ints, (Ints{1}));
}

TEST(TypedReference, DataMovementKeepsTypeAndValues) {
  TypedOp g;
  g.input(DType::I64, {3}, {k24 + 1, k24 + 3, -(k24 + 5)});
  g.constant(DType::I64, {2}, {2, -3});
  HostTensor y = g.run(OpKind::Gather, {{"axis", int64_t{0}}});
  EXPECT_EQ(y.dtype, DType::I64);
  EXPECT_EQ(y.ints, (Ints{-(k24 + 5), k24 + 1}));
  TypedOp tr;
  tr.input(DType::U16, {2, 2}, {1, 2, 65535, 4});
  HostTensor z = tr.run(OpKind::Transpose, {{"perm", Ints{1, 0}}});
  EXPECT_EQ(z.dtype, DType::U16);
  EXPECT_EQ(z.ints, (Ints{1, 65535, 2, 4}));
}

TEST(TypedReference, WhereCastAndBitShift) {
  TypedOp w;
  w.input(DType::Bool, {3}, {1, 0, 1});
  w.input(DType::I64, {3}, {k24 + 1, 2, 3});
  w.input(DType::I64, {}, {-1});
  EXPECT_EQ(w.run(OpKind::Where).ints, (Ints{k24 + 1, -1, 3}));
  TypedOp c;
  c.input(DType::I64, {3}, {300, -1, k24 + 1});
  EXPECT_EQ(c.run(OpKind::Cast, {{"to", int64_t{2}}}).ints, (Ints{44, 255, 1})); // UINT8
  TypedOp s;
  s.input(DType::U32, {3}, {1, 0x80000000, 255});
  s.input(DType::U32, {3}, {3, 1, 4});
  EXPECT_EQ(s.run(OpKind::BitShift, {{"direction", std::string("LEFT")}}).ints, (Ints{8, 0, 4080}));
  TypedOp r;
  r.input(DType::U8, {2}, {255, 16});
  r.input(DType::U8, {2}, {4, 1});
  EXPECT_EQ(r.run(OpKind::BitShift, {{"direction", std::string("RIGHT")}}).ints, (Ints{15, 8}));
}

TEST(TypedReference, ReduceAndTopKOnIntegers) {
  TypedOp s;
  s.input(DType::I64, {2, 2}, {k24, 1, k24, 3});
  HostTensor y = s.run(OpKind::ReduceSum, {{"axes", Ints{1}}, {"keepdims", int64_t{0}}});
  EXPECT_EQ(y.ints, (Ints{k24 + 1, k24 + 3}));
  TypedOp k;
  k.input(DType::I32, {4}, {5, -2, 9, 5});
  std::vector<HostTensor> tk = k.runAll(OpKind::TopK, {{"axis", int64_t{0}}, {"k", int64_t{3}}}, 2);
  EXPECT_EQ(tk[0].ints, (Ints{9, 5, 5}));
  EXPECT_EQ(tk[1].dtype, DType::I64);
  EXPECT_EQ(tk[1].ints, (Ints{2, 0, 3}));
}

TEST(TypedReference, Fp32KernelsGetCheckedViews) {
  // Exp has no integer kernel: small integers reach it as fp32, a large one is an error naming
  // the node, the input and the value.
  TypedOp ok;
  ok.input(DType::I32, {2}, {0, 1});
  HostTensor y = ok.run(OpKind::Exp);
  EXPECT_EQ(y.dtype, DType::I32); // the output keeps the input's type (truncated): 1, 2
  EXPECT_EQ(y.ints, (Ints{1, 2}));
  TypedOp big;
  big.input(DType::I64, {2}, {1, k24 + 1});
  std::string e = errorOf(big, OpKind::Exp);
  EXPECT_NE(e.find("node 'node' (Exp): input 0 ('in0', i64) holds 16777217 at element 1"),
            std::string::npos)
      << e;
}

TEST(TypedReference, ConcatPartsShareOneType) {
  TypedOp t;
  t.input(DType::I64, {2}, {1, 2});
  t.input(DType::I32, {2}, {3, 4});
  EXPECT_NE(errorOf(t, OpKind::Concat, {{"axis", int64_t{0}}})
                .find("node 'node' (Concat): input 1 is i32 but input 0 is i64; they must have "
                      "one type"),
            std::string::npos);
}

TEST(TypedReference, InputTypeMismatchIsAnError) {
  Graph g;
  ValueId x = g.addValue("x", {2}, DType::I64);
  g.inputs = {x};
  g.outputs = {x};
  try {
    runReference(g, {{x, HostTensor({2}, {1.0f, 2.0f})}});
    ADD_FAILURE() << "accepted";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("input 'x' is f32 but the model's input is i64"),
              std::string::npos)
        << e.what();
  }
}

} // namespace
