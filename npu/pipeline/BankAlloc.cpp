// BankAlloc.cpp - the placement search of BankAlloc.h: score buffers from a simulated trace,
// generate a few candidate placements, re-lower, emit and simulate each, keep the best.
#include "npu/pipeline/BankAlloc.h"

#include "npu/isel/Emit.h"
#include "npu/isel/Sync.h"
#include "support/Error.h"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <numeric>
#include <set>

namespace npuc::npu {

namespace {

/// An address layout of a kernel's buffers (indexed in reservation order): per level, buffers
/// are packed in `order`, each after `gap` extra bytes and with `pitch` bytes between copies.
/// Gap 0 and the bump allocator's pitch in reservation order is exactly the bump allocation.
/// With `fromTop` (Builder), packing runs downward from the level's top (rounded down to its
/// alignment), as the builder placed the default.
struct Layout {
  std::vector<int> order;
  std::vector<int64_t> gap, pitch;
};

std::vector<Placement> pack(const Hw &hw, const std::vector<OnChip> &bufs, const Layout &l,
                            bool fromTop, const Window &w, bool &fits) {
  std::map<int, int64_t> cursor; // bytes taken per level, from the bottom or the top
  std::vector<Placement> out(bufs.size());
  fits = true;
  for (int i : l.order) {
    const OnChip &b = bufs[static_cast<size_t>(i)];
    const int64_t align = hw.alignment(b.level), lo = w.lo(hw, b.level);
    const int64_t end = w.end(hw, b.level, fromTop);
    int64_t &c = cursor[b.level];
    c = alignUp(c, align) + l.gap[size_t(i)];
    const int64_t start = lo + c;
    c += l.pitch[size_t(i)] * b.count;
    out[size_t(i)] = {fromTop ? end - c : start, l.pitch[size_t(i)]};
    fits = fits && lo + c <= end;
  }
  return out;
}

bool banked(const isa::Target &t, int level) {
  const isa::MemoryLevel &l = t.levels.at(static_cast<size_t>(level));
  return !l.isDram && l.banks >= 2;
}

/// Buffers (indices) whose copies overlap an access.
std::vector<int> buffersOf(const std::vector<OnChip> &bufs, const Access &a) {
  std::vector<int> out;
  for (size_t i = 0; i < bufs.size(); ++i) {
    const OnChip &b = bufs[i];
    if (b.level == a.level && a.lo < b.base + b.bytes * b.count && a.hi > b.base)
      out.push_back(static_cast<int>(i));
  }
  return out;
}

/// Moving buffers is only sound if every on-chip byte a kernel touches belongs to one of its
/// reserved buffers; a kernel addressing scratch space the builder does not know about would be
/// overwritten by a moved buffer.
void checkInsideBuffers(const Hw &hw, const isa::Program &p, const std::vector<OnChip> &bufs,
                        const Window &w, const std::string &where) {
  const isa::Target &t = *hw.t;
  for (const isa::Instr &in : p.instrs)
    for (const Access &a : accessesOf(t, in)) {
      if (a.hi <= a.lo || t.levels.at(static_cast<size_t>(a.level)).isDram)
        continue;
      // Outside the group's window (a tensor resident across groups): no buffer moves there.
      if (a.hi <= w.lo(hw, a.level) || a.lo >= w.hi(hw, a.level))
        continue;
      bool inside = std::any_of(bufs.begin(), bufs.end(), [&](const OnChip &b) {
        return b.level == a.level && a.lo >= b.base && a.hi <= b.base + b.bytes * b.count;
      });
      NPUC_ASSERT(inside, fmt::format("{}: every on-chip access of a kernel lies in a buffer it "
                                      "reserved (level {} bytes [{}, {}))",
                                      where, a.level, a.lo, a.hi));
    }
}

/// Stall cycles attributed to each buffer: those of every stalled instruction touching it on a
/// banked level, and of every instruction of another engine running concurrently with a stalled
/// one on the same level (the conflict has two sides; moving either may resolve it).
std::vector<double> scoreBuffers(const isa::Target &t, const isa::Program &p,
                                 const std::vector<OnChip> &bufs, const sim::SimStats &s) {
  std::vector<double> score(bufs.size(), 0.0);
  std::vector<std::vector<const sim::TraceEvent *>> byEngine(t.engines.size());
  for (const sim::TraceEvent &e : s.trace)
    byEngine.at(static_cast<size_t>(e.engine)).push_back(&e);
  for (auto &v : byEngine) // in-order engines: starts and ends both increase
    std::sort(v.begin(), v.end(), [](auto *a, auto *b) { return a->start < b->start; });
  auto bankedAccesses = [&](int64_t index) {
    std::vector<Access> out = accessesOf(t, p.instrs.at(static_cast<size_t>(index)));
    std::erase_if(out, [&](const Access &a) { return !banked(t, a.level); });
    return out;
  };
  for (const sim::TraceEvent &e : s.trace) {
    if (e.bankStall <= 0)
      continue;
    std::set<int> levels;
    for (const Access &a : bankedAccesses(e.index)) {
      levels.insert(a.level);
      for (int b : buffersOf(bufs, a))
        score[size_t(b)] += double(e.bankStall);
    }
    for (size_t q = 0; q < byEngine.size(); ++q) {
      if (static_cast<int>(q) == e.engine)
        continue;
      const auto &v = byEngine[q];
      auto it = std::partition_point(v.begin(), v.end(),
                                     [&](const sim::TraceEvent *x) { return x->end <= e.start; });
      for (; it != v.end() && (*it)->start < e.end; ++it)
        for (const Access &a : bankedAccesses((*it)->index))
          if (levels.count(a.level))
            for (int b : buffersOf(bufs, a))
              score[size_t(b)] += double(e.bankStall);
    }
  }
  return score;
}

/// A few placements around `cur` for the top-scored buffers (see BankAlloc.h).
std::vector<Layout> candidates(const Hw &hw, const std::vector<OnChip> &bufs, const Layout &cur,
                               const std::vector<double> &score) {
  const isa::Target &t = *hw.t;
  std::vector<int> top;
  for (size_t i = 0; i < bufs.size(); ++i)
    if (score[i] > 0 && banked(t, bufs[i].level))
      top.push_back(static_cast<int>(i));
  std::stable_sort(top.begin(), top.end(),
                   [&](int a, int b) { return score[size_t(a)] > score[size_t(b)]; });
  if (top.size() > 3)
    top.resize(3);
  std::vector<Layout> out;
  for (int b : top) {
    const OnChip &buf = bufs[size_t(b)];
    const isa::MemoryLevel &lv = t.levels.at(static_cast<size_t>(buf.level));
    const int64_t width = std::max(1, lv.bankWidth), period = width * lv.banks;
    // Shifts keep the level's alignment; one that is a whole bank period changes no bank.
    const int64_t step = std::lcm(width, std::max<int64_t>(1, hw.alignment(buf.level)));
    std::set<int64_t> shifts;
    for (int64_t j : {int64_t(1), int64_t(lv.banks / 2)})
      if (j >= 1 && (j * step) % period != 0)
        shifts.insert(j * step);
    for (int64_t d : shifts) {
      Layout l = cur;
      l.gap[size_t(b)] += d;
      out.push_back(l);
      if (buf.count > 1) {
        l = cur;
        l.pitch[size_t(b)] += d;
        out.push_back(l);
      }
    }
    Layout l = cur; // to the end of its level: no free space needed
    std::erase(l.order, b);
    l.order.push_back(b);
    out.push_back(l);
    for (int c : top)
      if (c != b && bufs[size_t(c)].level == buf.level) {
        Layout s = cur;
        auto ib = std::find(s.order.begin(), s.order.end(), b);
        auto ic = std::find(s.order.begin(), s.order.end(), c);
        std::iter_swap(ib, ic);
        out.push_back(s);
      }
  }
  return out;
}

std::string describe(const isa::Target &t, const std::vector<OnChip> &bufs,
                     const std::vector<Placement> &p) {
  std::string out;
  for (size_t i = 0; i < bufs.size(); ++i) {
    const OnChip &b = bufs[i];
    if (p[i].base == b.base && p[i].pitch == b.bytes)
      continue;
    out += fmt::format("{}{} ({}) {:#x} -> {:#x}", out.empty() ? "" : "; ", b.name,
                       t.levels.at(static_cast<size_t>(b.level)).name, b.base, p[i].base);
    if (p[i].pitch != b.bytes)
      out += fmt::format(", copy pitch {} -> {} B", b.bytes, p[i].pitch);
  }
  return out;
}

/// Whether a vector instruction's src2 fields repeat src1's (emit-npu's unary ops).
bool mirrorsSrc1(const isa::Instr &in) {
  for (const char *f : {"_space", "_addr", "_dtype", "_s0", "_s1", "_s2"})
    if (in.get(std::string("src2") + f) != in.get(std::string("src1") + f))
      return false;
  return true;
}

/// Calls f(field, level) for every address field of an instruction (the operands accessesOf()
/// reads, Sync.cpp).
template <typename F> void forEachAddress(const isa::Target &t, const isa::Instr &in, F f) {
  auto operand = [&](const std::string &p) {
    f(p + "_addr", static_cast<int>(in.get(p + "_space")));
  };
  switch (in.desc->semantics) {
  case isa::Semantics::Dma:
    operand("src");
    operand("dst");
    break;
  case isa::Semantics::Vector: {
    // A unary op does not read src2, and the two emitters fill it differently: the hand-written
    // kernels (Builder::vector) leave it unset (level 0, address 0), which is no operand to move
    // (on a target whose level 0 is on chip it would look like one), while emit-npu names src1
    // again so that every operand field is valid (EmitNpu.cpp). Re-lowering at a placement moves
    // that copy with src1, so relocation must too, or the two programs differ in a field the
    // hardware ignores. Decided before src1 moves, as f may rewrite it.
    std::optional<isa::VecOp> op = t.vector.opOf(in.get("op"));
    const bool src2 = (op && isa::vecOpReadsSrc2(*op)) || mirrorsSrc1(in);
    operand("dst");
    operand("src1");
    if (src2)
      operand("src2");
    break;
  }
  case isa::Semantics::Matmul:
    f("a_addr", t.tensor.aLevel);
    f("b_addr", t.tensor.bLevel);
    f("c_addr", t.tensor.accLevel);
    break;
  case isa::Semantics::Finish:
    break;
  }
}

/// The program with every on-chip address moved from the default buffers (`from`) to
/// `placement`: copy j of a buffer at offset o goes to base' + j * pitch' + o. Candidates are
/// evaluated this way because emitting a kernel again costs far more than simulating it; the
/// winner is re-lowered and must emit exactly this program. False when an address does not fit
/// its field.
bool relocate(const isa::Target &t, const std::vector<OnChip> &from,
              const std::vector<Placement> &placement, isa::Program &p) {
  bool ok = true;
  for (isa::Instr &in : p.instrs)
    forEachAddress(t, in, [&](const std::string &field, int level) {
      const int64_t a = in.get(field);
      for (size_t i = 0; i < from.size(); ++i) {
        const OnChip &b = from[i];
        if (b.level != level || a < b.base || a >= b.base + b.bytes * b.count)
          continue;
        const int64_t moved = placement[i].base + (a - b.base) / b.bytes * placement[i].pitch +
                              (a - b.base) % b.bytes;
        const isa::Field *f = in.desc->field(field);
        NPUC_ASSERT(f && !in.desc->fixed.count(field), "kernels encode on-chip addresses");
        ok = ok && moved <= f->maxValue();
        in.set(field, moved);
        return;
      }
    });
  return ok;
}

bool sameProgram(const isa::Program &a, const isa::Program &b) {
  if (a.instrs.size() != b.instrs.size())
    return false;
  for (size_t i = 0; i < a.instrs.size(); ++i)
    if (a.instrs[i].desc != b.instrs[i].desc || a.instrs[i].fields() != b.instrs[i].fields())
      return false;
  return true;
}

struct Eval {
  bool ok = false;
  int64_t cycles = 0, stalls = 0;
  isa::Program program;
};

} // namespace

sim::SimStats simulateGroup(const isa::Target &t, const isa::Program &group, sim::Memory &mem,
                            bool trace) {
  isa::Program p = group;
  insertTokens(t, p);
  sim::SimOptions o;
  o.functional = false; // the timing model reads no data: cycles are exactly a full run's
  o.check = false;
  o.trace = trace;
  // The program is the compiler's own: a deadlock or a malformed instruction here is a compiler
  // bug, not a user error that the driver's retry may route to the CPU.
  try {
    return sim::run(t, p, mem, o);
  } catch (const Error &e) {
    NPUC_ASSERT(false, std::string("a compiled group simulates without error: ") + e.what());
  }
  return {};
}

BankReport placeForBanks(const Hw &hw, const LowerFn &lower, const std::string &where,
                         sim::Memory &mem, PlacedKernel &k, bool alwaysMove, bool fromTop,
                         const Window &window) {
  const isa::Target &t = *hw.t;
  BankReport r;
  if (k.program.instrs.empty())
    return r;
  // Traced: the trace scores the buffers when there are stalls (tracing costs little next to
  // the bank model itself).
  sim::SimStats stats = simulateGroup(t, k.program, mem, true);
  r.ran = true;
  r.cyclesBefore = r.cyclesAfter = stats.totalCycles;
  r.stallsBefore = r.stallsAfter = stats.bankConflictStallCycles;
  if (!alwaysMove && (r.stallsBefore == 0 || r.stallsBefore * kMinStallShare < r.cyclesBefore))
    return r; // nothing to gain, or too little to pay for the simulations
  Builder b0(hw, fromTop, window);
  lower(b0);
  const std::vector<OnChip> bufs = b0.buffers();
  checkInsideBuffers(hw, k.program, bufs, window, where);
  const isa::Program original = k.program;
  Layout cur;
  for (size_t i = 0; i < bufs.size(); ++i) {
    cur.order.push_back(static_cast<int>(i));
    cur.gap.push_back(0);
    cur.pitch.push_back(bufs[i].bytes);
  }
  bool fits = false;
  std::vector<Placement> placed = pack(hw, bufs, cur, fromTop, window, fits);
  for (size_t i = 0; i < bufs.size(); ++i)
    NPUC_ASSERT(fits && placed[i].base == bufs[i].base,
                where + ": the layout model reproduces the bump allocator");
  std::set<std::vector<std::pair<int64_t, int64_t>>> seen;
  auto key = [](const std::vector<Placement> &p) {
    std::vector<std::pair<int64_t, int64_t>> v;
    for (const Placement &x : p)
      v.emplace_back(x.base, x.pitch);
    return v;
  };
  seen.insert(key(placed));
  for (int round = 0; round < 2 && (alwaysMove || r.stallsAfter > 0); ++round) {
    std::vector<OnChip> now = bufs; // the buffers where the current program has them
    for (size_t i = 0; i < now.size(); ++i) {
      now[i].base = placed[i].base;
      now[i].bytes = placed[i].pitch;
    }
    std::vector<double> score = scoreBuffers(t, k.program, now, stats);
    if (alwaysMove) // every buffer is a candidate, not only those that stall
      for (double &x : score)
        x += 1;
    Eval best;
    int tried = 0;
    bool promising = false;
    Layout bestLayout;
    std::vector<Placement> bestPlaced;
    for (const Layout &l : candidates(hw, bufs, cur, score)) {
      if (r.candidates >= kMaxCandidates)
        break;
      std::vector<Placement> p = pack(hw, bufs, l, fromTop, window, fits);
      if (!fits || !seen.insert(key(p)).second)
        continue;
      if (tried == kGiveUpAfter && !promising)
        break; // moving buffers does not help here: the stalls are within instructions
      ++r.candidates;
      ++tried;
      Eval e;
      e.program = original;
      if (relocate(t, bufs, p, e.program)) {
        sim::SimStats es = simulateGroup(t, e.program, mem, false);
        e = {true, es.totalCycles, es.bankConflictStallCycles, std::move(e.program)};
      }
      promising = promising || (e.ok && e.stalls < r.stallsAfter);
      if (e.ok &&
          (!best.ok || std::pair(e.cycles, e.stalls) < std::pair(best.cycles, best.stalls))) {
        best = std::move(e);
        bestLayout = l;
        bestPlaced = p;
      }
    }
    if (!best.ok || (!alwaysMove && std::pair(best.cycles, best.stalls) >=
                                        std::pair(r.cyclesAfter, r.stallsAfter)))
      break; // nothing strictly better: keep what we have
    cur = bestLayout;
    placed = bestPlaced;
    k.program = std::move(best.program);
    r.cyclesAfter = best.cycles;
    r.stallsAfter = best.stalls;
    if (r.stallsAfter > 0)
      stats = simulateGroup(t, k.program, mem, true);
  }
  r.change = describe(t, bufs, placed);
  if (!r.change.empty()) {
    // The kernel itself at the chosen placement (its TIR is what inspect prints).
    Builder b(hw, placed, fromTop, window);
    PlacedKernel won;
    won.kernel = lower(b);
    won.placement = placed;
    NPUC_ASSERT(won.kernel.ok() && b.buffers().size() == bufs.size(),
                where + ": lowering is deterministic and placement does not change the tiling");
    // The lowering alone does not fill the report's fields that kernel selection does: the
    // tiling text's note of how the kernel was chosen (forced, tuned, single-buffered, the
    // loop-nest fallback: KernelSelect.cpp) and the on-chip peak, here the re-lowering builder's.
    NPUC_ASSERT(k.kernel.tiling.rfind(won.kernel.tiling, 0) == 0,
                where + ": kernel selection only appends to the tiling text of the kernel");
    won.kernel.tiling = k.kernel.tiling;
    won.kernel.onChipPeak = b.peakBytes();
    Expected<isa::Program, Reject> emitted = emitInstructions(t, won.kernel.body, where);
    NPUC_ASSERT(emitted.has_value(), where + ": the relocated program encodes, so its kernel does");
    won.program = std::move(*emitted);
    NPUC_ASSERT(sameProgram(won.program, k.program),
                where + ": re-lowering at a placement emits the relocated program");
    k = std::move(won);
  }
  return r;
}

} // namespace npuc::npu
