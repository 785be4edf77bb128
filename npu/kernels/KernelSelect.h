// KernelSelect.h - which kernel runs a group: an ordered list of attempts, each lowering one
// candidate kernel (or returning its Reject), and the fallbacks between them.
//
// selectKernel walks the attempts below in this order (the table kAttempts in KernelSelect.cpp).
// An attempt that does not apply to the group is skipped; the first kernel that lowers wins.
//   forced          the point the user forces for the group's key (KernelOptions::forced,
//                   `npuc compile --schedule`). Final: its Reject is the user's to fix, and no
//                   later attempt hides it. A point that cannot belong to any of the group's
//                   spaces (another strategy, unknown decisions or values) throws ScheduleError.
//   tuned           the point the tuning records list for the key (KernelOptions::tuned), when
//                   it is legal here: its strategy is one of the plan's (strategiesFor; on fp16
//                   targets the loop-nest kernel may also run a hand-written kernel's group), it
//                   is legal in this window, and it lowers; else the key's alternatives (the
//                   next fastest records, ScheduleFile::Entry::alternatives) in order, the first
//                   that does. When none does, Selection::tunedIgnored says why the best did not
//                   and the attempts below run. Its tiling text adds " (tuned)", or for an
//                   alternative its rank and why the best did not fit.
//   default         the plan's kernel at its heuristic's point (a depthwise conv: the unit the
//                   cost model prefers), double-buffered where the options allow.
//   single-buffered the same single-buffered, when the default asked for double buffers and
//                   found no tiling (not for the loop-nest kernel, which picks its buffering
//                   itself); its tiling text adds " (double buffers did not fit: <reason>)".
//   loop-nest       the loop-nest kernel, when the plan names a hand-written kernel (not a view),
//                   the target computes in fp16, and the request allows it; the plan becomes the
//                   loop-nest plan with the hand-written kernel's reason in handReject, and the
//                   tiling text adds " (the hand-written kernel found no tiling: <handReject>)".
// "<reason>" is the Reject of the attempt that ran before. Before each attempt after the first
// that ran, the request's undo() drops the constants the failed attempt placed. When every
// attempt that applies fails, the last one's Reject is returned, with the plan that attempt
// left (the loop-nest plan after the loop-nest attempt).
#pragma once

#include "npu/kernels/Builder.h"
#include "npu/kernels/Kernels.h"

#include <functional>
#include <string>

namespace npuc::npu {

/// The attempts of selectKernel, in the order it makes them (see above).
enum class Attempt { Forced, Tuned, Default, SingleBuffered, LoopNest };

/// Where a group's kernel is selected: fixed for every attempt.
struct SelectRequest {
  const graph::Graph &g;
  const graph::FusedGroup &grp;
  const Hw &hw;
  const DramCtx &d;
  const KernelOptions &o;
  bool fromTop = false; // buffers from the top of each level (Builder)
  const Window &window; // the part of each on-chip level the group may use
  /// Drops the constants a failed attempt placed through `d` (empty: nothing to drop).
  std::function<void()> undo = nullptr;
  /// False: the hand-written kernels alone (fusion asks so that no merge trades a hand kernel -
  /// the tensor unit - for the loop-nest kernel's vector-unit arithmetic).
  bool loopNestFallback = true;
};

/// The kernel selectKernel chose, and how to lower it again.
struct Selection {
  /// The first attempt's kernel that lowered, or the last attempt's Reject.
  Kernel kernel;
  /// Its options: lowerKernel with them (and the plan selectKernel left) makes the same kernel
  /// again at another placement (bank-aware placement, a batch-split run's later sub-batches).
  KernelOptions used;
  Attempt by = Attempt::Default; // the attempt `kernel` comes from
  /// A tuned point was listed for the group and not taken: "tuning record <point> ignored:
  /// <reason>" (empty otherwise). The segment compiler reports it as a warning.
  std::string tunedIgnored;
};

/// Walks the attempts for the group planned as `p` (see above); `p` becomes the plan of the
/// returned kernel (the loop-nest plan when that kernel runs the group).
Selection selectKernel(GroupPlan &p, const SelectRequest &r);

/// Lowers one group's kernel into `b`: the point `o.schedule` (a forced, tuned or
/// replayed point; a Reject when it is illegal in b's window) or, without one, the plan's default
/// point. No fallbacks: selectKernel's attempts are made of it.
Kernel lowerKernel(const GroupPlan &p, const graph::Graph &g, Builder &b, const DramCtx &d,
                   const KernelOptions &o);

/// Empty when the target can run the group on its NPU; otherwise the reason it cannot
/// (e.g. "Softmax: the target's vector unit has no 'exp' op"). Derived from the target.
/// A group no hand-written kernel takes is tried with the loop-nest kernel (emit-npu) unless
/// `loopNest` is false (SelectRequest::loopNestFallback). The same attempts as the segment
/// compiler's, every tensor in DRAM, no forced or tuned points.
std::string npuRejectReason(const graph::Graph &g, const graph::FusedGroup &grp,
                            const isa::Target &t, bool loopNest = true);

/// The backend's estimate of the group's cycles on the target, from the kernel that would run
/// it (the same dry run as npuRejectReason): the larger of the kernel's tiling-cost estimate and
/// its roofline over the tensor-unit MACs, vector elements and DRAM bytes it issues. -1 when the
/// NPU cannot run the group. Placement's cost model uses it (graph::DeviceCosts).
double npuGroupCycles(const graph::Graph &g, const graph::FusedGroup &grp, const isa::Target &t);

} // namespace npuc::npu
