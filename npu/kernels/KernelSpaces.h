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
/// MatMul of two activations (LowerBatchMatmul.cpp). Decisions: buffers (1|2), tm (output rows
/// per tile), tn (output columns per tile), tk (k-chunk through L0).
std::unique_ptr<KernelSpace> makeBatchMatmulSpace(const GroupPlan &p, const graph::Graph &g,
                                                  const SpaceContext &ctx);
/// Attention in one group (LowerAttention.cpp). Decisions: buffers (1|2), tm (query rows per
/// block, whose scores stay in L1), tn (score columns per tile), tk (the first product's k-chunk),
/// tk2 (the second product's k-chunk: score columns per slice).
std::unique_ptr<KernelSpace> makeAttentionSpace(const GroupPlan &p, const graph::Graph &g,
                                                const SpaceContext &ctx);
/// Window pooling (LowerVector.cpp). Decisions: buffers (1|2), tc (channels per tile), toh
/// (output rows per tile).
std::unique_ptr<KernelSpace> makePoolSpace(const GroupPlan &p, const graph::Graph &g,
                                           const SpaceContext &ctx);
/// Global average pooling (LowerVector.cpp). Decisions: buffers (1|2), tc (channels per tile),
/// tp (pixels per tile).
std::unique_ptr<KernelSpace> makeGlobalPoolSpace(const GroupPlan &p, const graph::Graph &g,
                                                 const SpaceContext &ctx);
/// Elementwise chains (LowerVector.cpp). Decisions: buffers (1|2), tp (pixels per tile).
std::unique_ptr<KernelSpace> makeEltwiseSpace(const GroupPlan &p, const graph::Graph &g,
                                              const SpaceContext &ctx);
/// Concat (LowerConcat.cpp). Decisions: buffers (1|2), elems (elements per tile buffer); none
/// when the inputs are empty.
std::unique_ptr<KernelSpace> makeConcatSpace(const GroupPlan &p, const graph::Graph &g,
                                             const SpaceContext &ctx);
/// The loop-nest kernel (LowerLoopNest.cpp, LoopNestTile.cpp). Decisions: chunked (0: whole
/// tensors, 1: chunks of the outer loop), depth (the chunked loop, 0 when whole), rows (per
/// chunk, 0 when whole), buffers (1|2, 1 when whole).
std::unique_ptr<KernelSpace> makeLoopNestSpace(const GroupPlan &p, const graph::Graph &g,
                                               const SpaceContext &ctx);
/// Layout ops whose transforms cancel: an empty space (one point without decisions, no code).
std::unique_ptr<KernelSpace> makeViewSpace(const GroupPlan &p, const graph::Graph &g,
                                           const SpaceContext &ctx);

} // namespace npuc::npu
