// JitTest.cpp - JIT-compiles hand-built PrimFuncs (matmul, floor arithmetic, intrinsics, large
// Allocate, if/else, vector and unrolled loops) and compares with naive C++ loops written
// independently here.
#include "cpu_fallback/Jit.h"
#include "cpu_fallback/Codegen.h"

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

TEST(Jit, VectorAndUnrolledLoopsCoverEveryAccessForm) {
  // For r in [0, 3), vector loop over j in [0, 11) (odd width) wrapped in an unrolled loop u:
  //   Y[r][j] (contiguous store) = X[r][j] * G[j * 3 + u] (strided gather) + select(j < 5, u, -j)
  //   Z[j * 3 + r] (scatter store) = exp(X[r][j]) (lane-by-lane call) + S[r] (splatted scalar)
  // with Y accumulated over u (a contiguous load of the stored vector).
  const int64_t rows = 3, w = 11, taps = 3;
  DataType f32 = DataType::Float(32);
  Buffer X = Buffer::make("X", f32, {rows, w}), G = Buffer::make("G", f32, {w * taps});
  Buffer S = Buffer::make("S", f32, {rows}), Y = Buffer::make("Y", f32, {rows, w});
  Buffer Z = Buffer::make("Z", f32, {w * rows});
  Var r = Var::make("r"), j = Var::make("j"), u = Var::make("u"), j0 = Var::make("j0");
  Expr yi = r * w + j;
  Expr term = load(X, yi) * load(G, j * taps + u) + cast(f32, select(j < imm(5), u, imm(0) - j));
  Stmt body =
      seq({forLoop(u, imm(0), imm(taps), store(Y, load(Y, yi) + term, yi), ForKind::Unrolled),
           store(Z, call(f32, "exp", {load(X, yi)}) + load(S, r), j * rows + r)});
  Stmt vec =
      AttrStmtNode::make(npuc::cpu::kVectorizeAttr, imm(w), forLoop(j, imm(0), imm(w), body));
  Stmt zero = forLoop(j0, imm(0), imm(w), store(Y, fimm(0), r * w + j0));
  npuc::cpu::Jit jit;
  jit.add({PrimFunc{"vec", {X, G, S, Y, Z}, forLoop(r, imm(0), imm(rows), seq({zero, vec}))}});
  std::mt19937 rng(4);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> x(rows * w), g(w * taps), sv(rows), y(rows * w, 7.f), z(w * rows, 7.f);
  for (auto *v : {&x, &g, &sv})
    for (float &e : *v)
      e = dist(rng);
  void *args[] = {x.data(), g.data(), sv.data(), y.data(), z.data()};
  jit.lookup("vec")(args);
  for (int64_t ri = 0; ri < rows; ++ri)
    for (int64_t ji = 0; ji < w; ++ji) {
      double ref = 0;
      for (int64_t ui = 0; ui < taps; ++ui)
        ref += double(x[ri * w + ji]) * g[ji * taps + ui] + double(ji < 5 ? ui : -ji);
      EXPECT_NEAR(y[ri * w + ji], ref, 1e-5 * (1 + std::fabs(ref))) << ri << "," << ji;
      double zr = std::exp(double(x[ri * w + ji])) + sv[ri];
      EXPECT_NEAR(z[ji * rows + ri], zr, 1e-5 * (1 + std::fabs(zr))) << ri << "," << ji;
    }
}

} // namespace
