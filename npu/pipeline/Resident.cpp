// Resident.cpp - which proposed tensors stay in L1 between groups, where, and the L1 window each
// group's kernel gets around them (Resident.h).
#include "npu/pipeline/Resident.h"

#include "graph/Passes.h"
#include "npu/isel/Emit.h"
#include "npu/memory/MemoryPlanner.h"
#include "npu/pipeline/BankAlloc.h"
#include "support/Error.h"
#include "support/WorkQueue.h"

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
  int64_t macs = 0, vectorElements = 0; // the work they do
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
                [&](const ConstBytes &bytes) {
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
      if (!mem_) // timing-only trials: sizes, no DRAM image
        mem_ = std::make_unique<sim::Memory>(sim::Memory::sizesOnly(t, constAt));
      mem_->growDram(constAt);
      sim::SimStats st = simulateGroup(t, p, *mem_, false);
      r.cycles = st.totalCycles;
      r.dram = st.dramBytesRead + st.dramBytesWritten;
      r.macs = st.macs;
      r.vectorElements = st.totalVectorElements();
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
  std::vector<StepCost> out(in.groupIds.size());
  runTasks(out.size(), std::max(1, in.jobs), [&](size_t i) {
    Trials trials(in, hw); // a step's trial reads the shared input only
    const Trial r = trials.baseline(i);
    out[i] = {r.emitted, r.cycles, r.dram, r.macs, r.vectorElements};
  });
  return out;
}

namespace {

// What each step's kernel loses in its window against the whole of L1 without residency (the
// steps that emit in both forms; 0 elsewhere).
struct StepLoss {
  std::vector<int64_t> cycles, dram;
};

// One planResidency: the proposals as candidates, the plan being built, and the dry lowerings.
// The steps: collect the proposals (collectCandidates), then drop one tensor per round until
// every kernel tiles, encodes and gains: place the kept tensors in L1 and give each step the
// window above them (place), drop one a kernel cannot tile or encode around (dropUntileable),
// else the one whose groups lose most (dropWorstLoss); finally measure each step as planned.
class ResidencyPlanner {
public:
  ResidencyPlanner(const ResidencyInput &in, const Hw &hw)
      : in_(in), hw_(hw), g_(*in.g), steps_(in.groupIds.size()), cap_(hw.capacity(hw.l1)),
        align_(hw.alignment(hw.l1)), trials_(in, hw) {
    out_.window.resize(steps_);
  }

  ResidencyPlan plan() {
    collectCandidates();
    for (;;) {
      std::vector<size_t> kept;
      for (size_t c = 0; c < cands_.size(); ++c)
        if (cands_[c].kept)
          kept.push_back(c);
      out_.l1Addr.clear();
      for (Window &w : out_.window)
        w = Window{};
      if (kept.empty())
        break;
      if (!place(kept))
        continue;
      StepLoss loss{std::vector<int64_t>(steps_, 0), std::vector<int64_t>(steps_, 0)};
      if (dropUntileable(loss))
        continue;
      if (!dropWorstLoss(kept, loss))
        break;
    }
    for (auto &[root, addr] : out_.l1Addr)
      out_.entries[cands_[byRoot_.at(root)].entry].l1Addr = addr;
    for (size_t i = 0; i < steps_; ++i) {
      const Trial r = trials_.run(i, out_.window[i], out_.l1Addr);
      out_.steps.push_back({r.emitted, r.cycles, r.dram, r.macs, r.vectorElements});
    }
    return std::move(out_);
  }

private:
  // The proposals, merged by alias root (a view of a resident tensor is the same bytes), each
  // with its report entry; those the host or a batch-split run needs in DRAM start dropped.
  void collectCandidates() {
    // Every kernel (views move no data) reading each root or one of its views, in step order.
    std::map<graph::ValueId, std::vector<int>> readers;
    for (size_t i = 0; i < steps_; ++i) {
      if (in_.plans[i].kind == KernelKind::View)
        continue;
      const graph::FusedGroup &grp = g_.groups.at(static_cast<size_t>(in_.groupIds[i]));
      for (graph::ValueId v : grp.inputs) {
        std::vector<int> &ids = readers[in_.rootOf(v)];
        if (ids.empty() || ids.back() != grp.id) // a group reading a root twice reads it once
          ids.push_back(grp.id);
      }
    }
    for (const graph::ResidentTensor &r :
         graph::findResidentTensors(g_, in_.groupIds, cap_, hw_.actBytes())) {
      graph::ValueId root = in_.rootOf(r.value);
      if (byRoot_.count(root))
        continue;
      byRoot_[root] = cands_.size();
      Candidate c{root, numElements(g_.value(root).shape) * hw_.actBytes()};
      c.entry = out_.entries.size();
      ResidencyEntry e;
      e.name = g_.value(root).name;
      e.bytes = c.bytes;
      e.producer = r.producer;
      if (auto it = readers.find(root); it != readers.end())
        e.consumers = it->second;
      e.dramBytesSaved = c.bytes * static_cast<int64_t>(1 + e.consumers.size());
      auto span = in_.life.find(root);
      NPUC_ASSERT(span != in_.life.end(), "a proposed tensor is an activation of the segment");
      c.start = span->second.first;
      c.end = span->second.second;
      if (in_.pinned.count(root)) {
        c.kept = false;
        e.dropped = "the host reads or writes it (it or a view of it leaves the segment)";
      } else if (in_.splitPinned.count(root)) {
        c.kept = false;
        e.dropped = "a batch-split run's sub-batches read or write it through DRAM, or it is "
                    "live across the run (the run keeps its own tensors in L1)";
      }
      out_.entries.push_back(std::move(e));
      cands_.push_back(c);
    }
  }

  void drop(size_t c, std::string why) {
    cands_[c].kept = false;
    out_.entries[cands_[c].entry].dropped = std::move(why);
  }

  // Places the kept tensors in L1 by their lifetimes (the memory planner) and gives each step the
  // window above every kept tensor live at it. When they do not fit together, drops the largest
  // and returns false.
  bool place(const std::vector<size_t> &kept) {
    std::vector<BufferReq> reqs;
    for (size_t c : kept)
      reqs.push_back({cands_[c].start, cands_[c].end, cands_[c].bytes, align_});
    PlannerOptions po;
    po.timeLimitSeconds = 0.5;
    MemoryPlan mp = planMemory(reqs, cap_, po);
    if (!mp.solved) {
      size_t big = kept.front();
      for (size_t c : kept)
        big = cands_[c].bytes > cands_[big].bytes ? c : big;
      drop(big, fmt::format("L1 cannot hold it with the tensors live alongside (planned peak {} "
                            "of {} bytes)",
                            mp.peak, cap_));
      return false;
    }
    for (size_t j = 0; j < kept.size(); ++j)
      out_.l1Addr[cands_[kept[j]].root] = mp.offsets[j];
    // Each step's window starts above the highest kept tensor live at it: one pass over each
    // tensor's live steps, not over every tensor per step.
    std::vector<int64_t> lo(steps_, 0);
    for (size_t j = 0; j < kept.size(); ++j) {
      const Candidate &c = cands_[kept[j]];
      for (int64_t i = std::max<int64_t>(c.start, 0); i < std::min(c.end, int64_t(steps_)); ++i)
        lo[size_t(i)] = std::max(lo[size_t(i)], mp.offsets[j] + c.bytes);
    }
    for (size_t i = 0; i < steps_; ++i)
      if (lo[i] > 0)
        out_.window[i].range[hw_.l1] = {alignUp(lo[i], align_), cap_};
    return true;
  }

  // The largest kept tensor live at step i: the one to drop when step i's kernel cannot tile.
  size_t largestLiveAt(size_t i) const {
    size_t best = cands_.size();
    int64_t bytes = -1;
    for (size_t c = 0; c < cands_.size(); ++c)
      if (cands_[c].kept && cands_[c].start <= int64_t(i) && int64_t(i) < cands_[c].end &&
          cands_[c].bytes > bytes) {
        best = c;
        bytes = cands_[c].bytes;
      }
    // Placement checked that the group tiles in the whole of L1: only a window fails.
    NPUC_ASSERT(bytes >= 0, "a kernel that fails only in a window has a resident tensor live");
    return best;
  }

  // Each step lowered in its window, in order: drops a tensor for the first step whose kernel
  // cannot tile around the residents (or only the loop-nest kernel can) or whose on-chip copies
  // do not encode, and returns true; else fills `loss` and returns false.
  bool dropUntileable(StepLoss &loss) {
    for (size_t i = 0; i < steps_; ++i) {
      const graph::FusedGroup &grp = g_.groups.at(static_cast<size_t>(in_.groupIds[i]));
      const Window &w = out_.window[i];
      Trial r = trials_.run(i, w, out_.l1Addr);
      if (!w.range.count(hw_.l1)) {
        // The whole of L1: the group compiles (or fails, a user error) as without residency.
      } else if (r.loopNest && !trials_.baseline(i).loopNest) {
        drop(largestLiveAt(i),
             fmt::format("group '{}': the hand-written kernel finds no tiling in L1 [{}, {}) "
                         "around the resident tensors (the loop-nest kernel would run it)",
                         grp.name, w.lo(hw_, hw_.l1), w.hi(hw_, hw_.l1)));
        return true;
      } else if (!r.reject.empty()) {
        drop(largestLiveAt(i),
             fmt::format("group '{}' cannot tile in L1 [{}, {}) around the resident tensors: {}",
                         grp.name, w.lo(hw_, hw_.l1), w.hi(hw_, hw_.l1), r.reject));
        return true;
      } else if (!r.encode.empty()) {
        drop(largestResidentOf(i), fmt::format("its on-chip copies do not encode: {}", r.encode));
        return true;
      } else if (r.emitted && trials_.baseline(i).emitted) {
        // (A step that emits in neither form fails the compile either way: nothing to compare.)
        loss.cycles[i] = r.cycles - trials_.baseline(i).cycles;
        loss.dram[i] = r.dram - trials_.baseline(i).dram;
      }
    }
    return false;
  }

  // The largest kept tensor step i reads or writes (whose copies failed to encode).
  size_t largestResidentOf(size_t i) const {
    size_t victim = cands_.size();
    for (graph::ValueId v : trials_.ioOf(i))
      if (auto it = byRoot_.find(in_.rootOf(v)); it != byRoot_.end() && cands_[it->second].kept)
        if (victim == cands_.size() || cands_[it->second].bytes > cands_[victim].bytes)
          victim = it->second;
    NPUC_ASSERT(victim < cands_.size(), "only copies of a resident tensor are re-checked");
    return victim;
  }

  // Worth it? Over its lifetime, its groups simulated alone in their windows (with the kept
  // tensors' traffic gone) against the same groups with the whole of L1 and every tensor in
  // DRAM: a tensor is dropped when they take more cycles, or move more DRAM bytes (smaller tiles
  // reload weights). A step's difference counts for every tensor live at it, so a tensor that
  // only takes space is charged for its neighbours' slowdown too (conservative). Drops the one
  // that loses most and returns true, or returns false when none loses.
  bool dropWorstLoss(const std::vector<size_t> &kept, const StepLoss &loss) {
    size_t worst = cands_.size();
    double worstLoss = 0;
    std::string why;
    for (size_t c : kept) {
      int64_t cycles = 0, bytes = 0;
      for (int64_t i = cands_[c].start; i < cands_[c].end; ++i) {
        cycles += loss.cycles[size_t(i)];
        bytes += loss.dram[size_t(i)];
      }
      const double l = std::max(double(cycles), double(bytes) / hw_.t->dram.bytesPerCycle);
      if (l > worstLoss) {
        worst = c;
        worstLoss = l;
        why = fmt::format("its groups, simulated alone in the L1 left around the resident "
                          "tensors, take {:+} cycles and move {:+} DRAM bytes against the whole "
                          "of L1 without residency",
                          cycles, bytes);
      }
    }
    if (worst == cands_.size())
      return false;
    drop(worst, why);
    return true;
  }

  const ResidencyInput &in_;
  const Hw &hw_;
  const graph::Graph &g_;
  const size_t steps_;
  const int64_t cap_, align_; // L1's capacity and alignment
  Trials trials_;
  std::vector<Candidate> cands_;
  std::map<graph::ValueId, size_t> byRoot_; // alias root -> its candidate
  ResidencyPlan out_;
};

} // namespace

ResidencyPlan planResidency(const ResidencyInput &in, const Hw &hw) {
  return ResidencyPlanner(in, hw).plan();
}

} // namespace npuc::npu
