// Bound.h - rule-based integer facts over loop ranges: intervals and modular (divisibility) facts.
//
// Given ranges of variables (a loop `for (i, m, e)` binds i to [m, m+e-1]), bound() gives a
// conservative interval of an integer expression and modular() a fact `e == coeff*k + base` for
// some integer k (coeff 0: e is the constant base). decide() combines both to evaluate a
// condition to true/false when the rules can, and Unknown otherwise; Prover.h adds Z3 behind it.
// Interval arithmetic saturates at the int64 limits, which stand for -inf/+inf. Non-integer
// expressions, loads and calls are unbounded.
#pragma once

#include "tir/IR.h"

#include <cstdint>
#include <limits>
#include <unordered_map>

namespace npuc::tir {

enum class Truth { True, False, Unknown };
const char *truthName(Truth t);

struct Interval {
  static constexpr int64_t kNegInf = std::numeric_limits<int64_t>::min();
  static constexpr int64_t kPosInf = std::numeric_limits<int64_t>::max();
  int64_t lo = kNegInf, hi = kPosInf;
  bool isConst() const { return lo == hi; }
  bool bounded() const { return lo != kNegInf && hi != kPosInf; }
};

/// e == coeff * k + base for some integer k; coeff >= 0, 0 <= base < coeff when coeff > 0.
struct ModFact {
  int64_t coeff = 1, base = 0;
};

class BoundAnalyzer {
public:
  /// v ranges over [min, min + extent - 1] (extent >= 1).
  void bind(const Var &v, int64_t min, int64_t extent);
  void bindInterval(const VarNode *v, Interval iv) { ranges_[v] = iv; }
  void unbind(const Var &v) { ranges_.erase(v.get()); }
  const std::unordered_map<const void *, Interval> &ranges() const { return ranges_; }

  Interval bound(const Expr &e) const;
  ModFact modular(const Expr &e) const;
  /// A bool expression's value for every assignment within the ranges, when the rules know it.
  Truth decide(const Expr &cond) const;

private:
  std::unordered_map<const void *, Interval> ranges_;
};

} // namespace npuc::tir
