// StatsSum.h - the statistics of runs executed back to back, summed (the report's whole-model
// numbers over NPU segments, a design point's over segments and models).
#pragma once

#include "simulator/Simulator.h"

namespace npuc::sim {

/// Adds every count of `s`, `times` over (a run repeated), to `total`: cycles, MACs, DRAM bytes,
/// stalls, the critical path's other cycles, vector elements, and the per-engine and per-level
/// figures (names taken from `s`). Ratios (dramUtilization), the trace and the counter tracks are
/// not summed.
void addStats(SimStats &total, const SimStats &s, int64_t times = 1);

} // namespace npuc::sim
