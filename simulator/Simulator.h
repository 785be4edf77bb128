// Simulator.h - the cycle-approximate, functionally exact NPU simulator.
//
// Contract: run() executes a decoded Program against a Memory image (DRAM plus every on-chip
// level of the Target, byte addressed). Functional results are computed in the hardware's number
// formats (fp16 operands, fp32 accumulation, per the Target). Timing: instructions are
// dispatched in program order to their engine's in-order queue; engines run concurrently; an
// instruction starts when its engine is free and every token it pops has arrived; tokens are
// pushed when an instruction completes. DMA to/from DRAM shares the DRAM bandwidth and pays its
// latency. A program whose engines all wait for tokens that can never arrive is reported as an
// npuc::Error naming each blocked engine and its waiting instruction (never a hang). Accesses
// outside a level's size are errors naming the instruction.
#pragma once

#include "isa/Program.h"
#include "isa/Target.h"
#include "simulator/DramTraffic.h"

#include <array>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

namespace npuc::sim {

/// Byte-addressed storage for every memory level of a target (index = MemoryLevel::index).
/// A sizes-only Memory (sizesOnly) holds no bytes: it serves timing-only runs, which read no
/// data but check every access against the levels' sizes, without allocating (and zeroing) a
/// DRAM image that can be hundreds of MB; a functional run on it is an error.
class Memory {
public:
  explicit Memory(const isa::Target &t, int64_t dramBytes);
  static Memory sizesOnly(const isa::Target &t, int64_t dramBytes);
  std::vector<uint8_t> &level(int index) { return levels_.at(static_cast<size_t>(index)); }
  const std::vector<uint8_t> &level(int index) const {
    return levels_.at(static_cast<size_t>(index));
  }
  std::vector<uint8_t> &dram() { return level(dramIndex_); }
  int dramIndex() const { return dramIndex_; }
  /// The size of level `index` in bytes: its image's (callers may resize dram()), or the
  /// sizes-only size.
  int64_t size(int index) const {
    return sizesOnly_ ? sizes_.at(static_cast<size_t>(index))
                      : static_cast<int64_t>(level(index).size());
  }
  bool hasData() const { return !sizesOnly_; }
  /// Grows (never shrinks) a sizes-only Memory's DRAM; other Memories resize dram() instead.
  void growDram(int64_t bytes);

private:
  Memory() = default;
  void layout(const isa::Target &t, int64_t dramBytes, bool allocate);
  std::vector<std::vector<uint8_t>> levels_;
  std::vector<int64_t> sizes_;
  int dramIndex_ = 0;
  bool sizesOnly_ = false;
};

/// One executed instruction, for traces.
struct TraceEvent {
  int engine = 0;
  int64_t index = 0; // program index
  int64_t start = 0, end = 0;
  std::string mnemonic;
  int64_t bankStall = 0; // bank-conflict stall cycles included in [start, end)
};

struct EngineStats {
  std::string name;
  int64_t busyCycles = 0; // sum of instruction durations (bank stalls included)
  int64_t instructions = 0;
  /// Cycles the engine had a dispatched head instruction that could not start because a token
  /// it pops (or room in a token queue it pushes to) had not arrived: time lost to ordering.
  int64_t tokenWaitCycles = 0;
  /// totalCycles - busyCycles - tokenWaitCycles: nothing to do (queue empty or not dispatched).
  int64_t idleCycles = 0;
  int64_t bankConflictStallCycles = 0; // part of busyCycles
  /// Critical path composition: cycles of the run's critical path spent in this engine's
  /// instructions (the path walks back from the last instruction through whatever made each
  /// instruction start when it did: its engine's previous instruction, or a token's producer).
  int64_t criticalPathCycles = 0;
};

/// Per memory level (index = MemoryLevel::index).
struct LevelStats {
  std::string name;
  int64_t bankConflictStallCycles = 0; // stalls of instructions conflicting on this level's banks
  /// Bytes the instructions read from and wrote to the level (the energy model's SRAM and DRAM
  /// actions; simulator/Energy.h says what each instruction counts).
  int64_t bytesRead = 0, bytesWritten = 0;
};

/// One point of a counter track in the trace: from `time` on, `value` is in effect.
struct CounterSample {
  int64_t time = 0;
  double value = 0;
};

struct SimStats {
  int64_t totalCycles = 0;
  int64_t macs = 0; // useful multiply-accumulates on the tensor unit
  /// Elements each vector op computed, by VecOp (the energy model's vector actions).
  std::array<int64_t, std::size(isa::kAllVecOps)> vectorElements{};
  /// vectorElements over every op.
  int64_t totalVectorElements() const {
    return std::accumulate(vectorElements.begin(), vectorElements.end(), int64_t(0));
  }
  int64_t dramBytesRead = 0;
  int64_t dramBytesWritten = 0;
  int64_t bankConflictStallCycles = 0;
  /// DRAM bandwidth utilisation: (dramBytesRead + dramBytesWritten) /
  /// (dram.bytesPerCycle * totalCycles), in [0, 1].
  double dramUtilization = 0;
  /// Cycles on the critical path not spent in any instruction (dispatch waits); with the
  /// engines' criticalPathCycles it sums to totalCycles.
  int64_t criticalPathOtherCycles = 0;
  std::vector<EngineStats> engines; // indexed by engine index
  std::vector<LevelStats> levels;   // indexed by level index
  std::vector<TraceEvent> trace;    // filled when SimOptions::trace
  /// Counter tracks, filled when SimOptions::trace: DRAM bytes/cycle in flight, and per level
  /// the number of instructions touching its banks (`levelActivity[level]`).
  std::vector<CounterSample> dramCounter;
  /// DRAM bytes by class, counted when SimOptions::dramRegions is set (simulator/DramTraffic.h).
  DramTraffic dramByClass;
  std::vector<std::vector<CounterSample>> levelActivity;
};

struct SimOptions {
  bool trace = false;
  /// What the DRAM image holds where: set, the run counts SimStats::dramByClass.
  DramRegions dramRegions;
  /// false: timing only (no data is read or written); the cycle count is exactly the same.
  bool functional = true;
  /// Hazard checking (docs/SIMULATOR.md): races between engines on overlapping bytes with no
  /// token ordering, misaligned accesses. A hazard is an npuc::Error. Off only for speed runs.
  bool check = true;
  /// Functional runs: the most element operations (elements a DMA moves or a vector op computes,
  /// multiply-accumulates of a matmul) the whole program may take, checked before it starts, so
  /// that one instruction over a 65535^3 box is an error instead of hours of work. Over it, run()
  /// throws npuc::Error naming the total and the largest instruction. Timing-only runs cost
  /// nothing per element and are not limited. `npuc sim --max-work` raises it.
  int64_t maxWork = kDefaultMaxWork;
  static constexpr int64_t kDefaultMaxWork = int64_t(1) << 40; // ~1.1e12: above any model's
};

/// Runs `p` to completion. Throws npuc::Error on deadlock, out-of-bounds access or a malformed
/// instruction (naming the program index and mnemonic).
SimStats run(const isa::Target &t, const isa::Program &p, Memory &mem, const SimOptions &opt = {});

/// Uncontended cycle counts of the timing model (docs/SIMULATOR.md), exposed so that a compiler
/// cost model can predict what run() will report. `d` is the instruction's description.
/// DMA: d.timing.latency (+ dram.latency when touching DRAM) + bytes / bandwidth.
int64_t dmaCycles(const isa::Target &t, const isa::InstrDesc &d, int64_t bytes, bool touchesDram);
/// Matmul: d.timing.latency + tensor.fillLatency + m * ceil(k / rows) * ceil(n / cols).
int64_t matmulCycles(const isa::Target &t, const isa::InstrDesc &d, int64_t m, int64_t k,
                     int64_t n);
/// Vector: d.timing.latency + vector_unit.op_latency of `op` + ceil(elements / lanes).
int64_t vectorCycles(const isa::Target &t, const isa::InstrDesc &d, int64_t elements,
                     isa::VecOp op);

/// Writes Chrome trace-event JSON (one track per engine) for `stats.trace`.
std::string traceToJson(const isa::Target &t, const SimStats &stats);

} // namespace npuc::sim
