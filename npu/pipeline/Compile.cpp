// Compile.cpp - the NPU backend's segment compiler: a SegmentPlan through the segment pipeline
// (npu/pipeline/Pipeline.h, whose phases Phases.def lists in order).
#include "npu/pipeline/Compile.h"

#include "npu/pipeline/Pipeline.h"

namespace npuc::npu {

Expected<Segment, Reject> compileSegment(const graph::Graph &g, const std::vector<int> &groupIds,
                                         const isa::Target &t, const CompileOptions &opt) {
  SegmentPlan p;
  initSegmentPlan(p, g, groupIds, t, opt);
  if (std::optional<Reject> r = runPhases(p, static_cast<Phase>(kNumPhases - 1)))
    return unexpected(std::move(*r));
  return std::move(p.seg);
}

sim::DramRegions dramRegionsOf(const Segment &seg) {
  std::vector<sim::DramRegion> rs;
  rs.push_back(
      {seg.constBase, seg.constBase + int64_t(seg.constImage.size()), sim::DramClass::Constant});
  for (const DramTensor &t : seg.inputs)
    rs.push_back({t.addr, t.addr + t.bytes(), sim::DramClass::Input});
  for (const DramTensor &t : seg.outputs)
    rs.push_back({t.addr, t.addr + t.bytes(), sim::DramClass::Output});
  return sim::DramRegions(std::move(rs));
}

} // namespace npuc::npu
