// Prover.h - deciding integer conditions over loop ranges: the rules of Bound.h first, then Z3.
//
// decide(cond) answers True (cond holds for every assignment of the bound variables within
// their ranges), False (it holds for none) or Unknown. When the interval/modular rules cannot
// tell, the condition is handed to Z3 as a formula over mathematical integers (int64 wrap-around
// is not modelled: TIR index arithmetic is int64 so that it never wraps) with every bound
// variable constrained to its range; Z3 gets a bounded time (Unknown when it runs out).
// Conditions with float operands, loads or calls are Unknown. Z3 answers are kept in a ProverCache
// that the caller owns (a PassContext holds one for the passes it runs), keyed by the printed
// condition and ranges, so repeating a question there costs nothing.
#pragma once

#include "tir/Bound.h"

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace npuc::tir {

/// Z3's answers by question (condition, ranges, time limit). Shared by the provers of every pass
/// run under one PassContext, whose passes may run on several threads, hence the lock.
class ProverCache {
public:
  std::optional<Truth> find(const std::string &key);
  void insert(const std::string &key, Truth t);
  size_t size();

private:
  std::mutex mutex_;
  std::map<std::string, Truth> answers_;
};

struct ProverOptions {
  bool useRules = true; // tests turn the rules off to show what Z3 alone decides
  bool useZ3 = true;
  unsigned timeoutMs = 200;
  ProverCache *cache = nullptr; // where Z3's answers are kept and looked up; none when null
};

struct ProverStats {
  int64_t byRules = 0, byZ3 = 0, cacheHits = 0, unknown = 0;
};

class Prover {
public:
  explicit Prover(ProverOptions o = {}) : opts_(o) {}
  BoundAnalyzer &bounds() { return bounds_; }
  void bind(const Var &v, int64_t min, int64_t extent) { bounds_.bind(v, min, extent); }
  void unbind(const Var &v) { bounds_.unbind(v); }

  Truth decide(const Expr &cond);
  /// True only when cond provably holds.
  bool prove(const Expr &cond) { return decide(cond) == Truth::True; }
  const ProverStats &stats() const { return stats_; }

private:
  ProverOptions opts_;
  BoundAnalyzer bounds_;
  ProverStats stats_;
  Truth z3Decide(const Expr &cond);
};

} // namespace npuc::tir
