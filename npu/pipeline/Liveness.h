// Liveness.h - which steps each DRAM buffer of a run of groups is live over.
//
// Step i is groupIds[i]. A value is live from the step that produces it (step 0 for values the
// steps read without producing them, which are written before the first step) to its last use;
// a view aliases its input, so an alias chain is one buffer (its root) whose lifetime is the
// union. The segment pipeline computes it over a whole segment (then the values read after the
// segment live to its end), and batch splitting over one run at sub-batch size.
#pragma once

#include "graph/Graph.h"

#include <cstdint>
#include <functional>
#include <map>
#include <utility>
#include <vector>

namespace npuc::npu {

using Span = std::pair<int64_t, int64_t>; // live steps [first, end)

struct Liveness {
  std::map<graph::ValueId, Span> life; // alias root -> its live steps
  /// Values read before any step produces them (written before the first step), in the order
  /// of their first read.
  std::vector<graph::ValueId> inputs;
  /// Values the steps produce that something after them reads (a group outside `groupIds`, or
  /// the host: graph outputs), by value id.
  std::vector<graph::ValueId> escaping;
};

/// The lifetimes over the steps `groupIds` of `g`; `rootOf` maps a view's value to the value it
/// aliases (the identity for others).
Liveness computeLiveness(const graph::Graph &g, const std::vector<int> &groupIds,
                         const std::function<graph::ValueId(graph::ValueId)> &rootOf);

} // namespace npuc::npu
