// DepthwiseSpace.cpp - the schedule space of the vector unit's depthwise conv kernel.
#include "npu/kernels/KernelSpaces.h"

namespace npuc::npu {

std::unique_ptr<KernelSpace> makeDepthwiseSpace(const GroupPlan &, const graph::Graph &,
                                                const SpaceContext &) {
  return nullptr;
}

} // namespace npuc::npu
