// SimDigest.cpp - everything the simulator reports on a compiled package, as text, so that two
// builds of the simulator can be compared for exact equivalence (diff the outputs).
//
// Usage: sim_digest PACKAGE.npub [--events]. Each NPU segment runs functional (trace and hazard
// checks on, as `npuc cosim` runs it) and --timing-only --no-check. DRAM holds the package's
// constants and, everywhere else, a fixed pseudo-random fp16 pattern in [-1, 1) (so the data path
// computes on non-zero values). Printed: every SimStats field, a hash of the trace events and
// counter tracks (each event with --events), and an FNV-1a hash of every memory level after the
// functional run. The timing-only run must report the same stats; the tool fails otherwise.
#include "simulator/Simulator.h"
#include "support/Error.h"
#include "tools/driver/Package.h"

#include <cstdio>
#include <cstring>
#include <string>

using namespace npuc;

namespace {

struct Hash {
  uint64_t h = 1469598103934665603ull;
  void bytes(const void *p, size_t n) {
    const auto *b = static_cast<const uint8_t *>(p);
    for (size_t i = 0; i < n; ++i)
      h = (h ^ b[i]) * 1099511628211ull;
  }
  void i64(int64_t v) { bytes(&v, sizeof v); }
  void f64(double v) { bytes(&v, sizeof v); }
  void str(const std::string &s) { bytes(s.data(), s.size()), i64(int64_t(s.size())); }
};

std::string statsText(const sim::SimStats &s, bool events) {
  std::string out =
      fmt::format("total {} macs {} dramR {} dramW {} bank {} util {:.17g} cpOther {}\n",
                  s.totalCycles, s.macs, s.dramBytesRead, s.dramBytesWritten,
                  s.bankConflictStallCycles, s.dramUtilization, s.criticalPathOtherCycles);
  for (const sim::EngineStats &e : s.engines)
    out += fmt::format("  engine {} busy {} ins {} wait {} idle {} bank {} cp {}\n", e.name,
                       e.busyCycles, e.instructions, e.tokenWaitCycles, e.idleCycles,
                       e.bankConflictStallCycles, e.criticalPathCycles);
  for (const sim::LevelStats &l : s.levels)
    out += fmt::format("  level {} bank {}\n", l.name, l.bankConflictStallCycles);
  Hash th;
  for (const sim::TraceEvent &e : s.trace) {
    th.i64(e.engine), th.i64(e.index), th.i64(e.start), th.i64(e.end), th.str(e.mnemonic),
        th.i64(e.bankStall);
    if (events)
      out += fmt::format("  ev {} {} {} {} {} {}\n", e.engine, e.index, e.start, e.end, e.mnemonic,
                         e.bankStall);
  }
  Hash ch;
  for (const sim::CounterSample &c : s.dramCounter)
    ch.i64(c.time), ch.f64(c.value);
  for (const auto &track : s.levelActivity) {
    ch.i64(int64_t(track.size()));
    for (const sim::CounterSample &c : track)
      ch.i64(c.time), ch.f64(c.value);
  }
  out += fmt::format("  trace {} events hash {:016x}; counters {} dram samples hash {:016x}\n",
                     s.trace.size(), th.h, s.dramCounter.size(), ch.h);
  return out;
}

void fill(sim::Memory &mem, const npu::Segment &seg) {
  std::vector<uint8_t> &d = mem.dram();
  uint32_t x = 12345;
  for (size_t i = 0; i + 1 < d.size(); i += 2) {
    x = x * 1664525u + 1013904223u;
    // fp16 with exponent 14 or below: magnitude < 1, sign and mantissa random.
    uint16_t h = static_cast<uint16_t>(((x >> 16) & 0x83ff) | (((x >> 8) % 15) << 10));
    std::memcpy(&d[i], &h, 2);
  }
  std::copy(seg.constImage.begin(), seg.constImage.end(), d.begin() + seg.constBase);
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: sim_digest PACKAGE.npub [--events]\n");
    return 2;
  }
  bool events = argc > 2 && std::string(argv[2]) == "--events";
  try {
    driver::CompiledModel m = driver::loadPackage(argv[1]);
    for (size_t i = 0; i < m.npuSegments.size(); ++i) {
      const npu::Segment &seg = m.npuSegments[i];
      sim::Memory mem(m.target, seg.dramBytes);
      fill(mem, seg);
      sim::Memory timingMem = mem;
      sim::SimOptions o;
      o.trace = true;
      sim::SimStats s = sim::run(m.target, seg.program, mem, o);
      std::string text = statsText(s, events);
      std::printf("segment %zu: %zu instructions\n%s", i, seg.program.instrs.size(), text.c_str());
      for (const isa::MemoryLevel &l : m.target.levels) {
        Hash h;
        const std::vector<uint8_t> &bytes = mem.level(l.index);
        h.bytes(bytes.data(), bytes.size());
        std::printf("  memory %s %zu bytes hash %016llx\n", l.name.c_str(), bytes.size(),
                    static_cast<unsigned long long>(h.h));
      }
      sim::SimOptions to;
      to.functional = false;
      to.check = false;
      to.trace = true;
      sim::SimStats ts = sim::run(m.target, seg.program, timingMem, to);
      if (statsText(ts, events) != text)
        fail("segment {}: --timing-only --no-check reports other stats than functional", i);
    }
  } catch (const Error &e) {
    std::fprintf(stderr, "sim_digest: %s\n", e.what());
    return 1;
  }
  return 0;
}
