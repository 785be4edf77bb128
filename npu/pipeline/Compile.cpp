// Compile.cpp - the NPU backend driver: placement queries and segment compilation.
//
// A segment's DRAM image is [activations | constants]: every tensor the segment reads from the
// host or produces gets its own region (views alias their input), except the intermediates kept
// resident in L1 between groups (npu/Resident.h), which live only there; then each kernel appends
// its packed weights and constant vectors. Kernels are lowered one group at a time, emitted in
// execution order into one program, and the token pass orders the engines.
#include "npu/pipeline/Compile.h"

#include "npu/isel/Emit.h"
#include "npu/isel/Sync.h"
#include "npu/kernels/KernelSelect.h"
#include "npu/memory/MemoryPlanner.h"
#include "npu/pipeline/BankAlloc.h"
#include "npu/pipeline/BatchSplit.h"
#include "npu/pipeline/Resident.h"
#include "support/Error.h"
#include "tir/Printer.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <set>

namespace npuc::npu {

namespace {

constexpr int64_t kDramAlign = 64;

} // namespace

namespace {

// Chosen layouts. A group of layout ops that moves bytes needs no copy when whoever writes its
// input or reads its output can use another layout: when nothing later in the segment reads its
// output, the host reads the output in the layout that makes the transforms cancel (its input
// aliased as is); when its input comes from the host, or from a batched MatMul of the segment
// (which stores through element strides, LowerBatchMatmul.cpp), and nothing else reads it, the
// host or the MatMul writes the input in the layout that makes them cancel. packTensor and
// unpackTensor convert any dim order, and convert anyway. Such groups become views.
struct ChosenLayouts {
  std::map<graph::ValueId, DramLayout> layout; // values not in dramLayoutOf's layout
  std::map<size_t, std::string> why;           // by step: who writes or reads which layout
};

ChosenLayouts chooseLayouts(const graph::Graph &g, const std::vector<int> &groupIds,
                            std::vector<GroupPlan> &plans) {
  ChosenLayouts c;
  std::map<graph::ValueId, size_t> producer; // value -> step
  for (size_t j = 0; j < groupIds.size(); ++j)
    for (graph::ValueId v : g.groups.at(static_cast<size_t>(groupIds[j])).outputs)
      producer[v] = j;
  // Whether a group of the segment other than step `self` reads v.
  auto readElsewhere = [&](graph::ValueId v, size_t self) {
    for (size_t j = 0; j < groupIds.size(); ++j) {
      const auto &ins = g.groups.at(static_cast<size_t>(groupIds[j])).inputs;
      if (j != self && std::find(ins.begin(), ins.end(), v) != ins.end())
        return true;
    }
    return false;
  };
  for (size_t i = 0; i < groupIds.size(); ++i) {
    if (plans[i].kind != KernelKind::LoopNest)
      continue;
    const graph::FusedGroup &grp = g.groups.at(static_cast<size_t>(groupIds[i]));
    const LayoutChain lc = analyzeLayoutChain(g, grp);
    if (!lc.layoutOnly || lc.cancels || g.value(lc.input).isConstant() || c.layout.count(lc.input))
      continue;
    const auto made = producer.find(lc.input);
    const std::string &in = g.value(lc.input).name;
    const std::vector<graph::NodeId> readers = g.consumers(lc.input);
    const bool onlyThisGroup = std::all_of(readers.begin(), readers.end(), [&](graph::NodeId n) {
      return std::find(grp.nodes.begin(), grp.nodes.end(), n) != grp.nodes.end();
    });
    if (lc.outputAs && !readElsewhere(lc.output, i)) {
      c.layout[lc.output] = *lc.outputAs;
      c.why[i] = fmt::format("the host reads '{}' in layout {}", g.value(lc.output).name,
                             lc.outputAs->name());
    } else if (lc.inputAs && made == producer.end() && !readElsewhere(lc.input, i)) {
      c.layout[lc.input] = *lc.inputAs;
      c.why[i] = fmt::format("the host writes '{}' in layout {}", in, lc.inputAs->name());
    } else if (lc.inputAs && made != producer.end() &&
               plans[made->second].kind == KernelKind::BatchMatmul &&
               tensorOperands(plans[made->second]) == 0 && !g.isGraphOutput(lc.input) &&
               onlyThisGroup) {
      // No residual of the output's shape is read through the same strides (tensorOperands).
      GroupPlan &mm = plans[made->second];
      const Shape &y = g.value(lc.input).shape;
      setOperandStrides(y, y, layoutStrides(y, *lc.inputAs), mm.bmm.y);
      c.layout[lc.input] = *lc.inputAs;
      c.why[i] = fmt::format("the batched MatMul '{}' stores '{}' in layout {}",
                             g.groups.at(static_cast<size_t>(groupIds[made->second])).name, in,
                             lc.inputAs->name());
    } else {
      continue;
    }
    GroupPlan view;
    view.kind = KernelKind::View;
    view.input = lc.input;
    view.output = lc.output;
    view.layout = lc;
    view.quant = plans[i].quant;
    plans[i] = std::move(view);
  }
  return c;
}

} // namespace

Segment compileSegment(const graph::Graph &g, const std::vector<int> &groupIds,
                       const isa::Target &t, const CompileOptions &opt) {
  Hw hw;
  if (std::string why = Hw::derive(t, hw); !why.empty())
    fail("target '{}': {}", t.name, why);
  Segment seg;
  seg.groups = groupIds;
  std::set<int> inSeg(groupIds.begin(), groupIds.end());
  std::vector<int> groupOf(g.nodes.size(), -1);
  for (const graph::FusedGroup &grp : g.groups)
    for (graph::NodeId n : grp.nodes)
      groupOf[static_cast<size_t>(n)] = grp.id;

  if (hw.quantised() && !opt.quant)
    fail("target '{}': int8 operands need activation scales (a calibration run); compile the "
         "model with npuc compile, which calibrates",
         t.name);
  std::vector<GroupPlan> plans;
  for (int gid : groupIds) {
    plans.push_back(planGroup(g, g.groups.at(static_cast<size_t>(gid)), hw));
    GroupPlan &p = plans.back();
    NPUC_ASSERT(p.reject.empty(), "placement only puts groups the NPU accepts on it: " + p.reject);
    if (hw.quantised()) {
      p.quant.calibrated = true;
      if (p.input != graph::kNoValue)
        p.quant.in = opt.quant->of(p.input);
      p.quant.out = opt.quant->of(p.output);
      for (const EpilogueOp &e : p.epilogue)
        if (e.tensor != graph::kNoValue)
          p.quant.tensors[e.tensor] = opt.quant->of(e.tensor);
      for (const ConcatParams::Part &part : p.concat.parts)
        if (!g.value(part.value).isConstant())
          p.quant.tensors[part.value] = opt.quant->of(part.value);
    }
  }
  ChosenLayouts chosen;
  if (opt.chooseLayouts)
    chosen = chooseLayouts(g, groupIds, plans);
  const std::map<graph::ValueId, DramLayout> &boundary = chosen.layout;
  // The DRAM form of a segment input or output: its layout, and on int8 targets its scale. A
  // view's output aliases its input's bytes, so it takes the input's scale.
  std::map<graph::ValueId, graph::ValueId> viewOf;
  for (size_t i = 0; i < plans.size(); ++i)
    if (plans[i].kind == KernelKind::View)
      viewOf[plans[i].output] = plans[i].input;
  auto dramTensor = [&](graph::ValueId v) {
    DramTensor x{v,
                 g.value(v).name,
                 0,
                 g.value(v).shape,
                 boundary.count(v) ? boundary.at(v) : dramLayoutOf(g.value(v)),
                 hw.act,
                 1.0f};
    if (hw.quantised()) {
      graph::ValueId root = v;
      while (viewOf.count(root))
        root = viewOf.at(root);
      x.scale = opt.quant->of(root);
    }
    return x;
  };

  // Activations. Step i is group i of the segment: a value is live from the step that produces
  // it (step 0 for segment inputs, which the host writes first) to its last use in the segment,
  // or to the end for values the host reads back. A view aliases its input, so an alias chain is
  // one buffer whose lifetime is the union. The memory planner then reuses the space of dead
  // tensors; the token pass orders the reuse (it sees DRAM ranges like any other).
  const int64_t steps = static_cast<int64_t>(groupIds.size());
  std::map<graph::ValueId, graph::ValueId> aliasOf; // view output -> the value it aliases
  auto rootOf = [&](graph::ValueId v) {
    while (aliasOf.count(v))
      v = aliasOf.at(v);
    return v;
  };
  std::map<graph::ValueId, std::pair<int64_t, int64_t>> life; // root -> [start, end)
  auto touch = [&](graph::ValueId v, int64_t from, int64_t to) {
    auto [it, fresh] = life.try_emplace(rootOf(v), from, to);
    if (!fresh) {
      it->second.first = std::min(it->second.first, from);
      it->second.second = std::max(it->second.second, to);
    }
  };
  std::set<graph::ValueId> produced;
  for (int64_t i = 0; i < steps; ++i) {
    const graph::FusedGroup &grp =
        g.groups.at(static_cast<size_t>(groupIds[static_cast<size_t>(i)]));
    for (graph::ValueId v : grp.inputs) {
      if (!produced.count(v)) {
        touch(v, 0, i + 1);
        if (std::none_of(seg.inputs.begin(), seg.inputs.end(),
                         [&](const DramTensor &x) { return x.value == v; }))
          seg.inputs.push_back(dramTensor(v));
      }
      touch(v, i, i + 1);
    }
    for (graph::ValueId v : grp.outputs) {
      produced.insert(v);
      if (plans[static_cast<size_t>(i)].kind == KernelKind::View)
        aliasOf[v] = plans[static_cast<size_t>(i)].input;
      touch(v, i, i + 1);
    }
  }
  for (graph::ValueId v : produced) {
    bool usedOutside = g.isGraphOutput(v);
    for (graph::NodeId c : g.consumers(v))
      usedOutside = usedOutside || !inSeg.count(groupOf[static_cast<size_t>(c)]);
    if (usedOutside) {
      touch(v, 0, steps); // the host reads it after the run
      seg.outputs.push_back(dramTensor(v));
    }
  }
  KernelOptions ko{opt.doubleBuffer, opt.naiveTiling};
  std::set<graph::ValueId> hostRoots; // the host writes or reads them
  for (const std::vector<DramTensor> *xs : {&seg.inputs, &seg.outputs})
    for (const DramTensor &x : *xs)
      hostRoots.insert(rootOf(x.value));
  // Batch > 1: the runs executed sub-batch by sub-batch, their residents planned at that size
  // (npu/BatchSplit.h). It needs residency: without it a split only reloads weights.
  BatchSplitPlan split;
  if (opt.batchSplit && opt.residency) {
    BatchSplitInput bi{&g,
                       groupIds,
                       plans,
                       rootOf,
                       hostRoots,
                       ko,
                       opt.crossGroupPrefetch,
                       opt.batchSplitEvenIfSlower,
                       {}};
    for (const auto &[v, layout] : boundary)
      bi.chosenLayout.insert(v);
    split = planBatchSplit(bi, hw);
    for (SplitRun &run : split.runs) {
      seg.batchSplit.push_back(run.entry);
      seg.residency.insert(seg.residency.end(), run.rp.entries.begin(), run.rp.entries.end());
    }
    seg.batchSplitNotes = split.notes;
    // A split run executes its steps once per sub-batch, so a DRAM tensor it touches must stay
    // live over the whole run (a later step's tensor may not take its space: the next
    // sub-batch's earlier steps still come).
    for (auto &[root, span] : life)
      for (const SplitRun &run : split.runs)
        if (span.first < int64_t(run.end) && int64_t(run.first) < span.second) {
          span.first = std::min(span.first, int64_t(run.first));
          span.second = std::max(span.second, int64_t(run.end));
        }
  }
  // Residency: which intermediates stay in L1 (they get no DRAM space), and each step's window.
  ResidencyPlan rp;
  rp.window.resize(groupIds.size());
  if (opt.residency) {
    ResidencyInput ri;
    ri.g = &g;
    ri.groupIds = groupIds;
    ri.plans = plans;
    ri.rootOf = rootOf;
    ri.life = life;
    ri.pinned = hostRoots;
    // A split run's tensors are its own (planned at sub-batch size); nothing of the whole batch
    // stays in L1 across one, so that each run has the whole of L1.
    for (const auto &[root, span] : life)
      for (int64_t i = span.first; i < span.second; ++i)
        if (split.covers(size_t(i)))
          ri.splitPinned.insert(root);
    ri.ko = ko;
    ri.crossGroupPrefetch = opt.crossGroupPrefetch;
    rp = planResidency(ri, hw);
    seg.residency.insert(seg.residency.begin(), rp.entries.begin(), rp.entries.end());
  }
  auto resident = [&](graph::ValueId v) { return rp.l1Addr.count(rootOf(v)) > 0; };

  std::vector<graph::ValueId> roots;
  std::vector<BufferReq> reqs;
  for (const auto &[v, span] : life) {
    if (rp.l1Addr.count(v) || split.residentRoots.count(v))
      continue;
    roots.push_back(v);
    reqs.push_back(
        {span.first, span.second, numElements(g.value(v).shape) * hw.actBytes(), kDramAlign});
    seg.activationBytesNoReuse += alignUp(reqs.back().size, kDramAlign);
  }
  const isa::MemoryLevel &dramLevel = t.levels.at(static_cast<size_t>(hw.dram));
  MemoryPlan mp = planMemory(reqs, dramLevel.size);
  if (!mp.solved)
    fail("target '{}': the segment's activations need {} bytes of DRAM at their peak, the target "
         "has {}",
         t.name, mp.peak, dramLevel.size);
  std::map<graph::ValueId, int64_t> addr; // in DRAM, or in L1 for resident tensors
  for (size_t i = 0; i < roots.size(); ++i)
    addr[roots[i]] = mp.offsets[i];
  for (const auto &[root, at] : rp.l1Addr)
    addr[root] = at;
  for (const auto &alias : aliasOf)
    if (!split.residentRoots.count(rootOf(alias.first))) // a split run addresses those itself
      addr[alias.first] = addr.at(rootOf(alias.first));
  for (DramTensor &x : seg.inputs)
    x.addr = addr.at(x.value);
  for (DramTensor &x : seg.outputs)
    x.addr = addr.at(x.value);
  seg.activationBytes = mp.peak;
  const int64_t top = mp.peak;
  seg.constBase = alignUp(top, kDramAlign);
  DramCtx d{[&](graph::ValueId v) { return addr.at(v); },
            [&](const std::vector<uint8_t> &bytes) {
              int64_t at = seg.constBase + static_cast<int64_t>(seg.constImage.size());
              seg.constImage.insert(seg.constImage.end(), bytes.begin(), bytes.end());
              seg.constImage.resize(static_cast<size_t>(
                  alignUp(static_cast<int64_t>(seg.constImage.size()), kDramAlign)));
              return at;
            },
            [&](graph::ValueId v) { return resident(v) ? hw.l1 : hw.dram; }};

  std::unique_ptr<sim::Memory> simMem; // sizes for the bank-aware placement's simulations
  const double peak = static_cast<double>(t.tensor.peakMacsPerCycle());
  // Lowers, places and emits one group's kernel and records its GroupInfo (a batch-split run's
  // groups come through here once per sub-batch, on the graph at sub-batch size).
  StepEmitter emitStep = [&](const StepRequest &r) {
    const graph::Graph &gg = *r.g;
    const graph::FusedGroup &grp = *r.grp;
    const Window &window = *r.window;
    const size_t constMark = seg.constImage.size();
    StepResult res;
    PlacedKernel &pk = res.placed;
    if (r.replay) {
      // The same tiling and on-chip placement as the earlier emission, other DRAM addresses.
      Builder b(hw, r.replay->placement, r.fromTop, window);
      pk.kernel = lowerKernel(*r.plan, gg, b, *r.d, *r.replayOptions);
      pk.kernel.onChipPeak = b.peakBytes();
      pk.placement = r.replay->placement;
      res.used = *r.replayOptions;
      res.bank = *r.replayBank;
      NPUC_ASSERT(pk.kernel.reject.empty(), grp.name + ": a replayed kernel tiles as before");
    } else {
      pk.kernel = lowerOrLoopNest(
          *r.plan, grp, gg, hw, *r.d, ko, [&] { seg.constImage.resize(constMark); }, &res.used,
          r.fromTop, window);
    }
    const Kernel &k0 = pk.kernel;
    if (!k0.reject.empty())
      fail("{}: {}", grp.name, k0.reject); // npuRejectReason ran the same check at placement
    emitInstructions(t, k0.body, grp.name, pk.program);
    if (opt.bankAware && !r.replay) {
      // Every DRAM address the group uses lies below the constants placed so far.
      const int64_t dramNeed = seg.constBase + static_cast<int64_t>(seg.constImage.size());
      if (!simMem)
        simMem = std::make_unique<sim::Memory>(t, dramNeed);
      if (static_cast<int64_t>(simMem->dram().size()) < dramNeed)
        simMem->dram().resize(static_cast<size_t>(dramNeed));
      const size_t constEnd = seg.constImage.size();
      // Re-lowering appends the same constants again at the same addresses: start over each time.
      LowerFn relower = [&](Builder &b) {
        seg.constImage.resize(constMark);
        return lowerKernel(*r.plan, gg, b, *r.d, res.used);
      };
      res.bank =
          placeForBanks(hw, relower, grp.name, *simMem, pk, opt.bankAlwaysMove, r.fromTop, window);
      NPUC_ASSERT(seg.constImage.size() == constEnd,
                  "placement moves on-chip buffers only; the constants are the same");
    }
    const Kernel &k = pk.kernel;
    GroupInfo info;
    info.groupId = grp.id;
    info.name = grp.name;
    for (graph::NodeId n : grp.nodes)
      info.ops.push_back(gg.node(n).op);
    info.tiling = k.tiling;
    // Layout ops: whether the group's transforms cancel (a view: the copy a transform would do,
    // reading and writing the tensor, does not happen) or which transform the copy runs.
    if (LayoutChain lc = analyzeLayoutChain(gg, grp); lc.layoutOnly) {
      info.layout = lc.describe;
      const size_t step = static_cast<size_t>(std::find(groupIds.begin(), groupIds.end(), grp.id) -
                                              groupIds.begin());
      if (chosen.why.count(step))
        info.layout =
            "transforms cancel against a chosen layout (zero-copy view): " + chosen.why.at(step);
      if (r.plan->kind == KernelKind::View) {
        info.layoutOpsCancelled = lc.ops;
        info.layoutBytesNotMoved = 2 * numElements(gg.value(lc.output).shape) * hw.actBytes();
      }
    }
    for (const auto &[level, bytes] : k.onChipPeak)
      info.onChipBytes[t.levels.at(static_cast<size_t>(level)).name] = bytes;
    // The resident tensors live during this step share L1 with the kernel's buffers.
    if (r.residentL1Bytes > 0)
      info.onChipBytes[t.levels.at(static_cast<size_t>(hw.l1)).name] += r.residentL1Bytes;
    // Resident tensors: no DRAM traffic (the roofline's compulsory bytes drop by them), and the
    // window the kernel tiled in.
    int64_t dramBytes = k.dramBytes;
    std::string inL1;
    std::set<graph::ValueId> seen;
    for (const std::vector<graph::ValueId> *vs : {&grp.inputs, &grp.outputs})
      for (graph::ValueId v : *vs)
        if (r.resident(v) && seen.insert(v).second && r.plan->kind != KernelKind::View) {
          dramBytes -= numElements(gg.value(v).shape) * hw.actBytes();
          inL1 += fmt::format("{}{} ({})", inL1.empty() ? "" : ", ", gg.value(v).name,
                              vs == &grp.inputs ? "in" : "out");
        }
    NPUC_ASSERT(dramBytes >= 0, grp.name + ": a kernel's compulsory DRAM bytes count each of its "
                                           "tensors once");
    if (!inL1.empty())
      info.tiling += fmt::format("; resident in L1 (no DRAM traffic): {}", inL1);
    if (window.range.count(hw.l1))
      info.tiling += fmt::format("; L1 window [{}, {}) around the resident tensors",
                                 window.lo(hw, hw.l1), window.hi(hw, hw.l1));
    info.tir = tir::toText(k.body);
    info.bank = res.bank;
    info.instrBegin = static_cast<int64_t>(seg.program.instrs.size());
    seg.program.instrs.insert(seg.program.instrs.end(), pk.program.instrs.begin(),
                              pk.program.instrs.end());
    info.instrEnd = static_cast<int64_t>(seg.program.instrs.size());
    for (int64_t j = info.instrBegin; j < info.instrEnd; ++j)
      ++info.instrCounts[seg.program.instrs[static_cast<size_t>(j)].desc->mnemonic];
    info.macs = k.macs;
    const double terms[3] = {k.macs / peak, dramBytes / t.dram.bytesPerCycle,
                             static_cast<double>(k.vectorElems) / t.vector.lanes};
    static const char *names[3] = {"tensor", "dram", "vector"};
    size_t arg = static_cast<size_t>(std::max_element(terms, terms + 3) - terms);
    info.rooflineCycles = static_cast<int64_t>(std::ceil(terms[arg]));
    info.bound = names[arg];
    seg.groupInfo.push_back(std::move(info));
    return res;
  };
  for (size_t i = 0; i < groupIds.size(); ++i) {
    if (const SplitRun *run = split.startingAt(i)) {
      for (size_t j = run->first; j < run->end; ++j)
        NPUC_ASSERT(rp.window[j].range.empty(), "no whole-batch tensor stays in L1 across a "
                                                "split run (planResidency pinned them)");
      emitSplitRun(
          *run, hw, [&](graph::ValueId v) { return addr.at(v); }, d.addConst, emitStep, seg);
      i = run->end - 1;
      continue;
    }
    StepRequest r;
    r.g = &g;
    r.plan = &plans[i];
    r.grp = &g.groups.at(static_cast<size_t>(groupIds[i]));
    r.d = &d;
    r.window = &rp.window[i];
    // Odd steps place their buffers from the top of each level (Builder): see crossGroupPrefetch.
    r.fromTop = opt.crossGroupPrefetch && i % 2 == 1;
    r.resident = resident;
    for (const auto &[root, at] : rp.l1Addr)
      if (life.at(root).first <= int64_t(i) && int64_t(i) < life.at(root).second)
        r.residentL1Bytes += numElements(g.value(root).shape) * hw.actBytes();
    emitStep(r);
  }
  insertTokens(t, seg.program);
  seg.dramBytes = seg.constBase + static_cast<int64_t>(seg.constImage.size());
  const isa::MemoryLevel &dram = t.levels.at(static_cast<size_t>(hw.dram));
  if (seg.dramBytes > dram.size)
    fail("target '{}': the model needs {} bytes of DRAM, the target has {}", t.name, seg.dramBytes,
         dram.size);
  return seg;
}

} // namespace npuc::npu
