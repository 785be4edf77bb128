// ParserTest.cpp - the TIR parser: print -> parse -> structurally equal and printed identically,
// over hand-built nests covering every node kind and over every op lowerGroup produces; and the
// located error messages for malformed text, and the nesting limit.
#include "tir/Parser.h"
#include "DiffUtil.h"
#include "TestGraphs.h"
#include "lowering/LowerOps.h"
#include "support/Error.h"
#include "tir/Equal.h"
#include "tir/IRMutator.h"
#include "tir/PassManager.h"
#include "tir/Printer.h"
#include "tir/Verify.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace npuc;
using namespace npuc::tir;
using graph::Graph;
using graph::ValueId;
using testgraphs::constant;
using testgraphs::input;
using testgraphs::node;

namespace {

// The text cannot show how statements were grouped into Seq nodes (a Seq inside a Seq, a Seq
// of one statement): the parser builds flat ones, so the original is compared flattened.
class FlattenSeq : public IRMutator {
protected:
  Stmt mutateSeq(const SeqNode *op, const Stmt &self) override {
    std::vector<Stmt> flat;
    for (const Stmt &c : op->stmts) {
      Stmt m = mutate(c);
      if (const auto *inner = m.as<SeqNode>())
        flat.insert(flat.end(), inner->stmts.begin(), inner->stmts.end());
      else
        flat.push_back(m);
    }
    if (flat.size() == 1)
      return flat[0];
    return SeqNode::make(std::move(flat));
  }
};

void expectRoundTrip(const PrimFunc &f) {
  std::string text = toText(f);
  PrimFunc g = parseFunc(text);
  PrimFunc flat = f;
  flat.body = FlattenSeq().mutate(f.body);
  EXPECT_TRUE(structuralEqual(flat, g)) << text << "---- reparsed as\n" << toText(g);
  EXPECT_EQ(toText(g), text);
  EXPECT_TRUE(verifyErrors(g).empty());
}

// Every expression kind, every statement kind, every loop kind, unusual literals.
PrimFunc kitchenSink() {
  Buffer a = Buffer::make("A", DataType::Float(32), {4, 8});
  Buffer b = Buffer::make("B", DataType::Int(32), {16});
  Buffer c = Buffer::make("C", DataType::Float(64), {2}, "l1");
  Buffer t = Buffer::make("T", DataType::Float(32), {4}, "l0a");
  Var i = Var::make("i"), j = Var::make("j"), k = Var::make("k"), i2 = Var::make("i");
  Expr idx = i * 8 + j;
  Expr fl = load(a, idx);
  Stmt inner = seq({
      store(a, select((i < j && !(j == 3)) || i >= 2, fl * fimm(1.5), fimm(-0.25)), idx),
      store(b,
            cast(DataType::Int(32), floordiv(i - (j - k), 3) + floormod(j, -2)) +
                IntImm::make(-7, DataType::Int(32)),
            min(max(i, j), imm(15))),
      store(c, FloatImm::make(0.1, DataType::Float(64)) + cast(DataType::Float(64), fl), i % 2),
      store(a, call(DataType::Float(32), "exp", {fl / fimm(3)}) + fimm(-INFINITY), idx),
      Evaluate::make(imm(-9223372036854775807LL - 1)),
      IfThenElse::make(
          i != j, store(t, fimm(1e-20f), j % 4),
          IfThenElse::make(gt(j, i * -3), Evaluate::make(IntImm::make(1, DataType::Bool())))),
      NpuOp::make("mm.acc", {{"dst", i * 64}, {"n", imm(16)}, {"flag", (i <= j) || (j > 1)}}),
  });
  Stmt body =
      forLoop(i, imm(0), imm(4),
              forLoop(j, imm(1), imm(7), forLoop(k, imm(0), imm(2), inner, ForKind::Pipelined),
                      ForKind::Unrolled),
              ForKind::Parallel);
  body = Allocate::make(t, AttrStmt::make("double_buffer", imm(2), body));
  body = seq({body, forLoop(i2, imm(0), imm(3), store(b, IntImm::make(0, DataType::Int(32)), i2))});
  return PrimFunc{"sink", {a, b, c}, body};
}

TEST(Parser, RoundTripsEveryNodeKind) {
  PrimFunc f = kitchenSink();
  expectRoundTrip(f);
  // The second loop called `i` is a different variable: it prints (and re-reads) as i_1.
  EXPECT_NE(toText(f).find("for (i_1, 0, 3)"), std::string::npos);
}

TEST(Parser, StatementsAndExpressionsWithAnEnvironment) {
  Buffer a = Buffer::make("A", DataType::Float(32), {8});
  Var n = Var::make("n");
  Stmt s = parseStmt("for (i, 0, n) {\n  A[i] = A[i + 1] * 2.0f\n}\n", {a}, {n});
  Var i;
  const auto *loop = s.as<ForNode>();
  ASSERT_NE(loop, nullptr);
  EXPECT_TRUE(loop->extent.same(n));
  Stmt expected =
      forLoop(loop->var, imm(0), n, store(a, load(a, loop->var + 1) * fimm(2), loop->var));
  EXPECT_TRUE(structuralEqual(s, expected));
  Expr e = parseExpr("floordiv(n * 8 + 3, 4) == n * 2", {}, {n});
  EXPECT_TRUE(structuralEqual(e, floordiv(n * 8 + 3, 4) == n * 2));
  // Precedence and associativity: a - (b - c) keeps its parentheses, a - b - c needs none.
  EXPECT_TRUE(structuralEqual(parseExpr("n - (n - 1)", {}, {n}), n - (n - 1)));
  EXPECT_TRUE(structuralEqual(parseExpr("n - n - 1", {}, {n}), (n - n) - 1));
  EXPECT_TRUE(structuralEqual(parseExpr("n + n * 2 < 3 || !(n == 1)", {}, {n}),
                              (n + n * 2 < 3) || !(n == 1)));
}

TEST(Parser, CommentsAndSeveralFunctions) {
  std::vector<PrimFunc> fs = parseFuncs("// a comment\nfunc f(A: int64[2] @global) {\n"
                                        "  A[0] = 1 // trailing\n}\n\nfunc g() {\n}\n");
  ASSERT_EQ(fs.size(), 2u);
  EXPECT_EQ(fs[0].name, "f");
  EXPECT_EQ(toText(fs[0]), "func f(A: int64[2] @global) {\n  A[0] = 1\n}\n");
  EXPECT_EQ(toText(fs[1]), "func g() {\n}\n");
}

// ---------------------------------------------------------------- lowered graph ops

void roundTripEachNode(Graph &g) {
  testgraphs::forEachNodeLowered(g, [](const PrimFunc &f) { expectRoundTrip(f); });
}

TEST(Parser, RoundTripsLoweredConvAndPools) {
  Graph g;
  ValueId x = input(g, "x", {1, 4, 7, 6});
  node(g, graph::OpKind::Conv, {x, constant(g, "w", {6, 2, 3, 2}), constant(g, "b", {6})},
       {1, 6, 3, 4},
       {{"group", int64_t{2}},
        {"strides", std::vector<int64_t>{2, 1}},
        {"pads", std::vector<int64_t>{1, 0, 2, 1}},
        {"dilations", std::vector<int64_t>{2, 3}}});
  std::map<std::string, graph::AttrValue> win{{"kernel_shape", std::vector<int64_t>{3, 3}},
                                              {"strides", std::vector<int64_t>{2, 2}},
                                              {"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  node(g, graph::OpKind::MaxPool, {x}, {1, 4, 4, 3}, win);
  node(g, graph::OpKind::AveragePool, {x}, {1, 4, 4, 3}, win);
  node(g, graph::OpKind::GlobalAveragePool, {x}, {1, 4, 1, 1});
  roundTripEachNode(g);
}

TEST(Parser, RoundTripsLoweredGemmShapeOpsSoftmaxBatchNorm) {
  Graph g;
  ValueId a = input(g, "a", {5, 3});
  node(g, graph::OpKind::Gemm, {a, constant(g, "b", {4, 5}), constant(g, "c", {4})}, {3, 4},
       {{"transA", int64_t{1}}, {"transB", int64_t{1}}, {"alpha", 0.5}, {"beta", 2.0}});
  ValueId x = input(g, "x", {2, 3, 4});
  node(g, graph::OpKind::Transpose, {x}, {4, 2, 3}, {{"perm", std::vector<int64_t>{2, 0, 1}}});
  node(g, graph::OpKind::Concat, {x, x}, {2, 6, 4}, {{"axis", int64_t{1}}});
  node(g, graph::OpKind::Softmax, {x}, {2, 3, 4}, {{"axis", int64_t{1}}});
  node(g, graph::OpKind::Sigmoid, {x}, {2, 3, 4});
  node(g, graph::OpKind::Add, {x, constant(g, "k", {4})}, {2, 3, 4});
  node(g, graph::OpKind::BatchNormalization,
       {x, constant(g, "s", {3}), constant(g, "bb", {3}), constant(g, "m", {3}),
        constant(g, "v", {3})},
       {2, 3, 4}, {{"epsilon", 1e-3}});
  node(g, graph::OpKind::Pad, {x}, {3, 5, 5},
       {{"pads", std::vector<int64_t>{0, 1, 0, 1, 1, 1}}, {"value", 0.25}});
  roundTripEachNode(g);
}

// ---------------------------------------------------------------- errors

void expectError(const std::string &text, const std::string &message) {
  try {
    parseFuncs(text, {"t.tir", 1});
    ADD_FAILURE() << "no error for:\n" << text;
  } catch (const npuc::Error &e) {
    EXPECT_EQ(std::string(e.what()), message);
  }
}

TEST(Parser, ErrorsNameLineAndColumn) {
  expectError("func f(A: float32[4] @global) {\n  A[i] = 1.0f\n}\n",
              "t.tir:2:5: error: use of undefined variable 'i'");
  expectError("func f(A: float32[4] @global) {\n  A[0] = 1\n}\n",
              "t.tir:2:10: error: the value stored to 'A' must be float32, not int64");
  expectError("func f() {\n  for (i, 0, 4) {\n    B[i] = 1.0f\n  }\n}\n",
              "t.tir:3:5: error: use of undeclared buffer 'B'");
  expectError("func f(A: int64[4] @global) {\n  A[0] = 1 + 2.0f\n}\n",
              "t.tir:2:12: error: operands of '+' differ in type: int64 vs float32");
  expectError("func f(A: int64[4] @global) {\n  for (i, 0, 4 {\n",
              "t.tir:2:16: error: expected ')', found '{'");
  expectError("func f(A: int64[4] @global) {\n  A[0] = 1 $ 2\n}\n",
              "t.tir:2:12: error: unexpected character '$'");
  expectError("func f(A: int64[4] @global) {\n  if (A[0]) {\n  }\n}\n",
              "t.tir:2:7: error: an if condition must be bool, not int64");
  expectError("func f(A: float32[4] @global) {\n  A[0] = 1.5\n}\n",
              "t.tir:2:10: error: a float literal needs an 'f' suffix (float32) or a type, as in "
              "float64(1.5)");
  expectError("func f(A: int64[4] @global, A: int64[2] @l1) {\n}\n",
              "t.tir:1:29: error: parameter 'A' is declared twice");
  expectError("func f(A: int64[4] @global) {\n  A[0] = min(1)\n}\n",
              "t.tir:2:10: error: 'min' takes 2 arguments, not 1");
  expectError("", "t.tir:1:1: error: expected 'func'");
}

// ---------------------------------------------------------------- the nesting limit

std::string repeat(const std::string &s, int n) {
  std::string out;
  for (int k = 0; k < n; ++k)
    out += s;
  return out;
}

// The deepest text of each shape is accepted, one level more is an error at the token that goes
// past kMaxTextDepth; the levels are counted by hand from Parser.h's definition (each statement
// body, bracket, call, '!' and binary operator is one; a literal or variable is one).
TEST(Parser, NestingLimit) {
  ASSERT_EQ(kMaxTextDepth, 256); // the expectations below are written for 256
  const std::string head = "func f(A: int64[4] @global, B: bool[1] @global) {\n  A[0] = ";
  auto parens = [&](int n) { return head + repeat("(", n) + "1" + repeat(")", n) + "\n}\n"; };
  // 1 + 1 + ... with n operators is n + 1 levels (the literals are the last).
  auto sum = [&](int n) { return head + "1" + repeat(" + 1", n) + "\n}\n"; };
  auto nots = [&](int n) { return head + "select(" + repeat("!", n) + "B[0], 1, 2)\n}\n"; };
  // n loop bodies around A[0] = 1, whose load A[0] is two levels (the load and its index).
  auto loops = [&](int n) {
    std::string t = "func f(A: int64[4] @global) {\n";
    for (int k = 0; k < n; ++k)
      t += "for (i" + std::to_string(k) + ", 0, 1) {\n";
    return t + "A[0] = 1\n" + repeat("}\n", n) + "}\n";
  };
  // Parentheses: 256 accepted, the 257th '(' (column 10 + 256) is one too many.
  std::vector<PrimFunc> deepest = {parseFunc(parens(256))};
  expectError(parens(257), "t.tir:2:266: error: nested more than 256 levels deep (each statement "
                           "body, bracket, call and operator is one level, so a + b + ... is one "
                           "per '+'): the limit of TIR text");
  // Sums: 255 operators accepted; the 256th '+' (column 12 + 4 * 255) is one too many.
  deepest.push_back(parseFunc(sum(255)));
  expectError(sum(256), "t.tir:2:1032: error: nested more than 256 levels deep (each statement "
                        "body, bracket, call and operator is one level, so a + b + ... is one per "
                        "'+'): the limit of TIR text");
  // B[0] is two levels, each '!' one and select( one: 253 '!' fit; with 254 the select node is
  // one level too deep, an error at 'select' (column 10).
  deepest.push_back(parseFunc(nots(253)));
  expectError(nots(254), "t.tir:2:10: error: nested more than 256 levels deep (each statement "
                         "body, bracket, call and operator is one level, so a + b + ... is one per "
                         "'+'): the limit of TIR text");
  // Loops: 254 bodies leave two levels for A[0]; in 255 the load A[0] on line 257 is too deep.
  deepest.push_back(parseFunc(loops(254)));
  expectError(loops(255), "t.tir:257:1: error: nested more than 256 levels deep (each statement "
                          "body, bracket, call and operator is one level, so a + b + ... is one "
                          "per '+'): the limit of TIR text");

  // What the parser accepts, the verifier, every pass alone, the normalisation pipeline with
  // emission, the printer and structural equality handle.
  PassRegistry registry = test::allPasses();
  PassContext ctx;
  std::vector<std::string> specs;
  for (const PassInfo &p : registry.passes())
    specs.push_back(test::passSpec(p));
  const std::string target = "{target=" + test::kTargetPath + "}";
  specs.push_back(std::string(test::kPipeline) + ",pre-process" + target + ",emit-npu" + target);
  for (const PrimFunc &f : deepest) {
    EXPECT_TRUE(verifyErrors(f).empty());
    EXPECT_TRUE(structuralEqual(parseFunc(toText(f)), f));
    for (const std::string &spec : specs) {
      PassManager pm(test::pipeline(spec), ctx);
      EXPECT_TRUE(verifyErrors(pm.run(f)).empty()) << spec;
    }
  }
}

} // namespace
