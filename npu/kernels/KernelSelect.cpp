// KernelSelect.cpp - which kernel runs a group, and the fallbacks between kernels.
//
// A group's plan (npu/kernels/Plan.h) names the hand-written kernel for its shape; when that kernel
// finds no tiling with double buffers it is retried single-buffered, and when it finds none at all
// the loop-nest kernel (emit-npu over the group's reference loops) takes the group. Placement asks
// the same question before any segment exists (npuRejectReason, npuGroupCycles: a dry run with
// every tensor in DRAM), so a group placed on the NPU is one these fallbacks can lower.
#include "npu/kernels/KernelSelect.h"

#include "npu/pipeline/Compile.h"
#include "npu/kernels/KernelSpaces.h"
#include "npu/schedule/Space.h"
#include "support/Error.h"

#include <algorithm>
#include <fmt/format.h>

namespace npuc::npu {

const std::string &Kernel::rejectText() const {
  static const std::string kNone;
  return reject ? reject->message : kNone;
}

Kernel Kernel::rejected(RejectKind kind, std::string message) {
  Kernel k;
  k.reject = kernelReject(kind, std::move(message));
  return k;
}

namespace {

// The kernel of a family that has no schedule space (yet): its lowering function as it was.
Kernel lowerWithoutSpace(const GroupPlan &p, const graph::Graph &g, Builder &b, const DramCtx &d,
                         const KernelOptions &o) {
  switch (p.kind) {
  case KernelKind::Matmul:
    NPUC_ASSERT(false, "the tensor-unit kernel has a space");
    return {};
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

Kernel lowerPoint(const KernelSpace &s, const Schedule &pt, Builder &b, const DramCtx &d) {
  Kernel k = s.lower(pt, b, d);
  k.schedule = pt;
  return k;
}

// The space's default point, lowered (or its Reject).
Kernel lowerDefault(const KernelSpace &s, Builder &b, const DramCtx &d) {
  Expected<Schedule, Reject> pt = s.defaultPoint();
  if (!pt) {
    Kernel k;
    k.reject = pt.error();
    k.schedule.strategy = s.strategy();
    return k;
  }
  return lowerPoint(s, *pt, b, d);
}

// A depthwise conv's sketch: the tensor unit or the vector unit, whichever the cost model
// estimates faster (the tensor unit on a tie, or when the vector unit has no point). Both
// estimates are taken in the group's window placed from the bottom, as they always were; the
// chosen family then tiles in the real context.
Kernel lowerDepthwiseSketch(const GroupPlan &p, const graph::Graph &g, Builder &b, const DramCtx &d,
                            const SpaceContext &ctx) {
  SpaceContext dry = ctx;
  dry.fromTop = false;
  Expected<Schedule, Reject> v = makeDepthwiseSpace(p, g, dry)->defaultPoint();
  Expected<Schedule, Reject> m = makeTensorUnitSpace(p, g, dry)->defaultPoint();
  auto vcost = [&] { return makeDepthwiseSpace(p, g, dry)->cost(*v); };
  auto mcost = [&] { return makeTensorUnitSpace(p, g, dry)->cost(*m); };
  if (!v) {
    Kernel k = lowerDefault(*makeTensorUnitSpace(p, g, ctx), b, d);
    k.tiling += "; not on the vector unit: " + v.error().message;
    return k;
  }
  if (m && mcost() <= vcost()) {
    Kernel k = lowerDefault(*makeTensorUnitSpace(p, g, ctx), b, d);
    k.tiling += fmt::format("; cheaper than the vector unit's depthwise kernel (estimated {:.0f} "
                            "cycles)",
                            vcost());
    return k;
  }
  Kernel k = lowerDefault(*makeDepthwiseSpace(p, g, ctx), b, d);
  k.tiling += m ? fmt::format(" (tensor-unit grouped conv: estimated {:.0f})", mcost())
                : " (tensor-unit grouped conv: " + m.error().message + ")";
  return k;
}

} // namespace

Kernel lowerKernel(const GroupPlan &p, const graph::Graph &g, Builder &b, const DramCtx &d,
                   const KernelOptions &o) {
  const SpaceContext ctx = SpaceContext::of(b, d, o, b.fromTop());
  if (o.schedule) { // a forced or replayed point
    std::unique_ptr<KernelSpace> s = makeSpace(o.schedule->strategy, p, g, ctx);
    if (!s) { // a family without a space has one point: its default
      NPUC_ASSERT(o.schedule->strategy == defaultStrategyOf(p.kind) &&
                      o.schedule->decisions.empty(),
                  "KernelSelect checks a forced point against the plan's strategies");
      Kernel k = lowerWithoutSpace(p, g, b, d, o);
      k.schedule = *o.schedule;
      return k;
    }
    if (std::optional<Reject> why = s->whyIllegal(*o.schedule)) {
      Kernel k;
      k.reject = std::move(why);
      k.schedule = *o.schedule;
      return k;
    }
    return lowerPoint(*s, *o.schedule, b, d);
  }
  const std::vector<Strategy> strategies = strategiesFor(p, b.hw());
  if (strategies.size() == 2 && strategies[1] == Strategy::DepthwiseVector)
    return lowerDepthwiseSketch(p, g, b, d, ctx);
  if (std::unique_ptr<KernelSpace> s = makeSpace(strategies[0], p, g, ctx))
    return lowerDefault(*s, b, d);
  Kernel k = lowerWithoutSpace(p, g, b, d, o);
  k.schedule.strategy = strategies[0];
  return k;
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
  if (k.ok() || !o.doubleBuffer || p.kind == KernelKind::LoopNest)
    return k; // the loop-nest kernel picks its buffering itself (single-buffered last)
  undo();
  KernelOptions single = o;
  single.doubleBuffer = false;
  if (used)
    *used = single;
  Builder b1(hw, fromTop, window);
  Kernel k1 = lowerKernel(p, g, b1, d, single);
  k1.onChipPeak = b1.peakBytes();
  if (k1.ok())
    k1.tiling += " (double buffers did not fit: " + k.rejectText() + ")";
  return k1;
}

namespace {

// The point the user forces on a group, or nullopt. Throws ScheduleError when the point cannot
// belong to the group's spaces at all (whatever the window): its strategy is not one of the
// plan's, or its decisions are not the space's or take values the space never has.
std::optional<Schedule> forcedPoint(GroupPlan &p, const graph::FusedGroup &grp,
                                    const graph::Graph &g, const SpaceContext &ctx,
                                    const KernelOptions &o) {
  if (!o.forced)
    return std::nullopt;
  const ScheduleFile::Entry *e = o.forced->find(scheduleKey(g, grp, *ctx.hw->t));
  if (!e)
    return std::nullopt;
  const Schedule &s = e->schedule;
  // The loop-nest kernel runs any group the hand-written ones take (fp16 targets).
  if (s.strategy == Strategy::LoopNest && p.kind != KernelKind::LoopNest &&
      p.kind != KernelKind::View && !ctx.hw->quantised())
    p = loopNestPlan(grp, grp.name + ": the schedule file forces the loop-nest kernel");
  std::vector<Strategy> legal = strategiesFor(p, *ctx.hw);
  if (std::find(legal.begin(), legal.end(), s.strategy) == legal.end()) {
    std::vector<std::string> names;
    for (Strategy st : legal)
      names.push_back(strategyName(st));
    throw ScheduleError(fmt::format("group '{}': the schedule file forces strategy '{}'; this "
                                    "group's strategies: {}",
                                    grp.name, strategyName(s.strategy), fmt::join(names, ", ")));
  }
  std::unique_ptr<KernelSpace> space = makeSpace(s.strategy, p, g, ctx);
  if (!space) {
    if (!s.decisions.empty())
      throw ScheduleError(fmt::format("group '{}': strategy '{}' has no decisions (got {})",
                                      grp.name, strategyName(s.strategy), s.str()));
    return s;
  }
  SpaceContext wide = ctx; // decisions and their values do not depend on the window
  wide.window = Window{};
  if (std::optional<Reject> why = makeSpace(s.strategy, p, g, wide)->whyIllegal(s);
      why && why->kind != RejectKind::Capacity)
    throw ScheduleError(fmt::format("group '{}': the forced schedule {} is illegal: {}", grp.name,
                                    s.str(), why->message));
  return s;
}

} // namespace

Kernel lowerOrLoopNest(GroupPlan &p, const graph::FusedGroup &grp, const graph::Graph &g,
                       const Hw &hw, const DramCtx &d, const KernelOptions &o,
                       const std::function<void()> &undo, KernelOptions *used, bool fromTop,
                       const Window &window) {
  SpaceContext ctx{&hw, window, fromTop, d.levelOf, o.doubleBuffer, o.naiveTiling};
  if (std::optional<Schedule> forced = forcedPoint(p, grp, g, ctx, o)) {
    KernelOptions fo = o;
    fo.schedule = *forced;
    if (used)
      *used = fo;
    Builder b(hw, fromTop, window);
    Kernel k = lowerKernel(p, g, b, d, fo);
    k.onChipPeak = b.peakBytes();
    if (k.reject)
      k.reject->message = fmt::format("the forced schedule {} does not fit here: {}", forced->str(),
                                      k.reject->message);
    else
      k.tiling += " (forced by the schedule file)";
    return k;
  }
  Kernel k = lowerWithFallback(p, g, hw, d, o, undo, used, fromTop, window);
  if (k.ok() || p.kind == KernelKind::LoopNest || p.kind == KernelKind::View ||
      hw.quantised()) // the loop-nest kernel computes in fp16 only
    return k;
  // No tiling for the hand-written kernel: the loop-nest kernel, as npuRejectReason did.
  undo();
  p = loopNestPlan(grp, grp.name + ": " + k.rejectText());
  Kernel ln = lowerWithFallback(p, g, hw, d, o, undo, used, fromTop, window);
  if (ln.ok())
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
  if (k.ok())
    return "";
  if (p.kind == KernelKind::LoopNest) // both reasons: the hand kernels' first
    return p.handReject + "; " + k.rejectText();
  return grp.name + ": " + k.rejectText();
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
