// TraceSpans.h - the cycles a range of program indices spans in a simulator trace (the report's
// per-group cycles, `npuc explore report --roofline`'s per-group points).
#pragma once

#include "simulator/Simulator.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

namespace npuc::sim {

/// The cycles each program index spans in a simulator trace (first start, last end), indexed
/// once per segment so that a group's span reads only its own instructions: a segment of
/// thousands of groups would otherwise scan the whole trace per group.
class TraceSpans {
public:
  explicit TraceSpans(const std::vector<sim::TraceEvent> &trace) {
    for (const sim::TraceEvent &e : trace) {
      if (e.index < 0)
        continue;
      if (static_cast<size_t>(e.index) >= spans_.size())
        spans_.resize(static_cast<size_t>(e.index) + 1, {kNone, kNoneEnd});
      auto &[lo, hi] = spans_[static_cast<size_t>(e.index)];
      lo = std::min(lo, e.start);
      hi = std::max(hi, e.end);
    }
  }
  /// Cycles spanned by the instructions [begin, end) (0 when none ran).
  int64_t cycles(int64_t begin, int64_t end) const {
    int64_t lo = kNone, hi = kNoneEnd;
    const int64_t last = std::min(end, static_cast<int64_t>(spans_.size()));
    for (int64_t i = std::max<int64_t>(begin, 0); i < last; ++i) {
      lo = std::min(lo, spans_[static_cast<size_t>(i)].first);
      hi = std::max(hi, spans_[static_cast<size_t>(i)].second);
    }
    return hi >= lo ? hi - lo : 0;
  }

private:
  static constexpr int64_t kNone = std::numeric_limits<int64_t>::max();
  static constexpr int64_t kNoneEnd = std::numeric_limits<int64_t>::min();
  std::vector<std::pair<int64_t, int64_t>> spans_;
};

} // namespace npuc::sim
