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

BankModel::BankModel(const isa::Target &t) {
  int maxIndex = 0;
  for (const isa::MemoryLevel &l : t.levels)
    maxIndex = std::max(maxIndex, l.index);
  levels_.resize(static_cast<size_t>(maxIndex + 1));
  for (const isa::MemoryLevel &l : t.levels) {
    Level &v = levels_[static_cast<size_t>(l.index)];
    v.onChip = !l.isDram;
    v.banks = std::max(1, l.banks);
    v.width = std::max(1, l.bankWidth);
    v.ports = std::max(1, l.ports);
  }
}

int64_t BankModel::stall(const Decoded &d, int engine, int64_t start, int64_t end,
                         std::vector<int64_t> *perLevel) {
  int64_t total = 0;
  std::vector<int> seen, added;
  for (const AccessRange &r : d.ranges) {
    Level &lv = levels_[static_cast<size_t>(r.level)];
    if (!lv.onChip || lv.banks < 2 || std::find(seen.begin(), seen.end(), r.level) != seen.end())
      continue;
    seen.push_back(r.level);
    // Union of the banks every range of this instruction touches on this level.
    std::vector<uint64_t> bits(static_cast<size_t>((lv.banks + 63) / 64), 0);
    for (const AccessRange &q : d.ranges) {
      if (q.level != r.level || q.hi <= q.lo)
        continue;
      int64_t first = q.lo / lv.width, last = (q.hi - 1) / lv.width;
      int64_t count = std::min<int64_t>(last - first + 1, lv.banks);
      for (int64_t u = first; u < first + count; ++u) {
        int64_t b = u % lv.banks;
        bits[static_cast<size_t>(b / 64)] |= uint64_t(1) << (b % 64);
      }
    }
    int64_t mine = 0;
    for (uint64_t w : bits)
      mine += std::popcount(w);
    if (mine == 0)
      continue;
    // Entries that ended before this start can never overlap a later instruction again.
    std::erase_if(lv.active, [&](const Active &a) { return a.end <= start; });
    int64_t levelStall = 0;
    for (const Active &a : lv.active) {
      if (a.engine == engine || a.start >= end)
        continue;
      int64_t overlap = std::min(end, a.end) - std::max(start, a.start);
      if (overlap <= 0)
        continue;
      int64_t shared = 0;
      for (size_t w = 0; w < bits.size(); ++w)
        shared += std::popcount(bits[w] & a.banks[w]);
      levelStall += overlap * shared / (mine * lv.ports);
    }
    total += levelStall;
    if (perLevel && levelStall > 0)
      (*perLevel)[static_cast<size_t>(r.level)] += levelStall;
    lv.active.push_back({engine, start, end, std::move(bits)});
    added.push_back(r.level);
  }
  // The instruction occupies its banks until its stalled end (each level got exactly one entry,
  // the last one of its list).
  for (int l : added)
    levels_[static_cast<size_t>(l)].active.back().end = end + total;
  return total;
}

} // namespace npuc::sim
