// KernelSpaces.h - the schedule space of each kernel family (npu/schedule/Space.h), by family.
// makeSpace (Space.cpp) is the registry; tests build a family's space directly through these.
#pragma once

#include "npu/schedule/Space.h"

#include <memory>

namespace npuc::npu {

/// Conv/Gemm/MatMul with constant weights as implicit GEMM on the tensor unit (LowerMatmul.cpp).
/// Decisions: buffers (1|2), tic (input channels per L1 block), toc (output channels per tile),
/// tk (k-chunk), khg (kernel rows folded per chunk), toh (output rows per tile), kouter (0|1:
/// k-chunks outside the output-channel blocks).
std::unique_ptr<KernelSpace> makeTensorUnitSpace(const GroupPlan &p, const graph::Graph &g,
                                                 const SpaceContext &ctx);
/// Depthwise conv on the vector unit (LowerDepthwise.cpp). Decisions: buffers (1|2), tc
/// (channels per tile), toh (output rows per tile).
std::unique_ptr<KernelSpace> makeDepthwiseSpace(const GroupPlan &p, const graph::Graph &g,
                                                const SpaceContext &ctx);

} // namespace npuc::npu
