// RtlCore.h - the Verilator harness of the RTL NPU core (simulator/rtl/hdl/npu_core.sv) and the
// co-simulation of the RTL against the cycle-approximate simulator.
//
// The verilated core is built for one target (configs/npu-rtl.yaml by default; the build
// generates the Verilog parameter header from it), so every entry point first checks that the
// given Target is that one. runRtl() backdoor-loads the program into the instruction memory and
// the on-chip levels of `mem` into the scratchpads, implements DRAM behind the core's memory port
// on `mem`'s DRAM image, clocks the core until every engine has drained (or deadlock / a cycle
// limit), and copies the scratchpads back. cosim() runs the simulator and the RTL on copies of the
// same image and compares every byte of every level and the cycle counts.
#pragma once

#include "isa/Program.h"
#include "isa/Target.h"
#include "simulator/Simulator.h"

#include <cstdint>
#include <string>
#include <vector>

namespace npuc::rtl {

/// Name of the target the RTL was generated for, and whether `t` is exactly it (same YAML text).
const char *builtTargetName();
bool matchesBuiltTarget(const isa::Target &t);
/// Throws npuc::Error naming `t.path` when `t` is not the target the RTL was built for.
void checkTarget(const isa::Target &t);

/// A fault in the harness's DRAM model: every read of byte `addr` by the core returns the stored
/// byte XOR `mask`. Bring-up engineers use it to check that a co-simulation catches and locates a
/// divergence (a stuck or flaky DRAM bit); the stored image itself is left unchanged.
struct DramFault {
  int64_t addr = 0;
  uint8_t mask = 0;
};

struct RtlOptions {
  std::string wave;              // write a VCD waveform here when non-empty
  int64_t maxCycles = 0;         // 0: no limit; otherwise fail after this many cycles
  std::vector<DramFault> faults; // injected into the RTL's DRAM reads only
  /// 0: the harness DRAM accepts every memory-port beat. N >= 2: it deasserts mem_req_ready at
  /// every N-th edge, to exercise the handshake (data must not change; cycles may only grow).
  int readyStallPeriod = 0;
};

struct RtlStats {
  int64_t totalCycles = 0;
  int64_t macs = 0;
  int64_t dramBytesRead = 0, dramBytesWritten = 0;
  std::vector<sim::EngineStats> engines; // the core's per-engine counters
  std::vector<sim::TraceEvent> trace;    // one event per retired instruction, in retire order
  double seconds = 0;      // wall time of runRtl: model construction, loads, run, read-back
  double setupSeconds = 0; // model construction, backdoor loads and reset
  double runSeconds = 0;   // the clocked run alone (reset released to done)
};

/// Runs `p` on the verilated core against `mem` (updated in place). Throws npuc::Error for a
/// program the simulator's decoder rejects, a target mismatch, a deadlock (naming every engine's
/// waiting instruction) or when maxCycles is exceeded.
RtlStats runRtl(const isa::Target &t, const isa::Program &p, sim::Memory &mem,
                const RtlOptions &opt = {});

/// A byte range to compare after a co-simulation (an output region).
struct Region {
  std::string name;
  int level = 0;
  int64_t addr = 0, bytes = 0;
};

struct CosimResult {
  sim::SimStats sim;
  RtlStats rtl;
  double simSeconds = 0;       // functional simulation with tracing and hazard checks
  double simTimingSeconds = 0; // the same program --timing-only (no data, no checks)
  double simDecodeSeconds = 0; // decoding the program alone: setup that both runs above include
  bool dataMatch = true;
  std::string dataDivergence;  // first differing byte: region, address, instruction, values
  bool cyclesMatch = true;     // total and every instruction's start/end identical
  std::string cycleDivergence; // first instruction whose start or end differs
  double cycleError() const;   // |rtl - sim| / sim total cycles
  std::string summary(const isa::Target &t) const;
};

/// Co-simulates `p` from the initial image `init`. When `regions` is empty every byte of every
/// level is compared; otherwise only the regions (the first divergence is still reported against
/// the instruction that last wrote the address).
CosimResult cosim(const isa::Target &t, const isa::Program &p, const sim::Memory &init,
                  const std::vector<Region> &regions = {}, const RtlOptions &opt = {});

} // namespace npuc::rtl
