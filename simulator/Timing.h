// Timing.h - the shared-resource parts of the timing model: DRAM channels and on-chip banks.
//
// Engine ordering, tokens and dispatch live in Simulator.cpp; this file models what engines
// contend for. Both models are fed instructions in non-decreasing start-time order (the
// scheduler guarantees it), so each can keep a simple "busy until" / "recently active" state.
#pragma once

#include "simulator/Decode.h"

#include <cstdint>
#include <vector>

namespace npuc::sim {

/// DRAM: `channels` channels, each serving bytesPerCycle/channels, interleaved by burstBytes.
/// A transfer's bytes are split over the channels its addresses map to; on each channel it is
/// queued behind earlier transfers (first come, first served by start time). The fixed latency is
/// pipelined: it delays the transfer's completion but does not occupy the channel.
class DramModel {
public:
  explicit DramModel(const isa::Target &t);
  /// Returns the cycle at which the data transfer of `d` (a Dma touching DRAM) completes,
  /// excluding latency, given that it is issued at `start`.
  int64_t transfer(const Decoded &d, int64_t start, int dramLevel);

private:
  void addRuns(const Operand &o, const int64_t *n, std::vector<int64_t> &perChannel) const;
  double bytesPerCycle_;
  int channels_;
  int64_t burst_;
  std::vector<int64_t> free_; // per channel: busy until
};

/// On-chip banks: bank(addr) = (addr / bankWidth) % banks. Each instruction touches, per level,
/// the banks covered by the byte ranges of its operands there. When it runs concurrently with an
/// instruction of another engine that touches some of the same banks of the same level, it
/// stalls for overlapCycles * sharedBanks / (itsBanks * ports) cycles (the later-starting
/// instruction pays: it finds the banks busy).
class BankModel {
public:
  explicit BankModel(const isa::Target &t);
  /// Stall cycles for `d` on `engine`, running [start, end) before stalls; then records it as
  /// active until end + stall. When `perLevel` is given, each level's share is added to it.
  int64_t stall(const Decoded &d, int engine, int64_t start, int64_t end,
                std::vector<int64_t> *perLevel = nullptr);

private:
  struct Active {
    int engine;
    int64_t start, end;
    std::vector<uint64_t> banks;
  };
  struct Level {
    bool onChip = false;
    int banks = 1, width = 64, ports = 1;
    std::vector<Active> active;
  };
  std::vector<Level> levels_; // by level index
};

} // namespace npuc::sim
