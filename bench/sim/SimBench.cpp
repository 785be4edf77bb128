// SimBench.cpp - simulator speed on a compiled package: every NPU segment run functional and
// --timing-only, each with and without hazard checking, printing wall time, simulated cycles,
// simulated cycles per second and instructions per second.
//
// Usage: sim_bench PACKAGE.npub [REPEATS [MODE]] (MODE 0-4 runs only that row of the table, for
// profiling one mode with perf). The last row times decoding alone: the per-run setup (field
// maps to decoded instructions, validation) that every mode's wall time includes. DRAM holds the
// package's constants and zero inputs (values do not change timing or the amount of work). The
// cycle counts of the four modes must agree; the benchmark fails loudly if they do not.
#include "simulator/Decode.h"
#include "simulator/Simulator.h"
#include "support/Error.h"
#include "tools/driver/Package.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace npuc;

namespace {

struct Result {
  double seconds = 0;
  int64_t cycles = 0, instructions = 0;
};

Result runAll(const driver::CompiledModel &m, bool functional, bool check) {
  Result r;
  for (const npu::Segment &seg : m.npuSegments) {
    sim::Memory mem(m.target, seg.dramBytes);
    std::copy(seg.constImage.begin(), seg.constImage.end(), mem.dram().begin() + seg.constBase);
    sim::SimOptions o;
    o.functional = functional;
    o.check = check;
    auto t0 = std::chrono::steady_clock::now();
    sim::SimStats s = sim::run(m.target, seg.program, mem, o);
    r.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.cycles += s.totalCycles;
    r.instructions += int64_t(seg.program.instrs.size());
  }
  return r;
}

/// Decoding alone (sim::decodeProgram, the setup every mode starts with and includes).
double decodeAll(const driver::CompiledModel &m) {
  double seconds = 0;
  for (const npu::Segment &seg : m.npuSegments) {
    sim::Memory mem(m.target, seg.dramBytes);
    auto t0 = std::chrono::steady_clock::now();
    std::vector<sim::Decoded> code = sim::decodeProgram(m.target, seg.program, mem);
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  return seconds;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: sim_bench PACKAGE.npub [REPEATS [MODE]]\n");
    return 2;
  }
  int repeats = argc > 2 ? std::atoi(argv[2]) : 3;
  int only = argc > 3 ? std::atoi(argv[3]) : -1;
  try {
    driver::CompiledModel m = driver::loadPackage(argv[1]);
    std::printf("package %s: target %s, %zu NPU segment(s)\n", argv[1], m.target.name.c_str(),
                m.npuSegments.size());
    std::printf("%-28s %12s %14s %16s %14s\n", "mode", "wall_s", "sim_cycles", "cycles_per_s",
                "instr_per_s");
    int64_t cycles = -1;
    struct Mode {
      const char *name;
      bool functional, check;
    } modes[] = {{"functional (checked)", true, true},
                 {"functional --no-check", true, false},
                 {"timing-only (checked)", false, true},
                 {"timing-only --no-check", false, false}};
    for (const Mode &md : modes) {
      if (only >= 0 && &md - modes != only)
        continue;
      Result best;
      for (int i = 0; i < repeats; ++i) {
        Result r = runAll(m, md.functional, md.check);
        if (i == 0 || r.seconds < best.seconds)
          best = r;
      }
      if (cycles >= 0 && best.cycles != cycles)
        fail("{}: {} cycles, but the first mode gave {}", md.name, best.cycles, cycles);
      cycles = best.cycles;
      std::printf("%-28s %12.6f %14lld %16.3e %14.3e\n", md.name, best.seconds,
                  static_cast<long long>(best.cycles), double(best.cycles) / best.seconds,
                  double(best.instructions) / best.seconds);
    }
    if (only < 0 || only == 4) {
      double best = 0;
      int64_t instructions = 0;
      for (const npu::Segment &seg : m.npuSegments)
        instructions += int64_t(seg.program.instrs.size());
      for (int i = 0; i < repeats; ++i) {
        double s = decodeAll(m);
        best = i == 0 ? s : std::min(best, s);
      }
      std::printf("%-28s %12.6f %14s %16s %14.3e\n", "decode (setup, in all four)", best, "-", "-",
                  double(instructions) / best);
    }
  } catch (const Error &e) {
    std::fprintf(stderr, "sim_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
