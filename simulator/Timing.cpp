// Timing.cpp - DRAM channel and bank-conflict models, and the per-instruction cycle formulas.
//
// The formulas are deliberately simple and public (dmaCycles/matmulCycles/vectorCycles) so the
// compiler's cost model and the simulator agree on the uncontended cost of every instruction;
// contention (DRAM queueing, bank stalls) is what only the simulator sees.
#include "simulator/Timing.h"

#include "simulator/Simulator.h"
#include "support/Error.h"
#include "support/IntMath.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <numeric>

namespace npuc::sim {

namespace {
int64_t cyclesFor(double amount, double perCycle) {
  return static_cast<int64_t>(std::ceil(amount / perCycle));
}
int64_t perElementCycles(const isa::InstrDesc &d, int64_t elements) {
  return d.timing.perElement > 0 ? cyclesFor(double(elements) * d.timing.perElement, 1.0) : 0;
}
} // namespace

int64_t dmaCycles(const isa::Target &t, const isa::InstrDesc &d, int64_t bytes, bool touchesDram) {
  int64_t lat = d.timing.latency;
  const isa::Engine &e = t.engines.at(static_cast<size_t>(d.engine));
  if (touchesDram) {
    if (t.dram.bytesPerCycle <= 0)
      fail("target '{}': dram bytes_per_cycle must be positive", t.name);
    double rate = e.bytesPerCycle > 0 ? std::min(e.bytesPerCycle, t.dram.bytesPerCycle)
                                      : t.dram.bytesPerCycle;
    return lat + t.dram.latency + cyclesFor(double(bytes), rate);
  }
  if (e.bytesPerCycle <= 0)
    fail("target '{}': engine '{}' runs DMA instruction '{}' but has no bytes_per_cycle", t.name,
         e.name, d.mnemonic);
  return lat + cyclesFor(double(bytes), e.bytesPerCycle);
}

int64_t matmulCycles(const isa::Target &t, const isa::InstrDesc &d, int64_t m, int64_t k,
                     int64_t n) {
  const isa::TensorUnit &tu = t.tensor;
  NPUC_ASSERT(tu.rows > 0 && tu.cols > 0, "the target loader rejects empty tensor units");
  return d.timing.latency + tu.fillLatency + m * ceilDiv(k, tu.rows) * ceilDiv(n, tu.cols) +
         perElementCycles(d, m * n);
}

int64_t vectorCycles(const isa::Target &t, const isa::InstrDesc &d, int64_t elements,
                     isa::VecOp op) {
  NPUC_ASSERT(t.vector.lanes > 0, "the target loader rejects a vector unit without lanes");
  return d.timing.latency + t.vector.latencyOf(op) + ceilDiv(elements, t.vector.lanes) +
         perElementCycles(d, elements);
}

// ---- DRAM ----

DramModel::DramModel(const isa::Target &t)
    : bytesPerCycle_(t.dram.bytesPerCycle), channels_(std::max(1, t.dram.channels)),
      burst_(std::max(1, t.dram.burstBytes)), free_(static_cast<size_t>(channels_), 0) {
  if (bytesPerCycle_ <= 0)
    fail("target '{}': dram bytes_per_cycle must be positive", t.name);
}

void DramModel::addRuns(const Operand &o, const int64_t *n, std::vector<int64_t> &per) const {
  if (n[0] * n[1] * n[2] == 0)
    return;
  const int64_t eb = o.elemBytes;
  auto run = [&](int64_t a, int64_t len) {
    while (len > 0) {
      int64_t chunk = std::min(len, burst_ - a % burst_);
      per[static_cast<size_t>((a / burst_) % channels_)] += chunk;
      a += chunk;
      len -= chunk;
    }
  };
  for (int64_t i2 = 0; i2 < n[2]; ++i2)
    for (int64_t i1 = 0; i1 < n[1]; ++i1) {
      int64_t row = o.addr + eb * (i1 * o.stride[1] + i2 * o.stride[2]);
      if (o.stride[0] == 1) {
        run(row, n[0] * eb);
      } else {
        for (int64_t i0 = 0; i0 < n[0]; ++i0)
          run(row + eb * i0 * o.stride[0], eb);
      }
    }
}

int64_t DramModel::transfer(const Decoded &d, int64_t start, int dramLevel) {
  std::vector<int64_t> per(static_cast<size_t>(channels_), 0);
  if (channels_ == 1) {
    per[0] = d.dramRead + d.dramWritten;
  } else {
    const DmaOp &o = d.dma;
    int64_t inner[3];
    for (int i = 0; i < 3; ++i)
      inner[i] = std::max<int64_t>(0, o.n[i] - o.padLo[i] - o.padHi[i]);
    if (o.src.level == dramLevel)
      addRuns(o.src, inner, per);
    if (o.dst.level == dramLevel)
      addRuns(o.dst, o.n, per);
  }
  const double channelRate = bytesPerCycle_ / channels_;
  int64_t done = start;
  for (size_t c = 0; c < per.size(); ++c) {
    if (per[c] == 0)
      continue;
    int64_t begin = std::max(start, free_[c]);
    free_[c] = begin + cyclesFor(double(per[c]), channelRate);
    done = std::max(done, free_[c]);
  }
  return done;
}

// ---- banks ----

namespace {

// Bank periods up to this many bytes count rows in a table indexed by offset; longer periods
// (no preset comes close) collect offsets and sort them.
constexpr int64_t kMaxTablePeriod = int64_t(1) << 16;

} // namespace

BankCounter::BankCounter(const isa::Target &t) : tensor_(t.tensor) {
  int maxIndex = 0;
  for (const isa::MemoryLevel &l : t.levels)
    maxIndex = std::max(maxIndex, l.index);
  levels_.resize(static_cast<size_t>(maxIndex + 1));
  int64_t maxPeriod = 0;
  for (const isa::MemoryLevel &l : t.levels) {
    Level &lv = levels_[static_cast<size_t>(l.index)];
    lv = Level{};
    if (l.isDram || l.banks < 2)
      continue; // unbanked: never counted
    const int64_t width = std::max(1, l.bankWidth);
    lv.width = Divisor(width);
    lv.banks = Divisor(l.banks);
    lv.period = Divisor(l.banks * width);
    lv.words.assign(static_cast<size_t>(l.banks), 0);
    maxPeriod = std::max(maxPeriod, lv.period.value());
  }
  rowsAt_.assign(static_cast<size_t>(std::min(maxPeriod, kMaxTablePeriod)), 0);
}

/// Adds the words of `rows` rows starting at offset `off` (in [0, period)) of the bank period.
/// A contiguous run touches every word from its first byte's to its last byte's; an element-
/// strided row touches one word per element, except that consecutive elements in the same word
/// share its access.
void BankCounter::addOffset(Level &lv, const Operand &o, int64_t n0, int64_t off, int64_t rows) {
  const int64_t eb = o.elemBytes;
  if (o.stride[0] == 1 || n0 == 1) {
    int64_t first = lv.width.div(off), count = lv.width.div(off + n0 * eb - 1) - first + 1;
    if (int64_t all = lv.banks.div(count); all > 0)
      for (int64_t &w : lv.words)
        w += rows * all;
    for (int64_t j = 0, rest = lv.banks.mod(count); j < rest; ++j)
      lv.words[static_cast<size_t>(lv.banks.mod(first + j))] += rows;
    return;
  }
  int64_t prev = std::numeric_limits<int64_t>::min();
  for (int64_t i0 = 0; i0 < n0; ++i0) {
    int64_t a = off + eb * i0 * o.stride[0];
    for (int64_t w : {lv.width.div(a), lv.width.div(a + eb - 1)}) {
      if (w == prev)
        continue;
      lv.words[static_cast<size_t>(lv.banks.mod(w))] += rows;
      prev = w;
    }
  }
}

void BankCounter::addRows(Level &lv, const Operand &o, const int64_t *n) {
  const int64_t period = lv.period.value();
  const int64_t eb = o.elemBytes;
  // Row (i1, i2) starts at offset (addr + eb * (i1 * s1 + i2 * s2)) mod period; stepping i1 adds
  // step1, so the offsets along i1 repeat every cycle1 rows.
  const int64_t step1 = lv.period.mod(eb * o.stride[1]);
  const int64_t step2 = lv.period.mod(eb * o.stride[2]);
  const int64_t cycle1 = lv.period.cycle(step1);
  const int64_t distinct1 = std::min(n[1], cycle1);
  const int64_t full = n[1] / cycle1, extra = n[1] % cycle1;
  const bool table = period <= kMaxTablePeriod;
  offsets_.clear();
  int64_t base = lv.period.mod(o.addr);
  for (int64_t i2 = 0; i2 < n[2]; ++i2) {
    int64_t off = base;
    for (int64_t j = 0; j < distinct1; ++j) {
      // Offset j recurs at rows j, j + cycle1, ...: full times, once more for the first extra.
      int64_t rows = n[1] <= cycle1 ? 1 : full + (j < extra ? 1 : 0);
      if (table) {
        int64_t &at = rowsAt_[static_cast<size_t>(off)];
        if (at == 0)
          offsets_.push_back(off);
        at += rows;
      } else {
        for (int64_t r = 0; r < rows; ++r)
          offsets_.push_back(off);
      }
      off += step1;
      if (off >= period)
        off -= period;
    }
    base += step2;
    if (base >= period)
      base -= period;
  }
  if (table) {
    for (int64_t off : offsets_) {
      addOffset(lv, o, n[0], off, rowsAt_[static_cast<size_t>(off)]);
      rowsAt_[static_cast<size_t>(off)] = 0;
    }
    return;
  }
  std::sort(offsets_.begin(), offsets_.end());
  for (size_t i = 0; i < offsets_.size();) {
    size_t j = i;
    while (j < offsets_.size() && offsets_[j] == offsets_[i])
      ++j;
    addOffset(lv, o, n[0], offsets_[i], static_cast<int64_t>(j - i));
    i = j;
  }
}

void BankCounter::add(const Operand &o, const int64_t *n) {
  if (o.level < 0 || static_cast<size_t>(o.level) >= levels_.size())
    return;
  Level &lv = levels_[static_cast<size_t>(o.level)];
  if (lv.words.empty())
    return;
  if (!lv.used) {
    lv.used = true;
    std::fill(lv.words.begin(), lv.words.end(), 0);
    order_.push_back(o.level);
  }
  if (n[0] * n[1] * n[2] == 0)
    return;
  // Everything addRows reads, reduced modulo the bank period where only that matters.
  const int64_t eb = o.elemBytes;
  const Shape key{{o.level, eb, lv.period.mod(o.addr), o.stride[0], n[0], n[1],
                   lv.period.mod(eb * o.stride[1]), n[2], lv.period.mod(eb * o.stride[2])}};
  if (auto it = memo_.find(key); it != memo_.end()) {
    for (size_t b = 0; b < lv.words.size(); ++b)
      lv.words[b] += memoWords_[it->second + b];
    return;
  }
  if (memo_.size() >= kMaxShapes) {
    addRows(lv, o, n);
    return;
  }
  // Count into the level's words and remember the difference this operand made.
  const size_t at = memoWords_.size();
  memoWords_.insert(memoWords_.end(), lv.words.begin(), lv.words.end());
  addRows(lv, o, n);
  for (size_t b = 0; b < lv.words.size(); ++b)
    memoWords_[at + b] = lv.words[b] - memoWords_[at + b];
  memo_.emplace(key, at);
}

size_t BankCounter::ShapeHash::operator()(const Shape &s) const {
  uint64_t h = 0x9e3779b97f4a7c15ull;
  for (int64_t v : s.v)
    h = (h ^ static_cast<uint64_t>(v)) * 0xff51afd7ed558ccdull;
  return static_cast<size_t>(h ^ (h >> 32));
}

void BankCounter::count(const Decoded &d) {
  for (int l : order_)
    levels_[static_cast<size_t>(l)].used = false;
  order_.clear();
  switch (d.sem) {
  case isa::Semantics::Dma: {
    int64_t inner[3];
    for (int i = 0; i < 3; ++i)
      inner[i] = std::max<int64_t>(0, d.dma.n[i] - d.dma.padLo[i] - d.dma.padHi[i]);
    add(d.dma.src, inner);
    add(d.dma.dst, d.dma.n);
    break;
  }
  case isa::Semantics::Matmul: {
    const MatmulOp &m = d.mm;
    const isa::TensorUnit &tu = tensor_;
    auto contiguous = [&](int level, int64_t addr, int64_t elems, isa::ElemType type) {
      Operand o;
      o.level = level;
      o.addr = addr;
      o.elemBytes = isa::elemBytes(type);
      o.stride[0] = 1;
      int64_t n[3] = {elems, 1, 1};
      add(o, n);
    };
    contiguous(tu.aLevel, m.aAddr, m.m * m.k, tu.operandType);
    contiguous(tu.bLevel, m.bAddr, m.k * m.n, tu.operandType);
    contiguous(tu.accLevel, m.cAddr, m.m * m.n, tu.accType);
    if (m.accumulate)
      contiguous(tu.accLevel, m.cAddr, m.m * m.n, tu.accType);
    break;
  }
  case isa::Semantics::Vector:
    add(d.vec.src1, d.vec.n);
    if (isa::vecOpReadsSrc2(d.vec.op))
      add(d.vec.src2, d.vec.n);
    if (isa::vecOpReadsDst(d.vec.op)) // read-modify-write: the destination's words are read too
      add(d.vec.dst, d.vec.n);
    add(d.vec.dst, d.vec.n);
    break;
  case isa::Semantics::Finish:
    break;
  }
  touched_.clear();
  for (int l : order_) {
    Level &lv = levels_[static_cast<size_t>(l)];
    lv.total = 0;
    for (int64_t w : lv.words)
      lv.total += w;
    if (lv.total != 0)
      touched_.push_back(l);
  }
}

std::vector<BankAccess> bankAccesses(const isa::Target &t, const Decoded &d) {
  BankCounter c(t);
  c.count(d);
  std::vector<BankAccess> out;
  for (int l : c.levels())
    out.push_back({l, c.words(l), c.total(l)});
  return out;
}

BankModel::BankModel(const isa::Target &t) : counter_(t) {
  int maxIndex = 0;
  for (const isa::MemoryLevel &l : t.levels)
    maxIndex = std::max(maxIndex, l.index);
  levels_.resize(static_cast<size_t>(maxIndex + 1));
  for (const isa::MemoryLevel &l : t.levels) {
    levels_[static_cast<size_t>(l.index)].ports = std::max(1, l.ports);
    levels_[static_cast<size_t>(l.index)].banks = static_cast<size_t>(std::max(0, l.banks));
  }
}

void BankModel::Level::retire(int64_t start) {
  size_t w = 0;
  for (size_t r = 0; r < active.size(); ++r) {
    if (active[r].end <= start)
      continue;
    if (w != r) {
      active[w] = active[r];
      std::copy_n(demand.begin() + std::ptrdiff_t(r * banks), banks,
                  demand.begin() + std::ptrdiff_t(w * banks));
    }
    ++w;
  }
  active.resize(w);
  demand.resize(w * banks);
}

int64_t BankModel::stall(const Decoded &d, int engine, int64_t start, int64_t end,
                         std::vector<int64_t> *perLevel) {
  counter_.count(d);
  if (counter_.levels().empty())
    return 0;
  int64_t total = 0;
  for (int level : counter_.levels()) {
    Level &lv = levels_[static_cast<size_t>(level)];
    const std::vector<int64_t> &words = counter_.words(level);
    const int64_t wordsTotal = counter_.total(level);
    const double ports = lv.ports;
    // Never faster than the busiest bank can serve the instruction's own words.
    // (ceil is monotonic: the busiest bank's ceil(words / ports) is that of the most words.)
    const int64_t most = *std::max_element(words.begin(), words.end());
    const int64_t busiest = (most + lv.ports - 1) / lv.ports;
    const int64_t self = std::max<int64_t>(0, busiest - (end - start));
    const int64_t myEnd = end + self;
    const double len = double(std::max<int64_t>(1, myEnd - start));
    // Entries that ended before this start can never overlap a later instruction again.
    lv.retire(start);
    cuts_.assign({start, myEnd});
    for (const Active &x : lv.active)
      if (x.engine != engine)
        for (int64_t c : {x.start, x.end})
          if (c > start && c < myEnd)
            cuts_.push_back(c);
    std::sort(cuts_.begin(), cuts_.end());
    cuts_.erase(std::unique(cuts_.begin(), cuts_.end()), cuts_.end());
    double conflict = 0;
    sum_.resize(words.size());
    for (size_t c = 0; c + 1 < cuts_.size(); ++c) {
      auto overlaps = [&](const Active &x) {
        return x.engine != engine && x.start <= cuts_[c] && x.end >= cuts_[c + 1];
      };
      if (std::none_of(lv.active.begin(), lv.active.end(), overlaps))
        continue; // nobody else on these banks: no stall
      for (size_t b = 0; b < sum_.size(); ++b)
        sum_[b] = double(words[b]) / len;
      for (size_t i = 0; i < lv.active.size(); ++i)
        if (overlaps(lv.active[i]))
          for (size_t b = 0; b < sum_.size(); ++b)
            sum_[b] += lv.demand[i * lv.banks + b];
      double stretch = 0;
      for (size_t b = 0; b < sum_.size(); ++b)
        if (words[b] > 0 && sum_[b] > ports)
          stretch += double(words[b]) / double(wordsTotal) * (sum_[b] / ports - 1.0);
      conflict += double(cuts_[c + 1] - cuts_[c]) * stretch;
    }
    // Rounded up, but not for floating-point noise above an exact integer.
    int64_t levelStall = self + static_cast<int64_t>(std::ceil(conflict - 1e-9));
    total += levelStall;
    if (perLevel && levelStall > 0)
      (*perLevel)[static_cast<size_t>(level)] += levelStall;
  }
  // The instruction occupies its banks until its stalled end, at the demand that spreads its
  // words over that time.
  for (int level : counter_.levels()) {
    Level &lv = levels_[static_cast<size_t>(level)];
    const std::vector<int64_t> &words = counter_.words(level);
    NPUC_ASSERT(words.size() == lv.banks, "the counter and the model agree on the banks");
    lv.active.push_back({engine, start, end + total});
    for (size_t b = 0; b < words.size(); ++b)
      lv.demand.push_back(double(words[b]) / double(std::max<int64_t>(1, end + total - start)));
  }
  return total;
}

} // namespace npuc::sim
