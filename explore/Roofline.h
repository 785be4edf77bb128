// Roofline.h - the per-layer roofline chart of one design point (`npuc explore report RESULTS
// --roofline INDEX`).
//
// The point is compiled for each model of the sweep and simulated timing-only with the trace on
// (the results file keeps whole-point figures only, so this one point is simulated again). Per
// NPU group: its MACs, the DRAM bytes its instructions move (from the decoded program), and its
// cycles (the span of its instructions in the trace, as the report's per-op cycles). The chart
// puts each group at (MACs per DRAM byte, MACs per cycle) on log axes under the target's roof,
// min(peak MACs per cycle, intensity * DRAM bytes per cycle), coloured by its share of the
// cycles. Groups without MACs (pools, layout copies) have no place on it and are counted in the
// title instead.
#pragma once

#include "explore/Sweep.h"

#include <string>
#include <vector>

namespace npuc::explore {

struct GroupRoofline {
  std::string model, group;
  int64_t macs = 0, dramBytes = 0, cycles = 0, rooflineCycles = 0;
};

/// A point's roof and its groups.
struct PointRoofline {
  double peakMacsPerCycle = 0, dramBytesPerCycle = 0; // of the point's description
  std::vector<GroupRoofline> groups;                  // one per NPU group, every model
};

/// Compiles and simulates `p` for every model of `s`.
PointRoofline pointRoofline(const SweepSpec &s, const Point &p);

/// Writes the chart (.png or .svg) of point `p`; returns a one-line summary.
std::string plotRoofline(const std::string &path, const Point &p, const PointRoofline &r);

} // namespace npuc::explore
