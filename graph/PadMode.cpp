// PadMode.cpp - Pad's modes and per-axis index rule (PadMode.h).
#include "graph/PadMode.h"

#include <algorithm>

namespace npuc::graph {

std::optional<PadMode> padModeFromName(const std::string &name) {
  if (name == "constant")
    return PadMode::Constant;
  if (name == "edge")
    return PadMode::Edge;
  if (name == "reflect")
    return PadMode::Reflect;
  return std::nullopt;
}

PadMode padModeOf(const Node &n) {
  return padModeFromName(n.attrString("mode", "constant")).value_or(PadMode::Constant);
}

PadAxis padAxis(int64_t extent, int64_t begin, int64_t end) {
  return {begin, std::max<int64_t>(-begin, 0), extent - 1 - std::max<int64_t>(-end, 0)};
}

std::optional<int64_t> padSource(PadMode mode, const PadAxis &a, int64_t o) {
  const int64_t x = o - a.begin;
  if (x >= a.first && x <= a.last)
    return x;
  if (mode == PadMode::Constant)
    return std::nullopt;
  if (mode == PadMode::Edge)
    return std::clamp(x, a.first, a.last);
  // Reflect: one mirror suffices, the shape rule keeps each pad below the kept extent.
  return x < a.first ? 2 * a.first - x : 2 * a.last - x;
}

} // namespace npuc::graph
