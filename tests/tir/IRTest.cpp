// IRTest.cpp - tests of the TIR core: the printed form of a small nest (exact golden text),
// pointer sharing in IRMutator, structural equality, simplifier rules, evalInt and the verifier.
#include "tir/Equal.h"
#include "tir/Eval.h"
#include "tir/IRMutator.h"
#include "tir/IRVisitor.h"
#include "tir/Printer.h"
#include "tir/Simplify.h"
#include "tir/Verify.h"

#include <gtest/gtest.h>

#include <cmath>
#include <optional>

using namespace npuc::tir;

namespace {

// C[i, j] = sum_k A[i, k] * B[k, j] over 4x3 * 3x5, with a zero-init and a relu epilogue.
PrimFunc matmulFunc(Var &i, Var &j, Var &k) {
  Buffer a = Buffer::make("A", DataType::Float(32), {4, 3});
  Buffer b = Buffer::make("B", DataType::Float(32), {3, 5});
  Buffer c = Buffer::make("C", DataType::Float(32), {4, 5});
  i = Var::make("i");
  j = Var::make("j");
  k = Var::make("k");
  Expr ci = i * 5 + j;
  Stmt body = seq({store(c, fimm(0), ci),
                   forLoop(k, imm(0), imm(3),
                           store(c, load(c, ci) + load(a, i * 3 + k) * load(b, k * 5 + j), ci)),
                   store(c, max(load(c, ci), fimm(0)), ci)});
  Stmt nest = forLoop(i, imm(0), imm(4), forLoop(j, imm(0), imm(5), body, ForKind::Unrolled));
  return PrimFunc{"matmul", {a, b, c}, nest};
}

TEST(Printer, GoldenMatmul) {
  Var i, j, k;
  PrimFunc f = matmulFunc(i, j, k);
  const char *expected = "func matmul(A: float32[4, 3] @global, B: float32[3, 5] @global, "
                         "C: float32[4, 5] @global) {\n"
                         "  for (i, 0, 4) {\n"
                         "    unrolled for (j, 0, 5) {\n"
                         "      C[i * 5 + j] = 0.0f\n"
                         "      for (k, 0, 3) {\n"
                         "        C[i * 5 + j] = C[i * 5 + j] + A[i * 3 + k] * B[k * 5 + j]\n"
                         "      }\n"
                         "      C[i * 5 + j] = max(C[i * 5 + j], 0.0f)\n"
                         "    }\n"
                         "  }\n"
                         "}\n";
  EXPECT_EQ(toText(f), expected);
}

TEST(Printer, UniqueNamesParensAndStatements) {
  Var a = Var::make("x"), b = Var::make("x");
  EXPECT_EQ(toText((a - (b - imm(1))) * imm(2)), "(x - (x_1 - 1)) * 2");
  EXPECT_EQ(toText(!(a < b) && floordiv(a, 3) == floormod(b, 4)),
            "!(x < x_1) && floordiv(x, 3) == floormod(x_1, 4)");
  Buffer t = Buffer::make("T", DataType::Float(16), {8}, "l1");
  Stmt s = AllocateNode::make(
      t, AttrStmtNode::make(
             "double_buffer", imm(1),
             IfThenElseNode::make(a < 3, NpuOpNode::make("ld", {{"dst", a * 16}, {"n", imm(16)}}),
                                  EvaluateNode::make(call(DataType::Float(32), "exp",
                                                          {cast(DataType::Float(32), a)})))));
  EXPECT_EQ(toText(s), "allocate T: float16[8] @l1 {\n"
                       "  attr double_buffer = 1 {\n"
                       "    if (x < 3) {\n"
                       "      npu.ld(dst=x * 16, n=16)\n"
                       "    } else {\n"
                       "      exp(float32(x))\n"
                       "    }\n"
                       "  }\n"
                       "}\n");
  EXPECT_EQ(toText(fimm(1.5)), "1.5f");
  EXPECT_EQ(toText(fimm(-INFINITY)), "float32(-inf)");
  EXPECT_EQ(toText(fimm(2.0, DataType::Float(16))), "float16(2.0)");
}

// Rewrites loads of A into loads of A2; everything not touching A must be shared.
class RenameBuffer : public IRMutator {
public:
  Buffer from, to;
  Buffer mutateBuffer(const Buffer &b) override { return b.same(from) ? to : b; }
};

TEST(Mutator, ReusesUnchangedNodes) {
  Var i, j, k;
  PrimFunc f = matmulFunc(i, j, k);
  IRMutator identity;
  EXPECT_TRUE(identity.mutate(f.body).same(f.body));

  RenameBuffer r;
  r.from = f.params[0];
  r.to = Buffer::make("A2", DataType::Float(32), {4, 3});
  Stmt out = r.mutate(f.body);
  EXPECT_FALSE(out.same(f.body));
  // The seq under the j loop: the zero-init store and the relu store do not read A.
  const auto *oldSeq = f.body.as<ForNode>()->body.as<ForNode>()->body.as<SeqNode>();
  const auto *newSeq = out.as<ForNode>()->body.as<ForNode>()->body.as<SeqNode>();
  ASSERT_NE(newSeq, nullptr);
  EXPECT_TRUE(newSeq->stmts[0].same(oldSeq->stmts[0]));
  EXPECT_FALSE(newSeq->stmts[1].same(oldSeq->stmts[1]));
  EXPECT_TRUE(newSeq->stmts[2].same(oldSeq->stmts[2]));
  // Inside the changed store, the index expression is shared too.
  const auto *oldSt = oldSeq->stmts[1].as<ForNode>()->body.as<StoreNode>();
  const auto *newSt = newSeq->stmts[1].as<ForNode>()->body.as<StoreNode>();
  EXPECT_TRUE(newSt->index.same(oldSt->index));
  EXPECT_NE(toText(out).find("A2[i * 3 + k]"), std::string::npos);
}

TEST(Equal, BindsLoopVarsByPosition) {
  Var i1, j1, k1, i2, j2, k2;
  PrimFunc f1 = matmulFunc(i1, j1, k1), f2 = matmulFunc(i2, j2, k2);
  EXPECT_TRUE(structuralEqual(f1, f2));
  EXPECT_TRUE(structuralEqual(f1.body, f2.body));    // buffers equal by declaration
  EXPECT_FALSE(structuralEqual(Expr(i1), Expr(i2))); // free vars: identity
  EXPECT_TRUE(structuralEqual(i1 + 1, i1 + 1));
  EXPECT_FALSE(structuralEqual(i1 + 1, i1 + 2));
  EXPECT_FALSE(structuralEqual(i1 + 1, imm(1) + i1));
  // Swapping two loop variables in a body is a real difference.
  Buffer o = Buffer::make("O", DataType::Int(64), {16});
  Var a = Var::make("a"), b = Var::make("b");
  Stmt s1 = forLoop(a, imm(0), imm(4), forLoop(b, imm(0), imm(4), store(o, a, a * 4 + b)));
  Stmt s2 = forLoop(b, imm(0), imm(4), forLoop(a, imm(0), imm(4), store(o, a, a * 4 + b)));
  Stmt s3 = forLoop(b, imm(0), imm(4), forLoop(a, imm(0), imm(4), store(o, b, b * 4 + a)));
  EXPECT_FALSE(structuralEqual(s1, s2));
  EXPECT_TRUE(structuralEqual(s1, s3));
}

TEST(Simplify, Rules) {
  Var x = Var::make("x"), y = Var::make("y");
  EXPECT_EQ(toText(simplify(imm(2) + imm(3) * imm(4))), "14");
  EXPECT_EQ(toText(simplify(x + 0)), "x");
  EXPECT_EQ(toText(simplify(imm(0) + x)), "x");
  EXPECT_EQ(toText(simplify(x * 1)), "x");
  EXPECT_EQ(toText(simplify(x * 0)), "0");
  EXPECT_EQ(toText(simplify((x + 3) + 4)), "x + 7");
  EXPECT_EQ(toText(simplify((x + 3) - 3)), "x");
  EXPECT_EQ(toText(simplify(imm(2) * (x * 3))), "x * 6");
  EXPECT_EQ(toText(simplify(min(imm(3), imm(-2)) + max(imm(3), imm(-2)))), "1");
  EXPECT_EQ(toText(simplify(floordiv(x, 1) + floormod(y, 1))), "x");
  EXPECT_EQ(toText(simplify(floordiv(imm(-7), imm(2)))), "-4");
  EXPECT_EQ(toText(simplify(imm(-7) / imm(2))), "-3");
  EXPECT_EQ(toText(simplify(floormod(imm(-7), imm(2)))), "1");
  EXPECT_EQ(toText(simplify(select(imm(1) < imm(2), x, y))), "x");
  EXPECT_EQ(toText(simplify(fimm(1.5) * fimm(2))), "3.0f");
  Var f = Var::make("f", DataType::Float(32));
  EXPECT_EQ(toText(simplify(f * fimm(0))), "f * 0.0f"); // not folded: NaN/inf
  // Division by a constant zero is left alone rather than folded.
  EXPECT_EQ(toText(simplify(x / (imm(1) - imm(1)))), "x / 0");
  Expr unchanged = x * y + 1;
  EXPECT_TRUE(simplify(unchanged).same(unchanged));
}

TEST(Simplify, Statements) {
  Buffer o = Buffer::make("O", DataType::Int(64), {8});
  Var i = Var::make("i"), j = Var::make("j");
  Stmt s = seq({forLoop(i, imm(0), imm(2) - imm(2), store(o, i, i)),
                forLoop(j, imm(0), imm(1) * imm(4), store(o, j + 0, j)),
                IfThenElseNode::make(imm(3) > imm(4), store(o, imm(1), imm(0)))});
  EXPECT_EQ(toText(simplify(s)), "for (j, 0, 4) {\n  O[j] = j\n}\n");
}

TEST(Eval, IntegerSemantics) {
  Var x = Var::make("x"), y = Var::make("y");
  std::unordered_map<const void *, int64_t> env{{x.get(), -7}, {y.get(), 3}};
  EXPECT_EQ(evalInt(x * y + 1, env), -20);
  EXPECT_EQ(evalInt(x / y, env), -2);
  EXPECT_EQ(evalInt(x % y, env), -1);
  EXPECT_EQ(evalInt(floordiv(x, y), env), -3);
  EXPECT_EQ(evalInt(floormod(x, y), env), 2);
  EXPECT_EQ(evalInt(min(x, y) + max(x, y), env), -4);
  EXPECT_EQ(evalInt(select(x < y, x, y), env), -7);
  EXPECT_EQ(evalInt(cast(DataType::Int(64), x >= y || x == -7), env), 1);
  EXPECT_EQ(evalInt(cast(DataType::Int(8), imm(200)), env), -56);
  EXPECT_DEATH(evalInt(x + Var::make("z"), env), "unbound variable z");
}

// Integer overflow per type (Eval.h, Halide's rules); expected values worked out by hand in
// two's complement.
TEST(Eval, OverflowPerType) {
  auto fold = [](NodeKind k, int64_t a, int64_t b, DataType t) -> std::optional<int64_t> {
    int64_t out = 0;
    return foldIntBinary(k, a, b, t, out) ? std::optional<int64_t>(out) : std::nullopt;
  };
  const DataType i8 = DataType::Int(8), i16 = DataType::Int(16), i32 = DataType::Int(32),
                 i64 = DataType::Int(64), u8 = DataType::UInt(8), u64 = DataType::UInt(64);
  // int32/int64: undefined, so not folded.
  EXPECT_EQ(fold(NodeKind::Add, INT64_MAX, 1, i64), std::nullopt);
  EXPECT_EQ(fold(NodeKind::Sub, INT64_MIN, 1, i64), std::nullopt);
  EXPECT_EQ(fold(NodeKind::Mul, int64_t{1} << 32, int64_t{1} << 31, i64), std::nullopt);
  EXPECT_EQ(fold(NodeKind::Mul, int64_t{1} << 31, int64_t{1} << 31, i64), int64_t{1} << 62);
  EXPECT_EQ(fold(NodeKind::Div, INT64_MIN, -1, i64), std::nullopt);
  EXPECT_EQ(fold(NodeKind::FloorDiv, INT64_MIN, -1, i64), std::nullopt);
  EXPECT_EQ(fold(NodeKind::Add, 2147483647, 1, i32), std::nullopt);
  EXPECT_EQ(fold(NodeKind::Mul, 65536, 32768, i32), std::nullopt);
  EXPECT_EQ(fold(NodeKind::Div, -2147483648, -1, i32), std::nullopt);
  EXPECT_EQ(fold(NodeKind::Mul, 65536, -32768, i32), -2147483648);
  // int8/int16 and unsigned types wrap.
  EXPECT_EQ(fold(NodeKind::Add, 127, 1, i8), -128);
  EXPECT_EQ(fold(NodeKind::Div, -128, -1, i8), -128);
  EXPECT_EQ(fold(NodeKind::Mul, 300, 300, i16), 90000 - 65536 * 1);
  EXPECT_EQ(fold(NodeKind::Mul, 200, 2, u8), 144);
  EXPECT_EQ(fold(NodeKind::Sub, 0, 1, u8), 255);
  EXPECT_EQ(fold(NodeKind::Sub, 0, 1, u64), -1); // the bit pattern of 2^64 - 1
  // uint64 compares and divides as unsigned: 2^63 > 1, 2^63 / 2 = 2^62.
  EXPECT_EQ(fold(NodeKind::GT, INT64_MIN, 1, u64), 1);
  EXPECT_EQ(fold(NodeKind::Max, INT64_MIN, 1, u64), INT64_MIN);
  EXPECT_EQ(fold(NodeKind::Div, INT64_MIN, 2, u64), int64_t{1} << 62);
  EXPECT_EQ(fold(NodeKind::GT, INT64_MIN, 1, i64), 0);
  // Casts wrap to the target width.
  EXPECT_EQ(wrapInt(384, i8), -128);
  EXPECT_EQ(wrapInt(-1, u8), 255);
  // The simplifier keeps what is not folded, and evaluation follows the same rules.
  Var x = Var::make("x");
  EXPECT_EQ(toText(simplify(imm(INT64_MAX) + imm(1))), "9223372036854775807 + 1");
  EXPECT_EQ(toText(simplify((x + imm(INT64_MAX)) + imm(1))), "x + 9223372036854775807 + 1");
  EXPECT_EQ(toText(simplify(x * imm(int64_t{1} << 62) * imm(4))), "x * 4611686018427387904 * 4");
  EXPECT_EQ(toText(simplify(x - imm(INT64_MIN))), "x - -9223372036854775808");
  Expr a8 = IntImmNode::make(100, i8), b8 = IntImmNode::make(100, i8);
  EXPECT_EQ(toText(simplify(a8 + b8)), "int8(-56)");
  EXPECT_EQ(evalInt(a8 + b8), -56);
  Expr a32 = IntImmNode::make(2147483647, i32);
  EXPECT_EQ(toText(simplify(a32 + IntImmNode::make(1, i32))), "int32(2147483647) + int32(1)");
  EXPECT_DEATH(evalInt(a32 + IntImmNode::make(1, i32)), "signed overflow");
  // An IntImm holds a value of its type.
  EXPECT_DEATH(IntImmNode::make(128, i8), "outside the range of int8");
}

TEST(Verify, ReportsScopeErrors) {
  Var i, j, k;
  PrimFunc good = matmulFunc(i, j, k);
  EXPECT_TRUE(verifyErrors(good).empty());

  Buffer a = Buffer::make("A", DataType::Float(32), {4});
  Buffer stray = Buffer::make("S", DataType::Float(32), {4});
  Var v = Var::make("v"), w = Var::make("w");
  PrimFunc bad{"bad",
               {a},
               seq({forLoop(v, imm(0), imm(4), store(a, load(stray, v), w)),
                    forLoop(v, imm(0), imm(4), store(a, fimm(0), v))})};
  std::vector<std::string> errs = verifyErrors(bad);
  ASSERT_EQ(errs.size(), 3u);
  EXPECT_NE(errs[0].find("load of buffer 'S'"), std::string::npos);
  EXPECT_NE(errs[1].find("variable 'w'"), std::string::npos);
  EXPECT_NE(errs[2].find("'v' is bound by two loops"), std::string::npos);

  // Allocate brings a buffer into scope only for its body.
  Buffer t = Buffer::make("T", DataType::Float(32), {4});
  Var u = Var::make("u");
  PrimFunc scoped{"scoped",
                  {a},
                  seq({AllocateNode::make(t, forLoop(u, imm(0), imm(4), store(t, fimm(1), u))),
                       store(a, load(t, imm(0)), imm(0))})};
  errs = verifyErrors(scoped);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_NE(errs[0].find("load of buffer 'T'"), std::string::npos);
}

// Counts nodes through the default recursion of IRVisitor.
class LoadCounter : public IRVisitor {
public:
  int loads = 0;
  void visitLoad(const LoadNode *op) override {
    ++loads;
    IRVisitor::visitLoad(op);
  }
};

TEST(Visitor, DefaultRecursionReachesAllLoads) {
  Var i, j, k;
  PrimFunc f = matmulFunc(i, j, k);
  LoadCounter c;
  c.visit(f.body);
  EXPECT_EQ(c.loads, 4);
}

} // namespace
