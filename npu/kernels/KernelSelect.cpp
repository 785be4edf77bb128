// KernelSelect.cpp - which kernel runs a group: the attempts of KernelSelect.h as a table of
// small functions, each deciding whether it applies and lowering one candidate kernel.
//
// A group's plan (npu/kernels/Plan.h) names the hand-written kernel for its shape; when that kernel
// finds no tiling with double buffers it is retried single-buffered, and when it finds none at all
// the loop-nest kernel (emit-npu over the group's reference loops) takes the group. Placement asks
// the same question before any segment exists (npuRejectReason, npuGroupCycles: a dry run with
// every tensor in DRAM) through the same table, so a group placed on the NPU is one these
// fallbacks can lower.
#include "npu/kernels/KernelSelect.h"

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

// Every strategy has a space (makeSpace); a family's kernel is always lowered through it.
std::unique_ptr<KernelSpace> spaceOf(Strategy s, const GroupPlan &p, const graph::Graph &g,
                                     const SpaceContext &ctx) {
  std::unique_ptr<KernelSpace> space = makeSpace(s, p, g, ctx);
  NPUC_ASSERT(space, std::string("makeSpace has a space for strategy '") + strategyName(s) + "'");
  return space;
}

} // namespace

Kernel lowerKernel(const GroupPlan &p, const graph::Graph &g, Builder &b, const DramCtx &d,
                   const KernelOptions &o) {
  const SpaceContext ctx = SpaceContext::of(b, d, o, b.fromTop());
  if (o.schedule) { // a forced or replayed point
    std::unique_ptr<KernelSpace> s = spaceOf(o.schedule->strategy, p, g, ctx);
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
  return lowerDefault(*spaceOf(strategies[0], p, g, ctx), b, d);
}

namespace {

// One walk through the attempts: the request, the plan the attempts lower (an attempt may
// replace it), and what the attempts that ran so far left.
struct Walk {
  GroupPlan &p;
  const SelectRequest &r;
  std::optional<ScheduleKey> key = std::nullopt; // computed once, when a schedule file asks
  std::optional<Schedule> forced = std::nullopt; // the point --schedule lists for the group
  const ScheduleFile::Entry *tuned = nullptr;    // the points the tuning records list
  std::string tunedIgnored = "";                 // Selection::tunedIgnored
  std::optional<Kernel> failed = std::nullopt;   // the last attempt that ran, when it found none

  const ScheduleKey &groupKey() {
    if (!key)
      key = scheduleKey(r.g, r.grp, *r.hw.t);
    return *key;
  }
  SpaceContext context() const {
    return SpaceContext{&r.hw,
                        r.window,
                        r.fromTop,
                        r.d.levelOf,
                        r.o.doubleBuffer,
                        r.o.naiveTiling,
                        r.o.batchWeightReuse};
  }
};

// One attempt's kernel and the options that lower it again.
struct Tried {
  Kernel kernel;
  KernelOptions used;
};

// Plan `p`'s kernel with options `o`, in a fresh builder over the request's window.
Tried lowerIn(const Walk &w, const GroupPlan &p, const KernelOptions &o) {
  Builder b(w.r.hw, w.r.fromTop, w.r.window);
  Tried t{lowerKernel(p, w.r.g, b, w.r.d, o), o};
  t.kernel.onChipPeak = b.peakBytes();
  return t;
}

// The names of the strategies that may run plan `p`, for messages.
std::string strategyNames(const GroupPlan &p, const Hw &hw) {
  std::vector<std::string> names;
  for (Strategy st : strategiesFor(p, hw))
    names.push_back(strategyName(st));
  return fmt::format("{}", fmt::join(names, ", "));
}

// The plan that runs schedule `s` for the group planned as `p`: `p`, or the loop-nest plan when
// `s` asks for the loop-nest kernel and the target can run it instead of a hand-written one.
GroupPlan planFor(const Schedule &s, const GroupPlan &p, const graph::FusedGroup &grp, const Hw &hw,
                  const std::string &why) {
  if (s.strategy == Strategy::LoopNest && p.kind != KernelKind::LoopNest &&
      p.kind != KernelKind::View && !hw.quantised()) // the loop-nest kernel computes in fp16 only
    return loopNestPlan(grp, grp.name + ": " + why);
  return p;
}

// forced: applies when the user's schedule file lists the group's key.
bool forcedApplies(Walk &w) {
  if (!w.r.o.forced)
    return false;
  const ScheduleFile::Entry *e = w.r.o.forced->find(w.groupKey());
  if (e)
    w.forced = e->schedule;
  return e != nullptr;
}

// Throws ScheduleError when the forced point cannot belong to the group's spaces at all
// (whatever the window): its strategy is not one of the plan's, or its decisions are not the
// space's or take values the space never has. A point that is only too big for this window is
// the kernel's Reject.
void checkForced(const Walk &w, const Schedule &s) {
  const graph::FusedGroup &grp = w.r.grp;
  std::vector<Strategy> legal = strategiesFor(w.p, w.r.hw);
  if (std::find(legal.begin(), legal.end(), s.strategy) == legal.end())
    throw ScheduleError(fmt::format("group '{}': the schedule file forces strategy '{}'; this "
                                    "group's strategies: {}",
                                    grp.name, strategyName(s.strategy),
                                    strategyNames(w.p, w.r.hw)));
  SpaceContext wide = w.context(); // decisions and their values do not depend on the window
  wide.window = Window{};
  if (std::optional<Reject> why = spaceOf(s.strategy, w.p, w.r.g, wide)->whyIllegal(s);
      why && why->kind != RejectKind::Capacity)
    throw ScheduleError(fmt::format("group '{}': the forced schedule {} is illegal: {}", grp.name,
                                    s.str(), why->message));
}

Tried tryForced(Walk &w) {
  const Schedule &s = *w.forced;
  w.p = planFor(s, w.p, w.r.grp, w.r.hw, "the schedule file forces the loop-nest kernel");
  checkForced(w, s);
  KernelOptions fo = w.r.o;
  fo.schedule = s;
  Tried t = lowerIn(w, w.p, fo);
  if (t.kernel.reject)
    t.kernel.reject->message = fmt::format("the forced schedule {} does not fit here: {}", s.str(),
                                           t.kernel.reject->message);
  else
    t.kernel.tiling += " (forced by the schedule file)";
  return t;
}

// tuned: applies when the tuning records list the group's key (and no point was forced).
bool tunedApplies(Walk &w) {
  if (!w.r.o.tuned)
    return false;
  w.tuned = w.r.o.tuned->find(w.groupKey());
  return w.tuned != nullptr;
}

// A record is a hint: a point the group cannot take here (the model or the window changed since
// it was tuned, or the record is stale) is the reason it is ignored, never an error.
Tried tryTunedPoint(Walk &w, const Schedule &s) {
  GroupPlan plan =
      planFor(s, w.p, w.r.grp, w.r.hw, "the tuning record selects the loop-nest kernel");
  const std::vector<Strategy> legal = strategiesFor(plan, w.r.hw);
  Tried t;
  if (std::find(legal.begin(), legal.end(), s.strategy) == legal.end()) {
    t.kernel = Kernel::rejected(RejectKind::Unsupported,
                                fmt::format("strategy '{}' is not one of this group's ({})",
                                            strategyName(s.strategy), strategyNames(plan, w.r.hw)));
  } else {
    KernelOptions to = w.r.o;
    to.schedule = s; // lowerKernel checks the point against this window first
    t = lowerIn(w, plan, to);
  }
  if (t.kernel.ok())
    w.p = std::move(plan);
  return t;
}

// The key's fastest record, else the next fastest that fits here (in order); when none does, the
// best one's reason is why the records were ignored.
Tried tryTuned(Walk &w) {
  Tried best = tryTunedPoint(w, w.tuned->schedule);
  if (best.kernel.ok()) {
    best.kernel.tiling += " (tuned)";
    return best;
  }
  for (size_t i = 0; i < w.tuned->alternatives.size(); ++i) {
    if (w.r.undo)
      w.r.undo();
    Tried t = tryTunedPoint(w, w.tuned->alternatives[i]);
    if (t.kernel.ok()) {
      t.kernel.tiling +=
          fmt::format(" (tuned: the record ranked {} of the key; {} did not fit: {})", i + 2,
                      w.tuned->schedule.str(), best.kernel.rejectText());
      return t;
    }
  }
  w.tunedIgnored = fmt::format("tuning record {} ignored: {}", w.tuned->schedule.str(),
                               best.kernel.rejectText());
  return best;
}

// default: the plan's kernel at its heuristic's point.
bool always(Walk &) {
  return true;
}

Tried tryDefault(Walk &w) {
  return lowerIn(w, w.p, w.r.o);
}

// single-buffered: after a double-buffered default found no tiling. The loop-nest kernel picks
// its buffering itself (single-buffered last).
bool singleApplies(Walk &w) {
  return w.r.o.doubleBuffer && w.p.kind != KernelKind::LoopNest;
}

Tried trySingle(Walk &w) {
  KernelOptions single = w.r.o;
  single.doubleBuffer = false;
  Tried t = lowerIn(w, w.p, single);
  if (t.kernel.ok())
    t.kernel.tiling += " (double buffers did not fit: " + w.failed->rejectText() + ")";
  return t;
}

// loop-nest: no tiling for the hand-written kernel; the loop-nest kernel computes in fp16 only.
bool loopNestApplies(Walk &w) {
  return w.r.loopNestFallback && w.p.kind != KernelKind::LoopNest && w.p.kind != KernelKind::View &&
         !w.r.hw.quantised();
}

Tried tryLoopNest(Walk &w) {
  w.p = loopNestPlan(w.r.grp, w.r.grp.name + ": " + w.failed->rejectText());
  Tried t = lowerIn(w, w.p, w.r.o);
  if (t.kernel.ok())
    t.kernel.tiling += " (the hand-written kernel found no tiling: " + w.p.handReject + ")";
  return t;
}

struct AttemptRow {
  Attempt id;
  bool (*applies)(Walk &);
  Tried (*run)(Walk &);
  bool final; // its Reject ends the walk: no later attempt runs
};

// The attempts, in order (KernelSelect.h describes each).
constexpr AttemptRow kAttempts[] = {
    {Attempt::Forced, forcedApplies, tryForced, true},
    {Attempt::Tuned, tunedApplies, tryTuned, false},
    {Attempt::Default, always, tryDefault, false},
    {Attempt::SingleBuffered, singleApplies, trySingle, false},
    {Attempt::LoopNest, loopNestApplies, tryLoopNest, false},
};

} // namespace

Selection selectKernel(GroupPlan &p, const SelectRequest &r) {
  Walk w{p, r};
  Selection last;
  bool ran = false;
  for (const AttemptRow &a : kAttempts) {
    if (!a.applies(w))
      continue;
    ran = true;
    if (w.failed && r.undo)
      r.undo();
    Tried t = a.run(w);
    last.kernel = std::move(t.kernel);
    last.used = std::move(t.used);
    last.by = a.id;
    if (last.kernel.ok() || a.final)
      break;
    w.failed = last.kernel;
  }
  NPUC_ASSERT(ran, "the default attempt applies to every group");
  last.tunedIgnored = std::move(w.tunedIgnored);
  return last;
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
            [](const ConstBytes &) { return int64_t(0); },
            {}}; // every tensor in DRAM
  // A hand-written kernel that finds no tiling is retried with the loop-nest kernel, as
  // compileSegment does (unless the caller asks about the hand-written kernels alone).
  const KernelOptions o;
  const Window whole;
  k = selectKernel(p, {.g = g,
                       .grp = grp,
                       .hw = hw,
                       .d = d,
                       .o = o,
                       .window = whole,
                       .loopNestFallback = loopNest})
          .kernel;
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
