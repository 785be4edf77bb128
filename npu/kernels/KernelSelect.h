// KernelSelect.h - lowering a group with the kernel its plan names, and the fallbacks between
// kernels (single buffering, then the loop-nest kernel) when a tiling does not fit.
#pragma once

#include "npu/kernels/Builder.h"
#include "npu/kernels/Kernels.h"

#include <functional>

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
/// (`p` becomes its plan, and the tiling text says why).
Kernel lowerOrLoopNest(GroupPlan &p, const graph::FusedGroup &grp, const graph::Graph &g,
                       const Hw &hw, const DramCtx &d, const KernelOptions &o,
                       const std::function<void()> &undo, KernelOptions *used, bool fromTop,
                       const Window &window);

} // namespace npuc::npu
