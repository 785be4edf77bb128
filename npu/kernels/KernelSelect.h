// KernelSelect.h - lowering a group with the kernel its plan names, and the fallbacks between
// kernels (single buffering, then the loop-nest kernel) when a tiling does not fit.
#pragma once

#include "npu/kernels/Builder.h"
#include "npu/kernels/Kernels.h"

#include <functional>
#include <string>

namespace npuc::npu {

/// Lowers one group's kernel into `b`.
Kernel lowerKernel(const GroupPlan &p, const graph::Graph &g, Builder &b, const DramCtx &d,
                   const KernelOptions &o);

/// Lowers with the requested buffering in `window`; when double buffers do not fit, retries
/// single-buffered (and says so in the tiling text). `undo` drops the constants the failed try
/// placed; `used` receives the options of the returned kernel.
Kernel lowerWithFallback(const GroupPlan &p, const graph::Graph &g, const Hw &hw, const DramCtx &d,
                         const KernelOptions &o, const std::function<void()> &undo,
                         KernelOptions *used, bool fromTop, const Window &window);

/// lowerWithFallback, and when the hand-written kernel finds no tiling, the loop-nest kernel
/// (`p` becomes its plan, and the tiling text says why). A group whose key `o.forced` lists
/// lowers that point instead, without fallbacks (`used->schedule` holds it, for re-lowering):
/// a point of another strategy than the plan's, or with decisions its space does not have,
/// throws ScheduleError; one that does not fit this window is the kernel's Reject.
Kernel lowerOrLoopNest(GroupPlan &p, const graph::FusedGroup &grp, const graph::Graph &g,
                       const Hw &hw, const DramCtx &d, const KernelOptions &o,
                       const std::function<void()> &undo, KernelOptions *used, bool fromTop,
                       const Window &window);

/// Empty when the target can run the group on its NPU; otherwise the reason it cannot
/// (e.g. "Softmax: the target's vector unit has no 'exp' op"). Derived from the target.
/// A group no hand-written kernel takes is tried with the loop-nest kernel (emit-npu) unless
/// `loopNest` is false (fusion also asks that way, so that no merge trades a hand kernel - the
/// tensor unit - for the loop-nest kernel's vector-unit arithmetic).
std::string npuRejectReason(const graph::Graph &g, const graph::FusedGroup &grp,
                            const isa::Target &t, bool loopNest = true);

/// The backend's estimate of the group's cycles on the target, from the kernel that would run
/// it (the same dry run as npuRejectReason): the larger of the kernel's tiling-cost estimate and
/// its roofline over the tensor-unit MACs, vector elements and DRAM bytes it issues. -1 when the
/// NPU cannot run the group. Placement's cost model uses it (graph::DeviceCosts).
double npuGroupCycles(const graph::Graph &g, const graph::FusedGroup &grp, const isa::Target &t);

} // namespace npuc::npu
