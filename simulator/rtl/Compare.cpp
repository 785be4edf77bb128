// Compare.cpp - cosim(): the simulator and the RTL on the same program and image, compared byte
// for byte and cycle for cycle, with the first divergence explained in terms a bring-up engineer
// acts on (which instruction wrote the byte, which instruction started or ended at another cycle).
#include "simulator/Decode.h"
#include "simulator/rtl/RtlCore.h"
#include "support/Error.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>

namespace npuc::rtl {

namespace {

/// Whether element box (n, dst operand) writes byte `a` of `level`.
bool writes(const sim::Operand &o, const int64_t *n, int level, int64_t a) {
  if (o.level != level)
    return false;
  int64_t count = n[0] * n[1] * n[2];
  if (count <= 0 || count > (int64_t(1) << 24))
    return count > 0; // too large to enumerate: conservatively "maybe"
  for (int64_t i2 = 0; i2 < n[2]; ++i2)
    for (int64_t i1 = 0; i1 < n[1]; ++i1)
      for (int64_t i0 = 0; i0 < n[0]; ++i0) {
        int64_t e = o.addr + o.elemBytes * (i0 * o.stride[0] + i1 * o.stride[1] + i2 * o.stride[2]);
        if (a >= e && a < e + o.elemBytes)
          return true;
      }
  return false;
}

/// The last instruction (program order) whose destination covers byte `a` of `level`, or -1.
int64_t lastWriter(const isa::Target &t, const std::vector<sim::Decoded> &code, int level,
                   int64_t a) {
  for (size_t r = code.size(); r-- > 0;) {
    const sim::Decoded &d = code[r];
    switch (d.sem) {
    case isa::Semantics::Dma:
      if (writes(d.dma.dst, d.dma.n, level, a))
        return d.index;
      break;
    case isa::Semantics::Vector:
      if (writes(d.vec.dst, d.vec.n, level, a))
        return d.index;
      break;
    case isa::Semantics::Matmul:
      if (level == t.tensor.accLevel && a >= d.mm.cAddr && a < d.mm.cAddr + 4 * d.mm.m * d.mm.n)
        return d.index;
      break;
    case isa::Semantics::Finish:
      break;
    }
  }
  return -1;
}

std::string hexBytes(const std::vector<uint8_t> &v, int64_t at, int64_t count) {
  std::string s;
  for (int64_t i = at; i < at + count && i < static_cast<int64_t>(v.size()); ++i)
    s += fmt::format("{:02x}", v[static_cast<size_t>(i)]);
  return s;
}

} // namespace

double CosimResult::cycleError() const {
  if (sim.totalCycles == 0)
    return rtl.totalCycles == 0 ? 0.0 : 1.0;
  return std::abs(double(rtl.totalCycles - sim.totalCycles)) / double(sim.totalCycles);
}

std::string CosimResult::summary(const isa::Target &t) const {
  std::string s;
  s += fmt::format("data:   {}\n", dataMatch ? "bit-identical" : "DIVERGED: " + dataDivergence);
  s += fmt::format("cycles: simulator {}  rtl {}  error {:.2f}%{}\n", sim.totalCycles,
                   rtl.totalCycles, 100.0 * cycleError(),
                   cyclesMatch ? "  (every instruction identical)" : "");
  if (!cyclesMatch)
    s += fmt::format("        first cycle divergence: {}\n", cycleDivergence);
  s += fmt::format("  {:<10} {:>12} {:>12} {:>8} {:>8}\n", "engine", "sim busy", "rtl busy",
                   "sim ins", "rtl ins");
  for (size_t e = 0; e < t.engines.size(); ++e)
    s += fmt::format("  {:<10} {:>12} {:>12} {:>8} {:>8}\n", t.engines[e].name,
                     sim.engines[e].busyCycles, rtl.engines[e].busyCycles,
                     sim.engines[e].instructions, rtl.engines[e].instructions);
  auto rate = [&](double seconds) { return seconds > 0 ? double(sim.totalCycles) / seconds : 0.0; };
  auto rtlRate = [&](double seconds) {
    return seconds > 0 ? double(rtl.totalCycles) / seconds : 0.0;
  };
  s += fmt::format("speed:  simulator {:.3g} cycles/s (timing-only {:.3g}), rtl {:.3g} cycles/s "
                   "(clocked run alone {:.3g})\n",
                   rate(simSeconds), rate(simTimingSeconds), rtlRate(rtl.seconds),
                   rtlRate(rtl.runSeconds));
  s += fmt::format("setup:  simulator decode {:.3g} ms of each run (timing-only without it {:.3g} "
                   "cycles/s)\n",
                   1e3 * simDecodeSeconds, rate(simTimingSeconds - simDecodeSeconds));
  return s;
}

CosimResult cosim(const isa::Target &t, const isa::Program &p, const sim::Memory &init,
                  const std::vector<Region> &regionsIn, const RtlOptions &opt) {
  checkTarget(t);
  CosimResult r;
  sim::Memory simMem = init;
  sim::SimOptions so;
  so.trace = true;
  auto t0 = std::chrono::steady_clock::now();
  r.sim = sim::run(t, p, simMem, so);
  r.simSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  {
    // The simulator's fastest mode, for the speed comparison only (same cycles by contract).
    sim::Memory timingMem = init;
    sim::SimOptions to;
    to.functional = false;
    to.check = false;
    auto t1 = std::chrono::steady_clock::now();
    sim::run(t, p, timingMem, to);
    r.simTimingSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
    // The setup part of both runs: decoding and validating the program (sim::run starts so).
    auto t2 = std::chrono::steady_clock::now();
    std::vector<sim::Decoded> code = sim::decodeProgram(t, p, init);
    r.simDecodeSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t2).count();
  }
  sim::Memory rtlMem = init;
  r.rtl = runRtl(t, p, rtlMem, opt);

  // Data: every region (default: every level in full), first differing byte.
  std::vector<Region> regions = regionsIn;
  if (regions.empty())
    for (const isa::MemoryLevel &l : t.levels)
      regions.push_back({l.name, l.index, 0, static_cast<int64_t>(init.level(l.index).size())});
  for (const Region &g : regions) {
    const std::vector<uint8_t> &want = simMem.level(g.level), &got = rtlMem.level(g.level);
    int64_t end = std::min<int64_t>(g.addr + g.bytes, static_cast<int64_t>(want.size()));
    for (int64_t a = g.addr; a < end; ++a) {
      if (want[size_t(a)] == got[size_t(a)])
        continue;
      std::vector<sim::Decoded> code = sim::decodeProgram(t, p, init);
      int64_t w = lastWriter(t, code, g.level, a);
      int64_t word = a & ~int64_t(3);
      r.dataMatch = false;
      r.dataDivergence = fmt::format(
          "region '{}' level '{}' byte 0x{:x}: simulator {:02x} rtl {:02x} (32-bit word at 0x{:x}: "
          "simulator {} rtl {}, little-endian bytes); last written by {}",
          g.name, t.levels[size_t(g.level)].name, a, want[size_t(a)], got[size_t(a)], word,
          hexBytes(want, word, 4), hexBytes(got, word, 4),
          w >= 0 ? sim::instrName(p, w) : std::string("no instruction (initial image)"));
      break;
    }
    if (!r.dataMatch)
      break;
  }

  // Cycles: every instruction's [start, end), in the simulator's start order.
  std::map<int64_t, std::pair<int64_t, int64_t>> rtlAt;
  for (const sim::TraceEvent &e : r.rtl.trace)
    rtlAt[e.index] = {e.start, e.end};
  std::vector<sim::TraceEvent> order = r.sim.trace;
  std::stable_sort(order.begin(), order.end(), [](const auto &a, const auto &b) {
    return a.start != b.start ? a.start < b.start : a.index < b.index;
  });
  r.cyclesMatch = r.sim.totalCycles == r.rtl.totalCycles;
  for (const sim::TraceEvent &e : order) {
    auto it = rtlAt.find(e.index);
    if (it != rtlAt.end() && it->second.first == e.start && it->second.second == e.end)
      continue;
    r.cyclesMatch = false;
    r.cycleDivergence =
        it == rtlAt.end()
            ? fmt::format("{} on engine '{}' never retired in the RTL", sim::instrName(p, e.index),
                          t.engines[size_t(e.engine)].name)
            : fmt::format("{} on engine '{}': simulator [{}, {}) rtl [{}, {})",
                          sim::instrName(p, e.index), t.engines[size_t(e.engine)].name, e.start,
                          e.end, it->second.first, it->second.second);
    break;
  }
  if (!r.cyclesMatch && r.cycleDivergence.empty())
    r.cycleDivergence = "every instruction agrees, but the totals differ";
  return r;
}

} // namespace npuc::rtl
