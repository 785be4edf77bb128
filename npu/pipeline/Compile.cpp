// Compile.cpp - the NPU backend's segment compiler: a SegmentPlan through the segment pipeline
// (npu/pipeline/Pipeline.h, whose phases Phases.def lists in order).
#include "npu/pipeline/Compile.h"

#include "npu/pipeline/Pipeline.h"

#include <algorithm>

namespace npuc::npu {

Expected<Segment, Reject> compileSegment(const graph::Graph &g, const std::vector<int> &groupIds,
                                         const isa::Target &t, const CompileOptions &opt) {
  SegmentPlan p;
  initSegmentPlan(p, g, groupIds, t, opt);
  if (std::optional<Reject> r = runPhases(p, static_cast<Phase>(kNumPhases - 1)))
    return unexpected(std::move(*r));
  return std::move(p.seg);
}

sim::DramRegions dramRegionsOf(const Segment &seg, const graph::Graph &g) {
  std::vector<sim::DramRegion> rs;
  rs.push_back(
      {seg.constBase, seg.constBase + int64_t(seg.constImage.size()), sim::DramClass::Constant});
  for (const DramTensor &t : seg.inputs)
    rs.push_back({t.addr, t.addr + t.bytes(), sim::DramClass::Input, 0, true});
  for (const DramTensor &t : seg.outputs) {
    // From the first instruction of its producer's group (a split group has several entries);
    // a value no group produces (a view) holds its class throughout.
    const graph::NodeId producer = g.value(t.value).producer;
    int64_t from = -1;
    for (const GroupInfo &gi : seg.groupInfo) {
      const std::vector<graph::NodeId> &nodes = g.groups.at(size_t(gi.groupId)).nodes;
      if (std::find(nodes.begin(), nodes.end(), producer) != nodes.end())
        from = from < 0 ? gi.instrBegin : std::min(from, gi.instrBegin);
    }
    rs.push_back({t.addr, t.addr + t.bytes(), sim::DramClass::Output, std::max<int64_t>(from, 0)});
  }
  return sim::DramRegions(std::move(rs));
}

} // namespace npuc::npu
