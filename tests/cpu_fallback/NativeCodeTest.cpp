// NativeCodeTest.cpp - machine code kept from one JIT and linked by another (what a package's
// `cpu_code` is, cpu_fallback/Jit.h): the same kernels built anew link the stored object without
// LLVM and compute what a fresh compile computes; another CPU, other kernels or a damaged object
// are compiled again, with the reason.
#include "cpu_fallback/Jit.h"

#include <gtest/gtest.h>

#include <random>

using namespace npuc::tir;
using npuc::cpu::Jit;
using npuc::cpu::NativeCode;

namespace {

// C[m,n] = A[m,k] * B[k,n] with the rows in parallel: the loop's closure carries every buffer
// in scope. `backwards` creates the buffers in the opposite order, so that their nodes sit at
// other addresses relative to each other than in a forward build: the IR must not depend on it.
PrimFunc matmul(int64_t m, int64_t n, int64_t k, bool backwards = false) {
  DataType f32 = DataType::Float(32);
  Buffer a, b, c;
  if (backwards) {
    c = Buffer::make("C", f32, {m, n});
    b = Buffer::make("B", f32, {k, n});
    a = Buffer::make("A", f32, {m, k});
  } else {
    a = Buffer::make("A", f32, {m, k});
    b = Buffer::make("B", f32, {k, n});
    c = Buffer::make("C", f32, {m, n});
  }
  Var i = Var::make("i"), j = Var::make("j"), r = Var::make("r");
  Expr ci = i * n + j;
  Stmt body = seq({store(c, fimm(0), ci),
                   forLoop(r, imm(0), imm(k),
                           store(c, load(c, ci) + load(a, i * k + r) * load(b, r * n + j), ci))});
  return PrimFunc{"mm",
                  {a, b, c},
                  forLoop(i, imm(0), imm(m), forLoop(j, imm(0), imm(n), body), ForKind::Parallel)};
}

constexpr int64_t kM = 5, kN = 9, kK = 11;

// What the JIT's `mm` computes on fixed operands.
std::vector<float> runMatmul(Jit &jit) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> a(kM * kK), b(kK * kN), c(kM * kN, -1.f);
  for (float &x : a)
    x = dist(rng);
  for (float &x : b)
    x = dist(rng);
  void *args[] = {a.data(), b.data(), c.data()};
  jit.lookup("mm")(args);
  return c;
}

struct Compiled {
  NativeCode code;
  std::vector<float> result;
};

Compiled compileFresh() {
  Jit jit;
  Jit::Added added = jit.add({matmul(kM, kN, kK)});
  EXPECT_FALSE(added.reused);
  EXPECT_EQ(added.whyNot, "");
  Compiled c{jit.nativeCode(added), runMatmul(jit)};
  EXPECT_EQ(c.code.key, added.key);
  EXPECT_EQ(c.code.key.size(), 64u); // hex SHA-256
  EXPECT_EQ(c.code.host, jit.host());
  EXPECT_FALSE(c.code.object.empty());
  return c;
}

TEST(NativeCode, SameKernelsBuiltAnewLinkTheStoredObject) {
  Compiled fresh = compileFresh();
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(round);
    std::vector<int> spacer(1000 + round * 37); // other heap addresses for the second build
    Jit jit;
    Jit::Added added = jit.add({matmul(kM, kN, kK, /*backwards=*/round == 1)}, &fresh.code);
    EXPECT_TRUE(added.reused) << added.whyNot;
    EXPECT_EQ(added.key, fresh.code.key);
    EXPECT_EQ(runMatmul(jit), fresh.result); // the same machine code: the same bits
  }
}

// out[i] = sum of `n` inputs at i, the rows in parallel: `n` buffers in the loop's closure, more
// than a small hash table holds before it rehashes by address. Built with its buffers created
// in one order or the other, the function's key must not change.
PrimFunc sumOfMany(int n, bool backwards) {
  const int64_t len = 64;
  DataType f32 = DataType::Float(32);
  std::vector<Buffer> ins(static_cast<size_t>(n));
  for (int k = 0; k < n; ++k) {
    int slot = backwards ? n - 1 - k : k;
    ins[size_t(slot)] = Buffer::make("in" + std::to_string(slot), f32, {len});
  }
  Buffer out = Buffer::make("out", f32, {len});
  Var i = Var::make("i");
  Expr sum = load(ins[0], i);
  for (int k = 1; k < n; ++k)
    sum = sum + load(ins[size_t(k)], i);
  std::vector<Buffer> params = ins;
  params.push_back(out);
  return PrimFunc{"sum", params,
                  forLoop(i, imm(0), imm(len), store(out, sum, i), ForKind::Parallel)};
}

TEST(NativeCode, KeysDoNotDependOnWhereNodesAreAllocated) {
  Jit forward, backward;
  const std::string key = forward.add({sumOfMany(40, false)}).key;
  std::vector<int> spacer(777);
  EXPECT_EQ(backward.add({sumOfMany(40, true)}).key, key);
}

TEST(NativeCode, AnotherCpusCodeIsCompiledAgainWithTheReason) {
  Compiled fresh = compileFresh();
  NativeCode other = fresh.code;
  other.host = "x86_64-unknown-linux-gnu pentium4 (features 00000000)";
  other.key[0] = other.key[0] == '0' ? '1' : '0'; // another CPU's attributes: another key
  Jit jit;
  Jit::Added added = jit.add({matmul(kM, kN, kK)}, &other);
  EXPECT_FALSE(added.reused);
  EXPECT_EQ(added.whyNot, "it was compiled for " + other.host + "; this CPU is " + jit.host());
  EXPECT_EQ(runMatmul(jit), fresh.result);
}

TEST(NativeCode, OtherKernelsAreNotLinked) {
  Compiled fresh = compileFresh();
  Jit jit;
  Jit::Added added = jit.add({matmul(kM, kN, kK + 1)}, &fresh.code);
  EXPECT_FALSE(added.reused);
  EXPECT_NE(added.key, fresh.code.key);
  EXPECT_NE(added.whyNot.find("compiled from other kernels"), std::string::npos) << added.whyNot;
}

TEST(NativeCode, AnObjectThatDoesNotParseIsCompiledAgain) {
  Compiled fresh = compileFresh();
  NativeCode damaged = fresh.code;
  damaged.object = "not an object file";
  Jit jit;
  Jit::Added added = jit.add({matmul(kM, kN, kK)}, &damaged);
  EXPECT_FALSE(added.reused);
  EXPECT_EQ(added.whyNot, "the stored object does not parse");
  EXPECT_EQ(runMatmul(jit), fresh.result);
}

} // namespace
