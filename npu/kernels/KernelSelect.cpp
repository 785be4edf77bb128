// KernelSelect.cpp - which kernel runs a group, and the fallbacks between kernels.
//
// A group's plan (npu/Plan.h) names the hand-written kernel for its shape; when that kernel finds
// no tiling with double buffers it is retried single-buffered, and when it finds none at all the
// loop-nest kernel (emit-npu over the group's reference loops) takes the group. Placement asks the
// same question before any segment exists (npuRejectReason, npuGroupCycles: a dry run with every
// tensor in DRAM), so a group placed on the NPU is one these fallbacks can lower.
#include "npu/kernels/KernelSelect.h"

#include "support/Error.h"

#include <algorithm>

namespace npuc::npu {

Kernel lowerKernel(const GroupPlan &p, const graph::Graph &g, Builder &b, const DramCtx &d,
                   const KernelOptions &o) {
  switch (p.kind) {
  case KernelKind::Matmul:
    return lowerConvKernel(p, g, b, d, o);
  case KernelKind::BatchMatmul:
    return lowerBatchMatmulKernel(p, g, b, d, o);
  case KernelKind::Pool:
    return lowerPoolKernel(p, g, b, d, o);
  case KernelKind::GlobalAvgPool:
    return lowerGlobalPoolKernel(p, g, b, d, o);
  case KernelKind::Eltwise:
    return lowerEltwiseKernel(p, g, b, d, o);
  case KernelKind::Concat:
    return lowerConcatKernel(p, g, b, d, o);
  case KernelKind::View: {
    Kernel k;
    k.body = tir::seq({});
    k.tiling = "view: aliases its input (no data movement)";
    return k;
  }
  case KernelKind::LoopNest:
    NPUC_ASSERT(p.group, "planGroup records the group of a loop-nest plan");
    return lowerLoopNestKernel(g, *p.group, b, d, o);
  }
  return {};
}

// Lowers with the requested buffering; when double buffers do not fit, retries single-buffered
// (and says so in the tiling text) before giving up on the NPU. `used` receives the options
// of the returned kernel (the bank-aware placement re-lowers with them).
Kernel lowerWithFallback(const GroupPlan &p, const graph::Graph &g, const Hw &hw, const DramCtx &d,
                         const KernelOptions &o, const std::function<void()> &undo,
                         KernelOptions *used, bool fromTop, const Window &window) {
  Builder b(hw, fromTop, window);
  Kernel k = lowerKernel(p, g, b, d, o);
  k.onChipPeak = b.peakBytes();
  if (used)
    *used = o;
  if (k.reject.empty() || !o.doubleBuffer || p.kind == KernelKind::LoopNest)
    return k; // the loop-nest kernel picks its buffering itself (single-buffered last)
  undo();
  KernelOptions single = o;
  single.doubleBuffer = false;
  if (used)
    *used = single;
  Builder b1(hw, fromTop, window);
  Kernel k1 = lowerKernel(p, g, b1, d, single);
  k1.onChipPeak = b1.peakBytes();
  if (k1.reject.empty())
    k1.tiling += " (double buffers did not fit: " + k.reject + ")";
  return k1;
}

Kernel lowerOrLoopNest(GroupPlan &p, const graph::FusedGroup &grp, const graph::Graph &g,
                       const Hw &hw, const DramCtx &d, const KernelOptions &o,
                       const std::function<void()> &undo, KernelOptions *used, bool fromTop,
                       const Window &window) {
  Kernel k = lowerWithFallback(p, g, hw, d, o, undo, used, fromTop, window);
  if (k.reject.empty() || p.kind == KernelKind::LoopNest || p.kind == KernelKind::View ||
      hw.quantised()) // the loop-nest kernel computes in fp16 only
    return k;
  // No tiling for the hand-written kernel: the loop-nest kernel, as npuRejectReason did.
  undo();
  p = loopNestPlan(grp, grp.name + ": " + k.reject);
  Kernel ln = lowerWithFallback(p, g, hw, d, o, undo, used, fromTop, window);
  if (ln.reject.empty())
    ln.tiling += " (the hand-written kernel found no tiling: " + p.handReject + ")";
  return ln;
}

namespace {

// Plans the group and dry-runs its kernel's tiling against the target (addresses do not matter
// here). Returns "" and fills `k` when the NPU can run it, else the reason.
std::string dryRun(const graph::Graph &g, const graph::FusedGroup &grp, const isa::Target &t,
                   bool loopNest, Kernel &k) {
  Hw hw;
  if (std::string why = Hw::derive(t, hw); !why.empty())
    return why;
  GroupPlan p = loopNest ? planGroup(g, grp, hw) : analyzeGroup(g, grp, hw);
  if (!p.reject.empty())
    return p.reject;
  DramCtx d{[](graph::ValueId) { return int64_t(0); },
            [](const std::vector<uint8_t> &) { return int64_t(0); },
            {}}; // every tensor in DRAM
  // A hand-written kernel that finds no tiling is retried with the loop-nest kernel, as
  // compileSegment does (unless the caller asks about the hand-written kernels alone).
  k = loopNest ? lowerOrLoopNest(
                     p, grp, g, hw, d, KernelOptions{}, [] {}, nullptr, false, Window{})
               : lowerWithFallback(
                     p, g, hw, d, KernelOptions{}, [] {}, nullptr, false, Window{});
  if (k.reject.empty())
    return "";
  if (p.kind == KernelKind::LoopNest) // both reasons: the hand kernels' first
    return p.handReject + "; " + k.reject;
  return grp.name + ": " + k.reject;
}

} // namespace

std::string npuRejectReason(const graph::Graph &g, const graph::FusedGroup &grp,
                            const isa::Target &t, bool loopNest) {
  Kernel k;
  return dryRun(g, grp, t, loopNest, k);
}

double npuGroupCycles(const graph::Graph &g, const graph::FusedGroup &grp, const isa::Target &t) {
  Kernel k;
  if (!dryRun(g, grp, t, true, k).empty())
    return -1;
  // The kernel's figures, not the group's ops: a MatMul the loop-nest kernel runs with vector
  // `mac`s has no tensor-unit MACs and all of its work in vectorElems.
  const double peak = static_cast<double>(t.tensor.peakMacsPerCycle());
  return std::max({k.estCycles, static_cast<double>(k.macs) / peak,
                   static_cast<double>(k.dramBytes) / t.dram.bytesPerCycle,
                   static_cast<double>(k.vectorElems) / t.vector.lanes});
}

} // namespace npuc::npu
