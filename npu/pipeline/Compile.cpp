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

} // namespace npuc::npu
