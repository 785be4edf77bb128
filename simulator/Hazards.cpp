// Hazards.cpp - vector-clock race detection and alignment checks (contract in Hazards.h).
//
// Cost: each access is compared with the recorded accesses whose bounding boxes overlap it. To
// keep that set small, a record is dropped when a later access makes it redundant (a covering
// write that happens after it, or any covering access after a read: every future access that
// would race with the old record then races with the newer one too), and periodically when every
// engine's clock has passed it (no future instruction can be unordered with it).
#include "simulator/Hazards.h"

#include "support/Error.h"

#include <algorithm>
#include <cstdlib>

namespace npuc::sim {

namespace {

using Interval = std::pair<int64_t, int64_t>;

// Expanding a strided operand into byte intervals is exact but can be large; past this many
// intervals the overlap is assumed (reported as a race rather than missed).
constexpr size_t kMaxIntervals = size_t(1) << 21;

/// Byte intervals of a strided operand clipped to [clipLo, clipHi), sorted and merged. Returns
/// false when there would be more than kMaxIntervals.
bool intervals(int64_t addr, int eb, const int64_t *n, const int64_t *s, int64_t clipLo,
               int64_t clipHi, std::vector<Interval> &out) {
  const bool rows = n[0] == 1 || std::llabs(s[0]) == 1;
  for (int64_t i2 = 0; i2 < n[2]; ++i2)
    for (int64_t i1 = 0; i1 < n[1]; ++i1) {
      int64_t base = addr + eb * (i1 * s[1] + i2 * s[2]);
      auto add = [&](int64_t lo, int64_t hi) {
        lo = std::max(lo, clipLo);
        hi = std::min(hi, clipHi);
        if (lo < hi)
          out.emplace_back(lo, hi);
      };
      if (rows) {
        int64_t span = (n[0] - 1) * s[0] * eb;
        add(base + std::min<int64_t>(0, span), base + std::max<int64_t>(0, span) + eb);
      } else {
        for (int64_t i0 = 0; i0 < n[0]; ++i0)
          add(base + i0 * s[0] * eb, base + i0 * s[0] * eb + eb);
      }
      if (out.size() > kMaxIntervals)
        return false;
    }
  std::sort(out.begin(), out.end());
  size_t w = 0;
  for (size_t r = 0; r < out.size(); ++r) {
    if (w > 0 && out[r].first <= out[w - 1].second)
      out[w - 1].second = std::max(out[w - 1].second, out[r].second);
    else
      out[w++] = out[r];
  }
  out.resize(w);
  return true;
}

void boundingBox(int64_t addr, int eb, const int64_t *n, const int64_t *s, int64_t &lo,
                 int64_t &hi) {
  int64_t l = 0, h = 0;
  for (int d = 0; d < 3; ++d) {
    int64_t span = (n[d] - 1) * s[d];
    l += std::min<int64_t>(0, span);
    h += std::max<int64_t>(0, span);
  }
  lo = addr + l * eb;
  hi = addr + (h + 1) * eb;
}

const char *levelName(const isa::Target &t, int index) {
  for (const isa::MemoryLevel &l : t.levels)
    if (l.index == index)
      return l.name.c_str();
  return "?";
}

} // namespace

bool stridedOverlap(int64_t addrA, int ebA, const int64_t *nA, const int64_t *sA, int64_t addrB,
                    int ebB, const int64_t *nB, const int64_t *sB) {
  int64_t loA, hiA, loB, hiB;
  boundingBox(addrA, ebA, nA, sA, loA, hiA);
  boundingBox(addrB, ebB, nB, sB, loB, hiB);
  int64_t lo = std::max(loA, loB), hi = std::min(hiA, hiB);
  if (lo >= hi)
    return false;
  std::vector<Interval> a, b;
  if (!intervals(addrA, ebA, nA, sA, lo, hi, a) || !intervals(addrB, ebB, nB, sB, lo, hi, b))
    return true;
  for (size_t i = 0, j = 0; i < a.size() && j < b.size();) {
    if (a[i].first < b[j].second && b[j].first < a[i].second)
      return true;
    if (a[i].second <= b[j].second)
      ++i;
    else
      ++j;
  }
  return false;
}

std::string instrText(const isa::Target &t, const isa::Program &p, int64_t index) {
  std::string text;
  try {
    isa::Program one;
    one.instrs.push_back(p.instrs.at(static_cast<size_t>(index)));
    text = isa::disassemble(t, one);
    while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
      text.pop_back();
  } catch (const Error &) {
    text = "<not disassemblable>";
  }
  return fmt::format("pc {:#x} (instruction #{}): {}", index * t.instructionBytes(), index, text);
}

HazardChecker::HazardChecker(const isa::Target &t, const isa::Program &p)
    : t_(t), p_(p), E_(t.engines.size()) {
  clock_.assign(E_, std::vector<uint32_t>(E_, 0));
  fifo_.assign(E_ * E_, {});
  int maxLevel = 0;
  for (const isa::MemoryLevel &l : t.levels)
    maxLevel = std::max(maxLevel, l.index);
  levels_.resize(static_cast<size_t>(maxLevel + 1));
}

void HazardChecker::accesses(const Decoded &d, std::vector<Access> &out) const {
  auto add = [&](int level, int64_t addr, int eb, const int64_t *n, const int64_t *s, bool write,
                 const char *what) {
    Access a;
    a.level = level;
    a.addr = addr;
    a.eb = eb;
    for (int i = 0; i < 3; ++i) {
      a.n[i] = n[i];
      a.stride[i] = s[i];
    }
    if (n[0] * n[1] * n[2] == 0)
      return;
    boundingBox(addr, eb, a.n, a.stride, a.lo, a.hi);
    a.write = write;
    a.what = what;
    // Dense when the dimensions that move, sorted by stride, tile the box without holes.
    std::pair<int64_t, int64_t> dims[3];
    int moving = 0;
    for (int i = 0; i < 3; ++i)
      if (n[i] > 1 && s[i] != 0)
        dims[moving++] = {std::llabs(s[i]), n[i]};
    for (int i = 1; i < moving; ++i) // insertion sort of at most three
      for (int j = i; j > 0 && dims[j] < dims[j - 1]; --j)
        std::swap(dims[j], dims[j - 1]);
    int64_t expect = 1;
    a.dense = true;
    for (int i = 0; i < moving; ++i) {
      if (dims[i].first != expect) {
        a.dense = false;
        break;
      }
      expect *= dims[i].second;
    }
    out.push_back(a);
  };
  const int64_t unit[3] = {1, 0, 0};
  switch (d.sem) {
  case isa::Semantics::Dma: {
    const DmaOp &o = d.dma;
    int64_t inner[3];
    for (int i = 0; i < 3; ++i)
      inner[i] = std::max<int64_t>(0, o.n[i] - o.padLo[i] - o.padHi[i]);
    add(o.src.level, o.src.addr, o.src.elemBytes, inner, o.src.stride, false, "source");
    add(o.dst.level, o.dst.addr, o.dst.elemBytes, o.n, o.dst.stride, true, "destination");
    break;
  }
  case isa::Semantics::Matmul: {
    const MatmulOp &o = d.mm;
    const isa::TensorUnit &tu = t_.tensor;
    int ob = isa::elemBytes(tu.operandType), cb = isa::elemBytes(tu.accType);
    int64_t na[3] = {o.m * o.k, 1, 1}, nb[3] = {o.k * o.n, 1, 1}, nc[3] = {o.m * o.n, 1, 1};
    add(tu.aLevel, o.aAddr, ob, na, unit, false, "operand A");
    add(tu.bLevel, o.bAddr, ob, nb, unit, false, "operand B");
    // C is read too when accumulating, but the write conflicts with everything the read does.
    add(tu.accLevel, o.cAddr, cb, nc, unit, true, "accumulator C");
    break;
  }
  case isa::Semantics::Vector: {
    const VectorOp &o = d.vec;
    add(o.src1.level, o.src1.addr, o.src1.elemBytes, o.n, o.src1.stride, false, "src1");
    if (isa::vecOpReadsSrc2(o.op))
      add(o.src2.level, o.src2.addr, o.src2.elemBytes, o.n, o.src2.stride, false, "src2");
    // An accumulating op (mac) reads its destination first: a race with an unordered writer of
    // those bytes is a RAW on the old values, not only a WAW.
    if (isa::vecOpReadsDst(o.op))
      add(o.dst.level, o.dst.addr, o.dst.elemBytes, o.n, o.dst.stride, false, "dst");
    add(o.dst.level, o.dst.addr, o.dst.elemBytes, o.n, o.dst.stride, true, "dst");
    break;
  }
  case isa::Semantics::Finish:
    break;
  }
}

std::string HazardChecker::alignment(const Decoded &d, const std::vector<Access> &acc) const {
  for (const Access &a : acc)
    if (a.addr % a.eb != 0)
      return fmt::format("hazard: misaligned access: {} {} address {:#x} in level '{}' is not a "
                         "multiple of its element size {}\n  {}",
                         instrName(p_, d.index), a.what, a.addr, levelName(t_, a.level), a.eb,
                         instrText(t_, p_, d.index));
  return {};
}

bool HazardChecker::happensBefore(int engine, uint32_t seq, int e) const {
  return engine == e || clock_[static_cast<size_t>(e)][static_cast<size_t>(engine)] >= seq;
}

std::vector<HazardChecker::Entry>::iterator HazardChecker::searchFrom(LevelState &lv, int64_t lo) {
  return std::lower_bound(lv.byLo.begin(), lv.byLo.end(), lo - lv.maxLen,
                          [](const Entry &x, int64_t v) { return x.lo < v; });
}

void HazardChecker::insert(LevelState &lv, const Record &r) {
  uint32_t slot;
  if (!freeSlots_.empty()) {
    slot = freeSlots_.back();
    freeSlots_.pop_back();
    pool_[slot] = r;
  } else {
    slot = static_cast<uint32_t>(pool_.size());
    pool_.push_back(r);
  }
  // After the entries with the same lo: they keep their order of insertion.
  auto at = std::upper_bound(lv.byLo.begin(), lv.byLo.end(), r.a.lo,
                             [](int64_t v, const Entry &x) { return v < x.lo; });
  lv.byLo.insert(at, Entry{r.a.lo, r.a.hi, r.seq, slot, r.engine, r.a.write});
  ++records_;
}

void HazardChecker::prune() {
  for (LevelState &lv : levels_)
    std::erase_if(lv.byLo, [&](const Entry &x) {
      bool seenByAll = true;
      for (size_t g = 0; g < E_ && seenByAll; ++g)
        seenByAll = int(g) == x.engine || clock_[g][static_cast<size_t>(x.engine)] >= x.seq;
      if (seenByAll) {
        freeSlots_.push_back(x.slot);
        --records_;
      }
      return seenByAll;
    });
  pruneAt_ = std::max<int64_t>(kMinPruneAt, 2 * records_);
}

std::string HazardChecker::check(const Decoded &d, int e) {
  const size_t ue = static_cast<size_t>(e);
  std::vector<uint32_t> &clk = clock_[ue];
  for (size_t q = 0; q < E_; ++q)
    if (d.pop >> q & 1) {
      TokenClocks &f = fifo_[q * E_ + ue];
      NPUC_ASSERT(f.head < f.clocks.size(), "the scheduler pops only pushed tokens");
      for (size_t g = 0; g < E_; ++g)
        clk[g] = std::max(clk[g], f.clocks[f.head + g]);
      f.head += E_;
      // Popped clocks are never read again: drop them once they are most of the storage.
      if (f.head == f.clocks.size() || f.head >= 1024 * E_) {
        f.clocks.erase(f.clocks.begin(), f.clocks.begin() + std::ptrdiff_t(f.head));
        f.head = 0;
      }
    }
  const uint32_t seq = ++clk[ue];
  for (size_t q = 0; q < E_; ++q)
    if (d.push >> q & 1) {
      std::vector<uint32_t> &c = fifo_[ue * E_ + q].clocks;
      c.insert(c.end(), clk.begin(), clk.end());
    }

  std::vector<Access> &acc = acc_;
  acc.clear();
  accesses(d, acc);
  if (std::string err = alignment(d, acc); !err.empty())
    return err;

  for (const Access &a : acc) {
    LevelState &lv = levels_[static_cast<size_t>(a.level)];
    for (auto it = searchFrom(lv, a.lo); it != lv.byLo.end() && it->lo < a.hi; ++it) {
      if (it->hi <= a.lo || (!it->write && !a.write) || happensBefore(it->engine, it->seq, e))
        continue;
      const Record &r = pool_[it->slot];
      if (!stridedOverlap(r.a.addr, r.a.eb, r.a.n, r.a.stride, a.addr, a.eb, a.n, a.stride))
        continue;
      // Name the race by program order: the earlier instruction is what the author intended
      // to happen first.
      bool recFirst = r.index < d.index;
      const Access &first = recFirst ? r.a : a, &second = recFirst ? a : r.a;
      const char *kind = first.write && second.write ? "WAW (write-after-write)"
                         : first.write               ? "RAW (read-after-write)"
                                                     : "WAR (write-after-read)";
      int64_t fi = recFirst ? r.index : d.index, si = recFirst ? d.index : r.index;
      int fe = recFirst ? r.engine : e, se = recFirst ? e : r.engine;
      return fmt::format(
          "hazard: {} race on level '{}' bytes [{:#x}, {:#x}): {} on engine '{}' {} its {} and "
          "{} on engine '{}' {} its {}, and no token orders them\n  {}\n  {}",
          kind, levelName(t_, a.level), std::max(a.lo, r.a.lo), std::min(a.hi, r.a.hi),
          instrName(p_, fi), t_.engines[size_t(fe)].name, first.write ? "writes" : "reads",
          first.what, instrName(p_, si), t_.engines[size_t(se)].name,
          second.write ? "writes" : "reads", second.what, instrText(t_, p_, fi),
          instrText(t_, p_, si));
    }
  }

  for (const Access &a : acc) {
    LevelState &lv = levels_[static_cast<size_t>(a.level)];
    // Drop the records this access makes redundant (file comment), keeping the others in order.
    auto from = searchFrom(lv, a.lo), to = from;
    while (to != lv.byLo.end() && to->lo < a.hi)
      ++to;
    auto kept = std::remove_if(from, to, [&](const Entry &x) {
      if (a.lo > x.lo || x.hi > a.hi || (!a.write && x.write) || !happensBefore(x.engine, x.seq, e))
        return false;
      const Access &ra = pool_[x.slot].a;
      bool sameShape = ra.addr == a.addr && ra.eb == a.eb && std::equal(ra.n, ra.n + 3, a.n) &&
                       std::equal(ra.stride, ra.stride + 3, a.stride);
      if (!a.dense && !sameShape)
        return false;
      freeSlots_.push_back(x.slot);
      --records_;
      return true;
    });
    lv.byLo.erase(kept, to);
    lv.maxLen = std::max(lv.maxLen, a.hi - a.lo);
    insert(lv, Record{a, e, seq, d.index});
  }
  if (records_ > pruneAt_)
    prune();
  return {};
}

} // namespace npuc::sim
