// Print.cpp - the segment plan as text (`npuc compile --print-after=PHASE`): after a phase, the
// part of the plan that phase decided (so --print-after-all reads as the whole plan, phase by
// phase), each line stable across runs (names, steps, sizes and addresses; no pointers, no
// timings), so that lit tests can FileCheck it.
#include "npu/pipeline/Pipeline.h"

#include "support/Error.h"

#include <algorithm>
#include <fmt/format.h>

namespace npuc::npu {

namespace {

const char *kernelName(KernelKind k) {
  switch (k) {
  case KernelKind::Matmul:
    return "matmul";
  case KernelKind::BatchMatmul:
    return "batch-matmul";
  case KernelKind::Attention:
    return "attention";
  case KernelKind::Pool:
    return "pool";
  case KernelKind::GlobalAvgPool:
    return "global-avg-pool";
  case KernelKind::Eltwise:
    return "eltwise";
  case KernelKind::Concat:
    return "concat";
  case KernelKind::View:
    return "view";
  case KernelKind::LoopNest:
    return "loop-nest";
  }
  return "?";
}

std::string name(const SegmentPlan &p, graph::ValueId v) {
  return "'" + p.g->value(v).name + "'";
}

void printGroups(const SegmentPlan &p, std::ostream &os) {
  os << "groups (by step):\n";
  for (size_t i = 0; i < p.plans.size(); ++i) {
    const GroupPlan &gp = p.plans[i];
    os << fmt::format("  step {}: group '{}' kernel {}{}", i, p.group(i).name, kernelName(gp.kind),
                      gp.depthwise ? " (depthwise: the vector unit if cheaper)" : "");
    if (*p.done == Phase::Quantise)
      os << (gp.quant.calibrated
                 ? fmt::format(" int8 scales in {:g} out {:g}", gp.quant.in, gp.quant.out)
                 : std::string(" fp16 (no scales)"));
    os << "\n";
  }
}

void printLayouts(const SegmentPlan &p, std::ostream &os) {
  os << "chosen layouts:" << (p.chosen.layout.empty() ? " none\n" : "\n");
  for (const auto &[v, layout] : p.chosen.layout)
    os << fmt::format("  {} in layout {}\n", name(p, v), layout.name());
  for (const auto &[step, why] : p.chosen.why)
    os << fmt::format("  step {} becomes a view: {}\n", step, why);
}

void printLiveness(const SegmentPlan &p, std::ostream &os) {
  os << "lifetimes (alias roots, steps [first, end)):\n";
  std::map<graph::ValueId, std::vector<graph::ValueId>> views;
  for (const auto &[v, of] : p.aliasOf)
    views[p.rootOf(v)].push_back(v);
  for (const auto &[root, span] : p.live.life) {
    os << fmt::format("  {} [{}, {}) {} bytes", name(p, root), span.first, span.second,
                      p.bytesOf(root));
    if (p.hostRoots.count(root))
      os << " host";
    for (graph::ValueId v : views[root])
      os << " view " << name(p, v);
    os << "\n";
  }
}

void printSplit(const SegmentPlan &p, SplitKind kind, std::ostream &os) {
  const bool batch = kind == SplitKind::Batch;
  const bool any = std::any_of(p.split.runs.begin(), p.split.runs.end(),
                               [&](const SplitRun &r) { return r.kind == kind; });
  os << (batch ? "batch split:" : "depth-first:") << (any ? "\n" : " none\n");
  for (const SplitRun &run : p.split.runs)
    if (run.kind != kind)
      continue;
    else if (batch)
      os << fmt::format("  run steps [{}, {}): {} of {} image(s) per sub-batch; {}\n", run.first,
                        run.end, run.subBatch, run.batch, run.entry.reason);
    else
      os << fmt::format("  run steps [{}, {}): {}\n", run.first, run.end, run.rows.reason);
  for (const std::string &n : batch ? p.seg.batchSplitNotes : p.seg.depthFirstNotes)
    os << "  note: " << n << "\n";
}

void printResidency(const SegmentPlan &p, std::ostream &os) {
  os << "residency:" << (p.seg.residency.empty() ? " none proposed\n" : "\n");
  for (const ResidencyEntry &e : p.seg.residency) {
    if (e.dropped.empty())
      os << fmt::format("  '{}' {} bytes kept in L1 at {} (saves {} DRAM bytes)\n", e.name, e.bytes,
                        e.l1Addr, e.dramBytesSaved);
    else
      os << fmt::format("  '{}' {} bytes in DRAM: {}\n", e.name, e.bytes, e.dropped);
  }
  for (size_t i = 0; i < p.rp.window.size(); ++i)
    if (auto r = p.rp.window[i].range.find(p.hw.l1); r != p.rp.window[i].range.end())
      os << fmt::format("  step {} L1 window [{}, {})\n", i, r->second.first, r->second.second);
}

void printDram(const SegmentPlan &p, std::ostream &os) {
  os << fmt::format("dram: activations peak {} bytes ({} without reuse), constants at {}\n",
                    p.seg.activationBytes, p.seg.activationBytesNoReuse, p.seg.constBase);
  for (graph::ValueId v : p.dramRoots)
    os << fmt::format("  {} at {} ({} bytes)\n", name(p, v), p.addr.at(v), p.bytesOf(v));
}

std::string unitName(const SegmentPlan &p, const EmitUnit &u) {
  std::string s = fmt::format("step {} group '{}'", u.step, u.grp->name);
  if (u.run >= 0)
    s += fmt::format(" {} {}",
                     p.split.runs.at(size_t(u.run)).kind == SplitKind::Batch ? "sub-batch" : "band",
                     u.part);
  return s;
}

void printUnits(const SegmentPlan &p, std::ostream &os) {
  os << "emission units:\n";
  for (size_t i = 0; i < p.units.size(); ++i) {
    const EmitUnit &u = p.units[i];
    os << fmt::format("  unit {}: {}", i, unitName(p, u));
    if (u.replayOf >= 0)
      os << fmt::format(" replays unit {}", u.replayOf);
    if (p.reached(Phase::Lower) && u.replayOf < 0) {
      size_t constBytes = 0;
      for (const auto &c : u.consts)
        constBytes += c.second;
      os << fmt::format(": kernel {}, {} instrs, {} constant bytes; {}", kernelName(u.plan->kind),
                        u.placed.program.instrs.size(), constBytes, u.placed.kernel.tiling);
      if (!u.tunedIgnored.empty())
        os << "; " << u.tunedIgnored;
    }
    if (p.reached(Phase::Banks) && u.bank.ran)
      os << fmt::format("; banks: stalls {} -> {}, cycles {} -> {}{}", u.bank.stallsBefore,
                        u.bank.stallsAfter, u.bank.cyclesBefore, u.bank.cyclesAfter,
                        u.bank.change.empty() ? "" : ", moved " + u.bank.change);
    os << "\n";
  }
}

void printProgram(const SegmentPlan &p, std::ostream &os) {
  os << fmt::format("program: {} instrs{}\n", p.seg.program.instrs.size(),
                    p.reached(Phase::Tokens) ? " with tokens" : "");
  for (const GroupInfo &info : p.seg.groupInfo) {
    os << fmt::format("  group '{}'", info.name);
    if (info.subBatch >= 0)
      os << fmt::format(" sub-batch {}", info.subBatch);
    if (info.band >= 0)
      os << fmt::format(" band {}", info.band);
    os << fmt::format(": instrs [{}, {})", info.instrBegin, info.instrEnd);
    for (const auto &[mnemonic, n] : info.instrCounts)
      os << fmt::format(" {} {}", mnemonic, n);
    os << "\n";
  }
}

} // namespace

void printPlan(const SegmentPlan &p, std::ostream &os) {
  NPUC_ASSERT(p.done.has_value(), "a plan is printed after a phase");
  os << fmt::format("=== segment {} after {}: {} ===\n", p.index, phaseName(*p.done),
                    phaseWhat(*p.done));
  switch (*p.done) {
  case Phase::PlanGroups:
  case Phase::Quantise:
    printGroups(p, os);
    break;
  case Phase::ChooseLayouts:
    printLayouts(p, os);
    break;
  case Phase::Liveness:
    printLiveness(p, os);
    break;
  case Phase::BatchSplit:
    printSplit(p, SplitKind::Batch, os);
    break;
  case Phase::DepthFirst:
    printSplit(p, SplitKind::Rows, os);
    break;
  case Phase::Residency:
    printResidency(p, os);
    break;
  case Phase::Dram:
    printDram(p, os);
    break;
  case Phase::Schedule:
  case Phase::Lower:
  case Phase::Banks:
    printUnits(p, os);
    break;
  case Phase::Emit:
  case Phase::Tokens:
    printProgram(p, os);
    break;
  case Phase::Image:
    os << fmt::format("image: {} bytes of DRAM ({} of constants at {})\n", p.seg.dramBytes,
                      p.seg.constImage.size(), p.seg.constBase);
    break;
  }
  os.flush();
}

} // namespace npuc::npu
