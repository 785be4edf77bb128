// Resident.cpp - which proposed tensors stay in L1 between groups, where, and the L1 window each
// group's kernel gets around them (Resident.h).
#include "npu/pipeline/Resident.h"

#include "graph/Passes.h"
#include "npu/isel/Emit.h"
#include "npu/memory/MemoryPlanner.h"
#include "npu/pipeline/BankAlloc.h"
#include "support/Error.h"

#include <algorithm>
#include <fmt/format.h>
#include <memory>

namespace npuc::npu {

namespace {

/// One dry lowering of a step's kernel in a window, emitted and simulated alone.
struct Trial {
  std::string reject;    // the kernel found no tiling
  std::string encode;    // an instruction field cannot hold a value (on-chip copies of a tensor)
  int64_t cycles = 0;    // its instructions simulated alone (timing only)
  int64_t dram = 0;      // the DRAM bytes they move
  bool emitted = false;  // cycles and dram were measured (the kernel tiled and encoded)
  bool loopNest = false; // the hand-written kernel found no tiling: the loop-nest kernel ran
};

struct Candidate {
  graph::ValueId root;
  int64_t bytes = 0;
  int64_t start = 0, end = 0; // live steps
  size_t entry = 0;           // index into the plan's entries
  bool kept = true;
};

// Dry lowerings, cached by what the kernel sees: its window and which of its tensors are
// resident (at which addresses: the encodability of its copies depends on them). Each is
// emitted and simulated alone with the simulator's timing model (as the bank-aware placement
// does), so that the choice rests on the cycles and DRAM bytes of the actual tiling rather
// than on a cost model; DRAM tensors get disjoint stand-in addresses so that the token pass
// orders nothing the real layout would not.
class Trials {
public:
  Trials(const ResidencyInput &in, const Hw &hw) : in_(in), hw_(hw) {
    const graph::Graph &g = *in.g;
    for (size_t i = 0; i < in.groupIds.size(); ++i)
      for (graph::ValueId v : ioOf(i))
        if (dramAt_.emplace(in.rootOf(v), constBase_).second)
          constBase_ += alignUp(numElements(g.value(in.rootOf(v)).shape) * hw.actBytes(),
                                hw.alignment(hw.dram));
  }
  std::vector<graph::ValueId> ioOf(size_t i) const {
    const graph::FusedGroup &grp = in_.g->groups.at(static_cast<size_t>(in_.groupIds[i]));
    std::vector<graph::ValueId> v = grp.inputs;
    v.insert(v.end(), grp.outputs.begin(), grp.outputs.end());
    return v;
  }
  /// Step i in window `w` with the tensors of `l1Addr` resident.
  Trial run(size_t i, const Window &w, const std::map<graph::ValueId, int64_t> &l1Addr) {
    const graph::Graph &g = *in_.g;
    const Hw &hw = hw_;
    const isa::Target &t = *hw.t;
    std::vector<int64_t> sig;
    for (graph::ValueId v : ioOf(i)) {
      auto it = l1Addr.find(in_.rootOf(v));
      sig.push_back(it == l1Addr.end() ? -1 : it->second);
    }
    const bool touches = std::any_of(sig.begin(), sig.end(), [](int64_t a) { return a >= 0; });
    auto key = std::make_tuple(i, w.lo(hw, hw.l1), w.hi(hw, hw.l1), sig);
    if (auto it = cache_.find(key); it != cache_.end())
      return it->second;
    int64_t constAt = constBase_;
    DramCtx dry{[&](graph::ValueId v) {
                  const graph::ValueId root = in_.rootOf(v);
                  if (auto it = l1Addr.find(root); it != l1Addr.end())
                    return it->second;
                  auto at = dramAt_.find(root);
                  return at == dramAt_.end() ? int64_t(0) : at->second;
                },
                [&](const std::vector<uint8_t> &bytes) {
                  const int64_t at = constAt;
                  constAt += alignUp(static_cast<int64_t>(bytes.size()), hw.alignment(hw.dram));
                  return at;
                },
                [&](graph::ValueId v) { return l1Addr.count(in_.rootOf(v)) ? hw.l1 : hw.dram; }};
    const bool fromTop = in_.crossGroupPrefetch && i % 2 == 1;
    const graph::FusedGroup &grp = g.groups.at(static_cast<size_t>(in_.groupIds[i]));
    GroupPlan plan = in_.plans[i]; // the compile makes the same loop-nest retry
    Kernel k =
        selectKernel(
            plan,
            {.g = g, .grp = grp, .hw = hw, .d = dry, .o = in_.ko, .fromTop = fromTop, .window = w})
            .kernel;
    Trial r;
    r.loopNest = plan.kind == KernelKind::LoopNest && in_.plans[i].kind != KernelKind::LoopNest;
    r.reject = k.rejectText();
    if (r.reject.empty()) {
      Expected<isa::Program, Reject> emitted = emitInstructions(t, k.body, grp.name);
      if (!emitted) {
        if (touches)
          r.encode = emitted.error().message;
        return cache_[key] = r; // else the compile reports it, with or without residency
      }
      const isa::Program &p = *emitted;
      if (!mem_)
        mem_ = std::make_unique<sim::Memory>(t, constAt);
      if (static_cast<int64_t>(mem_->dram().size()) < constAt)
        mem_->dram().resize(static_cast<size_t>(constAt));
      sim::SimStats st = simulateGroup(t, p, *mem_, false);
      r.cycles = st.totalCycles;
      r.dram = st.dramBytesRead + st.dramBytesWritten;
      r.emitted = true;
    }
    return cache_[key] = r;
  }
  /// Step i with the whole of L1 and every tensor in DRAM.
  Trial baseline(size_t i) {
    if (auto it = full_.find(i); it != full_.end())
      return it->second;
    return full_[i] = run(i, Window{}, {});
  }

private:
  const ResidencyInput &in_;
  const Hw &hw_;
  std::map<std::tuple<size_t, int64_t, int64_t, std::vector<int64_t>>, Trial> cache_;
  std::map<size_t, Trial> full_;
  std::map<graph::ValueId, int64_t> dramAt_;
  int64_t constBase_ = 0;
  std::unique_ptr<sim::Memory> mem_;
};

} // namespace

std::vector<StepCost> simulateSteps(const ResidencyInput &in, const Hw &hw) {
  Trials trials(in, hw);
  std::vector<StepCost> out;
  for (size_t i = 0; i < in.groupIds.size(); ++i) {
    const Trial r = trials.baseline(i);
    out.push_back({r.emitted, r.cycles, r.dram});
  }
  return out;
}

ResidencyPlan planResidency(const ResidencyInput &in, const Hw &hw) {
  const graph::Graph &g = *in.g;
  const isa::Target &t = *hw.t;
  const size_t steps = in.groupIds.size();
  const int64_t cap = hw.capacity(hw.l1), align = hw.alignment(hw.l1);
  ResidencyPlan out;
  out.window.resize(steps);

  // The proposals, merged by alias root (a view of a resident tensor is the same bytes).
  std::vector<Candidate> cands;
  std::map<graph::ValueId, size_t> byRoot;
  for (const graph::ResidentTensor &r :
       graph::findResidentTensors(g, in.groupIds, cap, hw.actBytes())) {
    graph::ValueId root = in.rootOf(r.value);
    if (byRoot.count(root))
      continue;
    byRoot[root] = cands.size();
    Candidate c{root, numElements(g.value(root).shape) * hw.actBytes()};
    c.entry = out.entries.size();
    ResidencyEntry e;
    e.name = g.value(root).name;
    e.bytes = c.bytes;
    e.producer = r.producer;
    // Its readers: every kernel (views move no data) reading the root or one of its views.
    for (size_t i = 0; i < steps; ++i) {
      if (in.plans[i].kind == KernelKind::View)
        continue;
      const graph::FusedGroup &grp = g.groups.at(static_cast<size_t>(in.groupIds[i]));
      if (std::any_of(grp.inputs.begin(), grp.inputs.end(),
                      [&](graph::ValueId v) { return in.rootOf(v) == root; }))
        e.consumers.push_back(grp.id);
    }
    e.dramBytesSaved = c.bytes * static_cast<int64_t>(1 + e.consumers.size());
    auto span = in.life.find(root);
    NPUC_ASSERT(span != in.life.end(), "a proposed tensor is an activation of the segment");
    c.start = span->second.first;
    c.end = span->second.second;
    if (in.pinned.count(root)) {
      c.kept = false;
      e.dropped = "the host reads or writes it (it or a view of it leaves the segment)";
    } else if (in.splitPinned.count(root)) {
      c.kept = false;
      e.dropped = "a batch-split run's sub-batches read or write it through DRAM, or it is live "
                  "across the run (the run keeps its own tensors in L1)";
    }
    out.entries.push_back(std::move(e));
    cands.push_back(c);
  }

  auto drop = [&](size_t c, std::string why) {
    cands[c].kept = false;
    out.entries[cands[c].entry].dropped = std::move(why);
  };

  Trials trials(in, hw);
  auto trial = [&](size_t i, const Window &w, const std::map<graph::ValueId, int64_t> &l1Addr) {
    return trials.run(i, w, l1Addr);
  };
  auto baseline = [&](size_t i) { return trials.baseline(i); };
  auto ioOf = [&](size_t i) { return trials.ioOf(i); };

  // Drop one tensor per round until every kernel tiles, encodes and gains.
  for (;;) {
    std::vector<size_t> kept;
    std::vector<BufferReq> reqs;
    for (size_t c = 0; c < cands.size(); ++c)
      if (cands[c].kept) {
        kept.push_back(c);
        reqs.push_back({cands[c].start, cands[c].end, cands[c].bytes, align});
      }
    out.l1Addr.clear();
    for (Window &w : out.window)
      w = Window{};
    if (kept.empty())
      break;
    PlannerOptions po;
    po.timeLimitSeconds = 0.5;
    MemoryPlan mp = planMemory(reqs, cap, po);
    auto largestLiveAt = [&](size_t i) {
      size_t best = kept.front();
      int64_t bytes = -1;
      for (size_t c : kept)
        if (cands[c].start <= int64_t(i) && int64_t(i) < cands[c].end && cands[c].bytes > bytes) {
          best = c;
          bytes = cands[c].bytes;
        }
      // Placement checked that the group tiles in the whole of L1: only a window fails.
      NPUC_ASSERT(bytes >= 0, "a kernel that fails only in a window has a resident tensor live");
      return best;
    };
    if (!mp.solved) {
      size_t big = kept.front();
      for (size_t c : kept)
        big = cands[c].bytes > cands[big].bytes ? c : big;
      drop(big, fmt::format("L1 cannot hold it with the tensors live alongside (planned peak {} "
                            "of {} bytes)",
                            mp.peak, cap));
      continue;
    }
    for (size_t j = 0; j < kept.size(); ++j)
      out.l1Addr[cands[kept[j]].root] = mp.offsets[j];
    // Each step's window starts above every kept tensor live at that step.
    for (size_t i = 0; i < steps; ++i) {
      int64_t lo = 0;
      for (size_t j = 0; j < kept.size(); ++j) {
        const Candidate &c = cands[kept[j]];
        if (c.start <= int64_t(i) && int64_t(i) < c.end)
          lo = std::max(lo, mp.offsets[j] + c.bytes);
      }
      if (lo > 0)
        out.window[i].range[hw.l1] = {alignUp(lo, align), cap};
    }
    bool dropped = false;
    std::vector<int64_t> extraCycles(steps, 0), extraDram(steps, 0); // window vs whole L1
    for (size_t i = 0; i < steps && !dropped; ++i) {
      const graph::FusedGroup &grp = g.groups.at(static_cast<size_t>(in.groupIds[i]));
      const Window &w = out.window[i];
      Trial r = trial(i, w, out.l1Addr);
      if (!w.range.count(hw.l1)) {
        // The whole of L1: the group compiles (or fails, a user error) as without residency.
      } else if (r.loopNest && !baseline(i).loopNest) {
        drop(largestLiveAt(i),
             fmt::format("group '{}': the hand-written kernel finds no tiling in L1 [{}, {}) "
                         "around the resident tensors (the loop-nest kernel would run it)",
                         grp.name, w.lo(hw, hw.l1), w.hi(hw, hw.l1)));
        dropped = true;
      } else if (!r.reject.empty()) {
        drop(largestLiveAt(i),
             fmt::format("group '{}' cannot tile in L1 [{}, {}) around the resident tensors: {}",
                         grp.name, w.lo(hw, hw.l1), w.hi(hw, hw.l1), r.reject));
        dropped = true;
      } else if (!r.encode.empty()) {
        size_t victim = cands.size();
        for (graph::ValueId v : ioOf(i))
          if (auto it = byRoot.find(in.rootOf(v)); it != byRoot.end() && cands[it->second].kept)
            if (victim == cands.size() || cands[it->second].bytes > cands[victim].bytes)
              victim = it->second;
        NPUC_ASSERT(victim < cands.size(), "only copies of a resident tensor are re-checked");
        drop(victim, fmt::format("its on-chip copies do not encode: {}", r.encode));
        dropped = true;
      } else if (r.emitted && baseline(i).emitted) {
        // (A step that emits in neither form fails the compile either way: nothing to compare.)
        extraCycles[i] = r.cycles - baseline(i).cycles;
        extraDram[i] = r.dram - baseline(i).dram;
      }
    }
    if (dropped)
      continue;
    // Worth it? Over its lifetime, its groups simulated alone in their windows (with the kept
    // tensors' traffic gone) against the same groups with the whole of L1 and every tensor in
    // DRAM: a tensor is dropped when they take more cycles, or move more DRAM bytes (smaller
    // tiles reload weights). A step's difference counts for every tensor live at it, so a tensor
    // that only takes space is charged for its neighbours' slowdown too (conservative).
    size_t worst = cands.size();
    double worstLoss = 0;
    std::string why;
    for (size_t c : kept) {
      int64_t cycles = 0, bytes = 0;
      for (int64_t i = cands[c].start; i < cands[c].end; ++i) {
        cycles += extraCycles[size_t(i)];
        bytes += extraDram[size_t(i)];
      }
      const double loss = std::max(double(cycles), double(bytes) / t.dram.bytesPerCycle);
      if (loss > worstLoss) {
        worst = c;
        worstLoss = loss;
        why = fmt::format("its groups, simulated alone in the L1 left around the resident "
                          "tensors, take {:+} cycles and move {:+} DRAM bytes against the whole "
                          "of L1 without residency",
                          cycles, bytes);
      }
    }
    if (worst == cands.size())
      break;
    drop(worst, why);
  }
  for (auto &[root, addr] : out.l1Addr)
    out.entries[cands[byRoot.at(root)].entry].l1Addr = addr;
  for (size_t i = 0; i < steps; ++i) {
    const Trial r = trial(i, out.window[i], out.l1Addr);
    out.steps.push_back({r.emitted, r.cycles, r.dram});
  }
  return out;
}

} // namespace npuc::npu
