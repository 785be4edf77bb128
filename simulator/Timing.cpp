// Timing.cpp - DRAM channel and bank-conflict models, and the per-instruction cycle formulas.
//
// The formulas are deliberately simple and public (dmaCycles/matmulCycles/vectorCycles) so the
// compiler's cost model and the simulator agree on the uncontended cost of every instruction;
// contention (DRAM queueing, bank stalls) is what only the simulator sees.
#include "simulator/Timing.h"

#include "simulator/Simulator.h"
#include "support/Error.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

namespace npuc::sim {

namespace {
int64_t ceilDiv(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}
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

int64_t vectorCycles(const isa::Target &t, const isa::InstrDesc &d, int64_t elements) {
  NPUC_ASSERT(t.vector.lanes > 0, "the target loader rejects a vector unit without lanes");
  return d.timing.latency + ceilDiv(elements, t.vector.lanes) + perElementCycles(d, elements);
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

int64_t floorMod(int64_t a, int64_t m) {
  int64_t r = a % m;
  return r < 0 ? r + m : r;
}
int64_t floorDiv(int64_t a, int64_t m) {
  return (a - floorMod(a, m)) / m;
}

/// Adds the bank words of a strided operand over an n[0..2] box to `words`. Rows (fixed i1, i2)
/// whose start has the same offset modulo one bank period (banks * width) touch the same banks in
/// the same way, so each distinct offset is walked once and weighted by how many rows share it.
void addWords(const Operand &o, const int64_t *n, int64_t width, std::vector<int64_t> &words) {
  if (n[0] * n[1] * n[2] == 0)
    return;
  const int64_t banks = static_cast<int64_t>(words.size()), period = banks * width;
  const int64_t eb = o.elemBytes;
  std::vector<std::pair<int64_t, int64_t>> rows; // (offset in period, rows), sorted by offset
  for (int64_t i2 = 0; i2 < n[2]; ++i2)
    for (int64_t i1 = 0; i1 < n[1]; ++i1) {
      int64_t off = floorMod(o.addr + eb * (i1 * o.stride[1] + i2 * o.stride[2]), period);
      auto it = std::lower_bound(rows.begin(), rows.end(), std::make_pair(off, int64_t(0)));
      if (it != rows.end() && it->first == off)
        ++it->second;
      else
        rows.insert(it, {off, 1});
    }
  for (auto [off, mult] : rows) {
    if (o.stride[0] == 1 || n[0] == 1) {
      // One contiguous run: every word from the first byte's to the last byte's.
      int64_t first = off / width, count = (off + n[0] * eb - 1) / width - first + 1;
      for (int64_t b = 0; b < banks; ++b)
        words[static_cast<size_t>(b)] += mult * (count / banks);
      for (int64_t j = 0; j < count % banks; ++j)
        words[static_cast<size_t>((first + j) % banks)] += mult;
      continue;
    }
    int64_t prev = std::numeric_limits<int64_t>::min();
    for (int64_t i0 = 0; i0 < n[0]; ++i0) {
      int64_t a = off + eb * i0 * o.stride[0];
      for (int64_t w : {floorDiv(a, width), floorDiv(a + eb - 1, width)}) {
        if (w == prev)
          continue;
        words[static_cast<size_t>(floorMod(w, banks))] += mult;
        prev = w;
      }
    }
  }
}

} // namespace

std::vector<BankAccess> bankAccesses(const isa::Target &t, const Decoded &d) {
  std::vector<BankAccess> out;
  auto add = [&](const Operand &o, const int64_t *n) {
    const isa::MemoryLevel *lv = nullptr;
    for (const isa::MemoryLevel &l : t.levels)
      if (l.index == o.level)
        lv = &l;
    if (!lv || lv->isDram || lv->banks < 2)
      return;
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const BankAccess &a) { return a.level == o.level; });
    if (it == out.end()) {
      out.push_back({o.level, std::vector<int64_t>(static_cast<size_t>(lv->banks), 0), 0});
      it = out.end() - 1;
    }
    addWords(o, n, std::max(1, lv->bankWidth), it->words);
  };
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
    auto contiguous = [&](int level, int64_t addr, int64_t elems, isa::ElemType type) {
      Operand o;
      o.level = level;
      o.addr = addr;
      o.elemBytes = isa::elemBytes(type);
      o.stride[0] = 1;
      int64_t n[3] = {elems, 1, 1};
      add(o, n);
    };
    const isa::TensorUnit &tu = t.tensor;
    contiguous(tu.aLevel, m.aAddr, m.m * m.k, tu.operandType);
    contiguous(tu.bLevel, m.bAddr, m.k * m.n, tu.operandType);
    contiguous(tu.accLevel, m.cAddr, m.m * m.n, tu.accType);
    if (m.accumulate)
      contiguous(tu.accLevel, m.cAddr, m.m * m.n, tu.accType);
    break;
  }
  case isa::Semantics::Vector:
    add(d.vec.src1, d.vec.n);
    if (vecOpReadsSrc2(d.vec.op))
      add(d.vec.src2, d.vec.n);
    if (vecOpReadsDst(d.vec.op)) // read-modify-write: the destination's words are read too
      add(d.vec.dst, d.vec.n);
    add(d.vec.dst, d.vec.n);
    break;
  case isa::Semantics::Finish:
    break;
  }
  for (BankAccess &a : out)
    for (int64_t w : a.words)
      a.total += w;
  std::erase_if(out, [](const BankAccess &a) { return a.total == 0; });
  return out;
}

BankModel::BankModel(const isa::Target &t) : t_(t) {
  int maxIndex = 0;
  for (const isa::MemoryLevel &l : t.levels)
    maxIndex = std::max(maxIndex, l.index);
  levels_.resize(static_cast<size_t>(maxIndex + 1));
  for (const isa::MemoryLevel &l : t.levels)
    levels_[static_cast<size_t>(l.index)].ports = std::max(1, l.ports);
}

int64_t BankModel::stall(const Decoded &d, int engine, int64_t start, int64_t end,
                         std::vector<int64_t> *perLevel) {
  std::vector<BankAccess> accesses = bankAccesses(t_, d);
  if (accesses.empty())
    return 0;
  int64_t total = 0;
  for (const BankAccess &a : accesses) {
    Level &lv = levels_[static_cast<size_t>(a.level)];
    const double ports = lv.ports;
    // Never faster than the busiest bank can serve the instruction's own words.
    int64_t busiest = 0;
    for (int64_t w : a.words)
      busiest = std::max(busiest, (w + lv.ports - 1) / lv.ports);
    const int64_t self = std::max<int64_t>(0, busiest - (end - start));
    const int64_t myEnd = end + self;
    const double len = double(std::max<int64_t>(1, myEnd - start));
    // Entries that ended before this start can never overlap a later instruction again.
    std::erase_if(lv.active, [&](const Active &x) { return x.end <= start; });
    std::vector<int64_t> cuts = {start, myEnd};
    for (const Active &x : lv.active)
      if (x.engine != engine)
        for (int64_t c : {x.start, x.end})
          if (c > start && c < myEnd)
            cuts.push_back(c);
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    double conflict = 0;
    std::vector<double> demand(a.words.size());
    for (size_t c = 0; c + 1 < cuts.size(); ++c) {
      for (size_t b = 0; b < demand.size(); ++b)
        demand[b] = double(a.words[b]) / len;
      bool others = false;
      for (const Active &x : lv.active)
        if (x.engine != engine && x.start <= cuts[c] && x.end >= cuts[c + 1]) {
          others = true;
          for (size_t b = 0; b < demand.size(); ++b)
            demand[b] += x.demand[b];
        }
      if (!others)
        continue;
      double stretch = 0;
      for (size_t b = 0; b < demand.size(); ++b)
        if (a.words[b] > 0 && demand[b] > ports)
          stretch += double(a.words[b]) / double(a.total) * (demand[b] / ports - 1.0);
      conflict += double(cuts[c + 1] - cuts[c]) * stretch;
    }
    // Rounded up, but not for floating-point noise above an exact integer.
    int64_t levelStall = self + static_cast<int64_t>(std::ceil(conflict - 1e-9));
    total += levelStall;
    if (perLevel && levelStall > 0)
      (*perLevel)[static_cast<size_t>(a.level)] += levelStall;
  }
  // The instruction occupies its banks until its stalled end, at the demand that spreads its
  // words over that time.
  for (const BankAccess &a : accesses) {
    Level &lv = levels_[static_cast<size_t>(a.level)];
    Active x{engine, start, end + total, std::vector<double>(a.words.size())};
    for (size_t b = 0; b < a.words.size(); ++b)
      x.demand[b] = double(a.words[b]) / double(std::max<int64_t>(1, end + total - start));
    lv.active.push_back(std::move(x));
  }
  return total;
}

} // namespace npuc::sim
