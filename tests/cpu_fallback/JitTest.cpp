// JitTest.cpp - JIT-compiles hand-built PrimFuncs (matmul, floor arithmetic, intrinsics, large
// Allocate, if/else) and compares with naive C++ loops written independently here.
#include "cpu_fallback/Jit.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace npuc::tir;

namespace {

PrimFunc matmul(int64_t m, int64_t n, int64_t k) {
  Buffer a = Buffer::make("A", DataType::Float(32), {m, k});
  Buffer b = Buffer::make("B", DataType::Float(32), {k, n});
  Buffer c = Buffer::make("C", DataType::Float(32), {m, n});
  Var i = Var::make("i"), j = Var::make("j"), r = Var::make("r");
  Expr ci = i * n + j;
  Stmt body = seq({store(c, fimm(0), ci),
                   forLoop(r, imm(0), imm(k),
                           store(c, load(c, ci) + load(a, i * k + r) * load(b, r * n + j), ci))});
  return PrimFunc{"mm",
                  {a, b, c},
                  forLoop(i, imm(0), imm(m), forLoop(j, imm(0), imm(n), body), ForKind::Parallel)};
}

TEST(Jit, MatmulMatchesNaiveLoop) {
  const int64_t m = 7, n = 13, k = 19;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> a(m * k), b(k * n), c(m * n, 123.f);
  for (float &x : a)
    x = dist(rng);
  for (float &x : b)
    x = dist(rng);
  npuc::cpu::Jit jit;
  jit.add({matmul(m, n, k)});
  void *args[] = {a.data(), b.data(), c.data()};
  jit.lookup("mm")(args);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double ref = 0;
      for (int64_t r = 0; r < k; ++r)
        ref += double(a[i * k + r]) * b[r * n + j];
      EXPECT_NEAR(c[i * n + j], ref, 1e-5 * (1 + std::fabs(ref))) << i << "," << j;
    }
}

TEST(Jit, IntegerFloorArithmeticAndControlFlow) {
  // out[t] = floordiv(t - 5, 3) * 100 + floormod(t - 5, 3), or -1 when t is odd (via if/else).
  Buffer o = Buffer::make("O", DataType::Int(64), {11});
  Var t = Var::make("t");
  Expr x = t - 5;
  Stmt s = forLoop(t, imm(0), imm(11),
                   IfThenElseNode::make(eq(floormod(t, 2), imm(1)), store(o, imm(-1), t),
                                        store(o, floordiv(x, 3) * 100 + floormod(x, 3), t)));
  npuc::cpu::Jit jit;
  jit.add({PrimFunc{"fl", {o}, s}});
  std::vector<int64_t> out(11, 0);
  void *args[] = {out.data()};
  jit.lookup("fl")(args);
  for (int64_t i = 0; i < 11; ++i) {
    int64_t v = i - 5;
    int64_t q = v >= 0 ? v / 3 : -((-v + 2) / 3);
    int64_t r = v - q * 3;
    EXPECT_EQ(out[i], i % 2 ? -1 : q * 100 + r) << i;
  }
}

TEST(Jit, IntrinsicsSelectCastAndHeapAllocate) {
  // A large temp (above the stack threshold) goes through malloc/free.
  const int64_t n = 40000;
  DataType f32 = DataType::Float(32);
  Buffer in = Buffer::make("X", f32, {n}), out = Buffer::make("Y", f32, {n});
  Buffer tmp = Buffer::make("T", f32, {n});
  Var i = Var::make("i"), j = Var::make("j");
  Expr xv = load(in, i);
  Stmt fill = forLoop(i, imm(0), imm(n),
                      store(tmp,
                            select(xv > fimm(0), call(f32, "exp", {-xv}), call(f32, "tanh", {xv})) +
                                cast(f32, floormod(i, 4)),
                            i));
  Stmt use = forLoop(j, imm(0), imm(n),
                     store(out, call(f32, "sqrt", {call(f32, "fabs", {load(tmp, j)})}), j));
  npuc::cpu::Jit jit;
  jit.add({PrimFunc{"intr", {in, out}, AllocateNode::make(tmp, seq({fill, use}))}});
  std::vector<float> x(n), y(n);
  for (int64_t q = 0; q < n; ++q)
    x[q] = static_cast<float>(q % 97) / 10.f - 4.8f;
  void *args[] = {x.data(), y.data()};
  jit.lookup("intr")(args);
  for (int64_t q = 0; q < n; ++q) {
    double v = x[q] > 0 ? std::exp(-double(x[q])) : std::tanh(double(x[q]));
    double ref = std::sqrt(std::fabs(v + double(q % 4)));
    ASSERT_NEAR(y[q], ref, 1e-5 * (1 + ref)) << q;
  }
}

} // namespace
