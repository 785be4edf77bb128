// KernelPhases.cpp - from a planned segment to its program: the emission units (schedule), each
// kernel's tiling, constants and instructions (lower), the placement of its on-chip buffers
// around bank conflicts (banks), the segment's program and per-group reports (emit), the tokens
// between the engines (tokens), and the DRAM image's size (image).
//
// A unit is one emission of a kernel: a step, or one part (a sub-batch or a band) of a step of a
// split run. A run's later parts of one variant replay the kernels of the variant's first part
// (same tiling, same on-chip placement, other DRAM addresses), so they are lowered in the emit
// phase, after banks has placed the first. Constants go into the image as units are lowered, in
// program order; the bank-aware placement re-lowers a kernel at candidate placements, which then
// finds its constants where the first lowering put them.
#include "npu/pipeline/Pipeline.h"
#include "npu/pipeline/SegmentPlan.h"

#include "graph/Passes.h"
#include "npu/isel/Emit.h"
#include "npu/isel/Sync.h"
#include "npu/kernels/KernelSelect.h"
#include "support/Error.h"
#include "tir/Printer.h"

#include <algorithm>
#include <cmath>

namespace npuc::npu {

namespace {

constexpr int64_t kDramAlign = 64;

// The one place where a kernel's rejection becomes the segment's: it names the group.
// npuRejectReason ran the same check at placement; a group fails here when its window or its
// addresses differ from that dry run's.
Reject groupReject(const graph::FusedGroup &grp, const Kernel &k) {
  Reject r = *k.reject;
  r.group = grp.id;
  r.message = grp.name + ": " + r.message;
  return r;
}

// A unit's instructions, or the Reject naming its group.
Expected<isa::Program, Reject> encode(const SegmentPlan &p, const EmitUnit &u) {
  Expected<isa::Program, Reject> prog = emitInstructions(*p.t, u.placed.kernel.body, u.grp->name);
  if (prog)
    return prog;
  Reject r = std::move(prog).error();
  r.group = u.grp->id;
  return unexpected(std::move(r));
}

// The L1 bytes of the residents live at each step: a difference array over their lifetimes, so
// the schedule phase does not scan every resident for every step.
std::vector<int64_t> residentBytesPerStep(const SegmentPlan &p) {
  const int64_t steps = static_cast<int64_t>(p.groupIds.size());
  std::vector<int64_t> delta(static_cast<size_t>(steps) + 1, 0);
  for (const auto &[root, at] : p.rp.l1Addr) {
    const Span &life = p.live.life.at(root);
    const int64_t lo = std::max<int64_t>(life.first, 0), hi = std::min(life.second, steps);
    if (lo >= hi)
      continue;
    delta[static_cast<size_t>(lo)] += p.bytesOf(root);
    delta[static_cast<size_t>(hi)] -= p.bytesOf(root);
  }
  std::vector<int64_t> bytes(p.groupIds.size(), 0);
  int64_t sum = 0;
  for (size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = sum += delta[i];
  return bytes;
}

EmitUnit wholeBatchUnit(SegmentPlan &p, size_t i, int64_t residentL1Bytes) {
  EmitUnit u;
  u.step = i;
  u.g = p.g;
  u.grp = &p.group(i);
  u.plan = &p.plans[i];
  u.dram = p.wholeBatch;
  u.window = &p.rp.window[i];
  // Odd steps place their buffers from the top of each level (Builder): see crossGroupPrefetch.
  u.fromTop = p.opt.crossGroupPrefetch && i % 2 == 1;
  u.resident = [&p](graph::ValueId v) { return p.resident(v); };
  u.residentL1Bytes = residentL1Bytes;
  return u;
}

// Part by part (sub-batches or bands), each of the run's steps. A part replays the kernels of the
// first part of its variant.
void splitRunUnits(SegmentPlan &p, int r) {
  const SplitRun &run = p.split.runs[static_cast<size_t>(r)];
  const size_t len = run.end - run.first;
  std::vector<int> firstUnitOf(run.variants.size(), -1);
  for (size_t j = 0; j < run.parts.size(); ++j) {
    const size_t var = run.parts[j].variant;
    const SplitVariant &v = run.variants.at(var);
    const int firstUnit = static_cast<int>(p.units.size());
    for (size_t k = 0; k < len; ++k) {
      EmitUnit u;
      u.step = run.first + k;
      u.run = r;
      u.part = static_cast<int64_t>(j);
      u.g = v.g.get();
      u.grp = &v.g->groups.at(size_t(p.groupIds[run.first + k]));
      u.plan = &p.runPlans[static_cast<size_t>(r)][var][k];
      u.dram = partDram(
          run, p.hw, j, [&p](graph::ValueId x) { return p.addr.at(x); }, p.wholeBatch.addConst,
          p.runConsts[static_cast<size_t>(r)]);
      u.window = &v.rp.window[k];
      u.fromTop = run.crossGroupPrefetch && k % 2 == 1; // as the residency trials
      u.resident = [&run, &v](graph::ValueId x) { return v.rp.l1Addr.count(run.rootIn(v, x)) > 0; };
      u.residentL1Bytes = v.residentL1Bytes[k];
      u.replayOf = firstUnitOf[var] >= 0 ? firstUnitOf[var] + static_cast<int>(k) : -1;
      p.units.push_back(std::move(u));
    }
    if (firstUnitOf[var] < 0)
      firstUnitOf[var] = firstUnit;
  }
}

} // namespace

PhaseResult phaseSchedule(SegmentPlan &p) {
  Segment &seg = p.seg;
  const Hw &hw = p.hw;
  seg.timingOnly = p.opt.timingOnly;
  p.wholeBatch = DramCtx{[&p](graph::ValueId v) { return p.addr.at(v); },
                         [&seg](const ConstBytes &c) {
                           int64_t at = seg.constBase + static_cast<int64_t>(seg.constImage.size());
                           if (seg.timingOnly) { // the space alone: the packer never runs
                             seg.constImage.resize(seg.constImage.size() + c.size());
                           } else {
                             const std::vector<uint8_t> &bytes = c.bytes();
                             seg.constImage.insert(seg.constImage.end(), bytes.begin(),
                                                   bytes.end());
                           }
                           seg.constImage.resize(static_cast<size_t>(
                               alignUp(static_cast<int64_t>(seg.constImage.size()), kDramAlign)));
                           return at;
                         },
                         [&p, &hw](graph::ValueId v) { return p.resident(v) ? hw.l1 : hw.dram; }};
  p.runConsts.assign(p.split.runs.size(), {});
  p.units.clear();
  const std::vector<int64_t> residentBytes = residentBytesPerStep(p);
  for (size_t i = 0; i < p.groupIds.size(); ++i) {
    if (const SplitRun *run = p.split.startingAt(i)) {
      splitRunUnits(p, static_cast<int>(run - p.split.runs.data()));
      i = run->end - 1;
      continue;
    }
    p.units.push_back(wholeBatchUnit(p, i, residentBytes[i]));
  }
  return {};
}

PhaseResult phaseLower(SegmentPlan &p) {
  const KernelOptions ko = segmentKernelOptions(p.opt);
  for (EmitUnit &u : p.units) {
    if (u.replayOf >= 0)
      continue;
    CrashScope scope = unitCrashScope(p, u, "lowering");
    debugCrashPoint(p, Phase::Lower);
    const size_t mark = p.seg.constImage.size();
    DramCtx d = u.dram;
    d.addConst = [&u](const ConstBytes &bytes) {
      const int64_t at = u.dram.addConst(bytes);
      u.consts.emplace_back(at, bytes.size());
      return at;
    };
    auto undo = [&] {
      p.seg.constImage.resize(mark);
      u.consts.clear();
      // A split run finds constants by their bytes: forget those the undone attempt placed.
      if (u.run >= 0)
        std::erase_if(p.runConsts[static_cast<size_t>(u.run)], [&](const auto &kv) {
          return kv.second >= p.seg.constBase + static_cast<int64_t>(mark);
        });
    };
    Selection sel = selectKernel(*u.plan, {.g = *u.g,
                                           .grp = *u.grp,
                                           .hw = p.hw,
                                           .d = d,
                                           .o = ko,
                                           .fromTop = u.fromTop,
                                           .window = *u.window,
                                           .undo = undo});
    u.placed.kernel = std::move(sel.kernel);
    u.used = std::move(sel.used);
    u.tunedIgnored = std::move(sel.tunedIgnored);
    if (u.placed.kernel.reject && sel.by == Attempt::Forced) // the user's to fix
      throw ScheduleError(
          fmt::format("group '{}': {}", u.grp->name, u.placed.kernel.reject->message));
    if (u.placed.kernel.reject)
      return groupReject(*u.grp, u.placed.kernel);
    Expected<isa::Program, Reject> prog = encode(p, u);
    if (!prog)
      return prog.error();
    u.placed.program = std::move(*prog);
    // Every DRAM address the group uses lies below the constants placed so far.
    u.dramNeed = p.seg.constBase + static_cast<int64_t>(p.seg.constImage.size());
  }
  return {};
}

PhaseResult phaseBanks(SegmentPlan &p) {
  if (!p.opt.bankAware)
    return {};
  for (EmitUnit &u : p.units) {
    if (u.replayOf >= 0)
      continue; // it takes the placement of the unit it replays
    CrashScope scope = unitCrashScope(p, u, "placing the on-chip buffers of");
    if (!p.simMem) // the placement's simulations are timing-only: sizes, no DRAM image
      p.simMem = std::make_unique<sim::Memory>(sim::Memory::sizesOnly(*p.t, u.dramNeed));
    p.simMem->growDram(u.dramNeed);
    // Re-lowering at a candidate placement makes the same decisions, so it places the same
    // constants in the same order: each finds the address its first lowering gave it.
    size_t next = 0;
    DramCtx d = u.dram;
    d.addConst = [&](const ConstBytes &bytes) {
      NPUC_ASSERT(next < u.consts.size() && u.consts[next].second == bytes.size(),
                  u.grp->name + ": placement moves on-chip buffers only; the constants are the "
                                "same");
      return u.consts[next++].first;
    };
    LowerFn relower = [&](Builder &b) {
      next = 0;
      return lowerKernel(*u.plan, *u.g, b, d, u.used);
    };
    u.bank = placeForBanks(p.hw, relower, u.grp->name, *p.simMem, u.placed, p.opt.bankAlwaysMove,
                           u.fromTop, *u.window);
  }
  return {};
}

namespace {

// What `npuc inspect` shows for a unit's kernel, and what the report attributes to it.
GroupInfo groupInfo(const SegmentPlan &p, const EmitUnit &u) {
  const graph::Graph &gg = *u.g;
  const graph::FusedGroup &grp = *u.grp;
  const Hw &hw = p.hw;
  const isa::Target &t = *p.t;
  const Kernel &k = u.placed.kernel;
  GroupInfo info;
  info.groupId = grp.id;
  info.name = grp.name;
  for (graph::NodeId n : grp.nodes)
    info.ops.push_back(graph::opName(gg.node(n).kind));
  info.tiling = k.tiling;
  info.scheduleKey = scheduleKey(gg, grp, t);
  info.schedule = k.schedule;
  // Layout ops: whether the group's transforms cancel (a view: the copy a transform would do,
  // reading and writing the tensor, does not happen) or which transform the copy runs.
  if (LayoutChain lc = analyzeLayoutChain(gg, grp); lc.layoutOnly) {
    info.layout = lc.describe;
    if (auto why = p.chosen.why.find(u.step); why != p.chosen.why.end())
      info.layout = "transforms cancel against a chosen layout (zero-copy view): " + why->second;
    if (u.plan->kind == KernelKind::View) {
      info.layoutOpsCancelled = lc.ops;
      info.layoutBytesNotMoved = 2 * numElements(gg.value(lc.output).shape) * hw.actBytes();
    }
  }
  for (const auto &[level, bytes] : k.onChipPeak)
    info.onChipBytes[t.levels.at(static_cast<size_t>(level)).name] = bytes;
  // The resident tensors live during this step share L1 with the kernel's buffers.
  if (u.residentL1Bytes > 0)
    info.onChipBytes[t.levels.at(static_cast<size_t>(hw.l1)).name] += u.residentL1Bytes;
  // Resident tensors: no DRAM traffic (the roofline's compulsory bytes drop by what the kernel
  // moves of each: all of it, or the part a chunked kernel reads), and the window the kernel
  // tiled in.
  int64_t dramBytes = k.dramBytes;
  std::string inL1;
  std::set<graph::ValueId> seen;
  for (const std::vector<graph::ValueId> *vs : {&grp.inputs, &grp.outputs})
    for (graph::ValueId v : *vs)
      if (u.resident(v) && seen.insert(v).second && u.plan->kind != KernelKind::View) {
        dramBytes -= k.bytesOf(v, numElements(gg.value(v).shape) * hw.actBytes());
        inL1 += fmt::format("{}{} ({})", inL1.empty() ? "" : ", ", gg.value(v).name,
                            vs == &grp.inputs ? "in" : "out");
      }
  NPUC_ASSERT(dramBytes >= 0, grp.name + ": a kernel's compulsory DRAM bytes include what it "
                                         "moves of each tensor");
  if (!inL1.empty())
    info.tiling += fmt::format("; resident in L1 (no DRAM traffic): {}", inL1);
  const Window &window = *u.window;
  if (window.range.count(hw.l1))
    info.tiling += fmt::format("; L1 window [{}, {}) around the resident tensors",
                               window.lo(hw, hw.l1), window.hi(hw, hw.l1));
  info.tir = tir::toText(k.body);
  info.bank = u.bank;
  // A kernel that counts no MACs (a matrix product in a loop nest) still does the group's:
  // reported, so that MAC shares are honest (tensor_macs says whether they ran on the array).
  info.macs = k.macs > 0 ? k.macs : graph::groupMacs(gg, grp);
  const double peak = static_cast<double>(t.tensor.peakMacsPerCycle());
  const double terms[3] = {k.macs / peak, dramBytes / t.dram.bytesPerCycle,
                           static_cast<double>(k.vectorElems) / t.vector.lanes};
  constexpr const char *kBound[3] = {"tensor", "dram", "vector"};
  const size_t arg = static_cast<size_t>(std::max_element(terms, terms + 3) - terms);
  info.rooflineCycles = static_cast<int64_t>(std::ceil(terms[arg]));
  info.bound = kBound[arg];
  if (u.run >= 0) {
    const SplitRun &run = p.split.runs[static_cast<size_t>(u.run)];
    const SplitPart &part = run.parts.at(static_cast<size_t>(u.part));
    if (run.kind == SplitKind::Batch) {
      info.subBatch = u.part;
      info.tiling +=
          fmt::format("; batch split: images [{}, {}) of {}", part.lo, part.hi, run.batch);
    } else {
      info.band = u.part;
      info.tiling += fmt::format(
          "; depth-first: band {} of {}, output rows [{}, {}) of {}{}", u.part, run.parts.size(),
          part.lo, part.hi, run.rows.rows,
          run.rows.images > 1 ? fmt::format(" of image {} of {}", part.image, run.rows.images)
                              : "");
    }
    if (u.replayOf >= 0)
      info.tir.clear(); // the same loop nest as its variant's first part, at other DRAM addresses
  }
  return info;
}

// A later sub-batch: the kernel of the unit it replays, lowered at that unit's placement and
// options with its own DRAM addresses.
PhaseResult replay(SegmentPlan &p, EmitUnit &u) {
  const EmitUnit &src = p.units.at(static_cast<size_t>(u.replayOf));
  Builder b(p.hw, src.placed.placement, u.fromTop, *u.window);
  u.placed.kernel = lowerKernel(*u.plan, *u.g, b, u.dram, src.used);
  u.placed.kernel.onChipPeak = b.peakBytes();
  u.placed.placement = src.placed.placement;
  u.used = src.used;
  u.bank = src.bank;
  NPUC_ASSERT(u.placed.kernel.ok(), u.grp->name + ": a replayed kernel tiles as before");
  // Kernel selection ran for the unit replayed: the note it appended of how it chose the kernel
  // (KernelSelect.cpp) holds for its replays.
  NPUC_ASSERT(src.placed.kernel.tiling.rfind(u.placed.kernel.tiling, 0) == 0,
              u.grp->name + ": kernel selection only appends to the tiling text of the kernel");
  u.placed.kernel.tiling = src.placed.kernel.tiling;
  Expected<isa::Program, Reject> prog = encode(p, u);
  if (!prog)
    return prog.error();
  u.placed.program = std::move(*prog);
  return {};
}

} // namespace

PhaseResult phaseEmit(SegmentPlan &p) {
  Segment &seg = p.seg;
  for (EmitUnit &u : p.units) {
    if (u.replayOf >= 0)
      if (PhaseResult r = replay(p, u))
        return r;
    GroupInfo info = groupInfo(p, u);
    info.instrBegin = static_cast<int64_t>(seg.program.instrs.size());
    seg.program.instrs.insert(seg.program.instrs.end(), u.placed.program.instrs.begin(),
                              u.placed.program.instrs.end());
    info.instrEnd = static_cast<int64_t>(seg.program.instrs.size());
    for (int64_t j = info.instrBegin; j < info.instrEnd; ++j)
      ++info.instrCounts[seg.program.instrs[static_cast<size_t>(j)].desc->mnemonic];
    seg.groupInfo.push_back(std::move(info));
    if (!u.tunedIgnored.empty()) // replays were not selected, so each group warns once
      seg.warnings.push_back(fmt::format("group '{}': {}", u.grp->name, u.tunedIgnored));
  }
  return {};
}

PhaseResult phaseTokens(SegmentPlan &p) {
  insertTokens(*p.t, p.seg.program);
  return {};
}

PhaseResult phaseImage(SegmentPlan &p) {
  Segment &seg = p.seg;
  seg.dramBytes = seg.constBase + static_cast<int64_t>(seg.constImage.size());
  const isa::MemoryLevel &dram = p.t->levels.at(static_cast<size_t>(p.hw.dram));
  if (seg.dramBytes > dram.size)
    return Reject{-1, RejectPhase::Dram, RejectKind::Capacity,
                  fmt::format("target '{}': the model needs {} bytes of DRAM, the target has {}",
                              p.t->name, seg.dramBytes, dram.size)};
  return {};
}

} // namespace npuc::npu
