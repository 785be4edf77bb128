// ArithTest.cpp - bound analysis (intervals, modular facts) and the Prover: what the rules
// decide, what only Z3 decides, what neither can (a condition that really depends on the
// variables), and the cache. Expected intervals are worked out by hand from the ranges.
#include "tir/Bound.h"
#include "tir/Linear.h"
#include "tir/Parser.h"
#include "tir/Prover.h"

#include <gtest/gtest.h>

using namespace npuc::tir;

namespace {

struct Env {
  Var i = Var::make("i"), j = Var::make("j"), x = Var::make("x");
  Expr parse(const std::string &s) const { return parseExpr(s, {}, {i, j, x}); }
};

TEST(Bound, Intervals) {
  Env v;
  BoundAnalyzer b;
  b.bind(v.i, 0, 8); // i in [0, 7]
  b.bind(v.j, 0, 4); // j in [0, 3]
  auto iv = [&](const std::string &s) {
    Interval r = b.bound(v.parse(s));
    return std::make_pair(r.lo, r.hi);
  };
  EXPECT_EQ(iv("i * 4 + j"), std::make_pair(int64_t{0}, int64_t{31}));
  EXPECT_EQ(iv("i - j * 2"), std::make_pair(int64_t{-6}, int64_t{7}));
  EXPECT_EQ(iv("floordiv(i * 4 + j, 4)"), std::make_pair(int64_t{0}, int64_t{7}));
  EXPECT_EQ(iv("floordiv(i - 8, 3)"), std::make_pair(int64_t{-3}, int64_t{-1}));
  EXPECT_EQ(iv("floormod(i + 16, 32)"), std::make_pair(int64_t{16}, int64_t{23}));
  EXPECT_EQ(iv("floormod(i, 5)"), std::make_pair(int64_t{0}, int64_t{4}));
  EXPECT_EQ(iv("min(i, j + 1) * -2"), std::make_pair(int64_t{-8}, int64_t{0}));
  EXPECT_EQ(iv("select(i < 0, 100, j)"), std::make_pair(int64_t{0}, int64_t{3}));
  Interval unbounded = b.bound(v.parse("x + 1"));
  EXPECT_FALSE(unbounded.bounded());
}

TEST(Bound, ModularFacts) {
  Env v;
  BoundAnalyzer b;
  auto mf = [&](const std::string &s) {
    ModFact m = b.modular(v.parse(s));
    return std::make_pair(m.coeff, m.base);
  };
  EXPECT_EQ(mf("i * 6 + j * 4"), std::make_pair(int64_t{2}, int64_t{0}));
  EXPECT_EQ(mf("i * 6 + j * 4 + 3"), std::make_pair(int64_t{2}, int64_t{1}));
  EXPECT_EQ(mf("(i * 4 + 2) * 3"), std::make_pair(int64_t{12}, int64_t{6}));
  EXPECT_EQ(mf("floormod(i * 8 + 5, 4)"), std::make_pair(int64_t{0}, int64_t{1}));
  EXPECT_EQ(mf("floordiv(i * 8 + 5, 4)"), std::make_pair(int64_t{2}, int64_t{1}));
  EXPECT_EQ(mf("i * 3 - 7"), std::make_pair(int64_t{3}, int64_t{2}));
}

// linearIn fails rather than report a wrapped coefficient: (i * 2^62) * 4 is 2^64 * i, whose
// coefficient wrapped to 0 (as if the index did not depend on i).
TEST(Linear, CoefficientOverflowIsNotLinear) {
  Env v;
  int64_t c = 0;
  Expr rest;
  ASSERT_TRUE(linearIn(v.parse("i * 4611686018427387904 + j"), v.i.node(), c, rest));
  EXPECT_EQ(c, int64_t{1} << 62);
  EXPECT_FALSE(linearIn(v.parse("(i * 4611686018427387904) * 4"), v.i.node(), c, rest));
  EXPECT_FALSE(linearIn(v.parse("i * 9223372036854775807 + i"), v.i.node(), c, rest));
  EXPECT_FALSE(linearIn(v.parse("i * -9223372036854775808 - i"), v.i.node(), c, rest));
}

TEST(Prover, RulesDecideRangeAndDivisibilityFacts) {
  Env v;
  Prover p(ProverOptions{true, false, 200});
  p.bind(v.i, 0, 8);
  p.bind(v.j, 0, 4);
  EXPECT_EQ(p.decide(v.parse("i * 4 + j < 32")), Truth::True);
  EXPECT_EQ(p.decide(v.parse("i * 4 + j >= 32")), Truth::False);
  EXPECT_EQ(p.decide(v.parse("(i * 6 + j * 4) % 2 == 0")), Truth::True);
  EXPECT_EQ(p.decide(v.parse("i * 6 + j * 4 == 7")), Truth::False);
  EXPECT_EQ(p.decide(v.parse("i < 8 && (j >= 0 || x == 3)")), Truth::True);
  EXPECT_EQ(p.decide(v.parse("i < 3")), Truth::Unknown);
  EXPECT_EQ(p.stats().byZ3, 0);
}

// Conditions that intervals and modular facts cannot decide but Z3 can.
TEST(Prover, Z3DecidesWhatTheRulesCannot) {
  Env v;
  Prover rulesOnly(ProverOptions{true, false, 200});
  Prover withZ3(ProverOptions{true, true, 1000});
  for (Prover *p : {&rulesOnly, &withZ3}) {
    p->bind(v.i, -3, 7);  // i in [-3, 3]
    p->bind(v.x, 0, 101); // x in [0, 100]
    p->bind(v.j, 0, 16);
  }
  const char *trueConds[] = {
      "i * i >= 0",                               // a square: the interval of i*i is [-9, 9]
      "floordiv(x * 8 + 3, 4) == x * 2",          // floor((8x+3)/4) = 2x
      "floordiv(x, 4) * 4 + floormod(x, 4) == x", // division identity
      "min(i, j) <= j && max(i - j, 0) * 2 >= i - j",
  };
  for (const char *c : trueConds) {
    SCOPED_TRACE(c);
    EXPECT_EQ(rulesOnly.decide(v.parse(c)), Truth::Unknown);
    EXPECT_EQ(withZ3.decide(v.parse(c)), Truth::True);
  }
  EXPECT_EQ(rulesOnly.decide(v.parse("i * i == 2")), Truth::Unknown);
  EXPECT_EQ(withZ3.decide(v.parse("i * i == 2")), Truth::False);
  EXPECT_EQ(withZ3.decide(v.parse("x % 7 == x - floordiv(x, 7) * 7")), Truth::True);
  EXPECT_EQ(withZ3.decide(v.parse("i / 2 * 2 + i % 2 == i")), Truth::True); // C semantics
  // Depends on the values: neither can decide it.
  EXPECT_EQ(withZ3.decide(v.parse("i * i > x")), Truth::Unknown);
  EXPECT_GE(withZ3.stats().byZ3, 6);
}

TEST(Prover, Z3AloneAndItsCache) {
  Env v;
  ProverCache cache;
  Prover z3Only(ProverOptions{false, true, 1000, &cache});
  z3Only.bind(v.i, 0, 100);
  z3Only.bind(v.j, 0, 100);
  EXPECT_EQ(z3Only.decide(v.parse("(i * 6 + j * 4) % 2 == 0")), Truth::True);
  int64_t hits = z3Only.stats().cacheHits;
  // The same question about other variables with the same ranges is answered from the cache.
  Var a = Var::make("i"), b = Var::make("j");
  Prover second(ProverOptions{false, true, 1000, &cache});
  second.bind(a, 0, 100);
  second.bind(b, 0, 100);
  EXPECT_EQ(second.decide((a * 6 + b * 4) % 2 == 0), Truth::True);
  EXPECT_EQ(second.stats().cacheHits, 1);
  EXPECT_EQ(z3Only.stats().cacheHits, hits);
  // The answers belong to the cache, not to the process: another cache, or none, asks Z3 again.
  ProverCache otherCache;
  for (ProverCache *c : {&otherCache, static_cast<ProverCache *>(nullptr)}) {
    Prover other(ProverOptions{false, true, 1000, c});
    other.bind(a, 0, 100);
    other.bind(b, 0, 100);
    EXPECT_EQ(other.decide((a * 6 + b * 4) % 2 == 0), Truth::True);
    EXPECT_EQ(other.stats().cacheHits, 0);
    EXPECT_EQ(other.stats().byZ3, 1);
  }
  // Different ranges are a different question.
  second.bind(a, 0, 101);
  EXPECT_EQ(second.decide((a * 6 + b * 4) % 2 == 0), Truth::True);
  EXPECT_EQ(second.stats().cacheHits, 1);
}

} // namespace
