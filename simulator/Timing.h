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

/// Bank words one instruction accesses on one banked on-chip level: words[b] counts the
/// bank-width words of bank b (bank(addr) = (addr / bankWidth) % banks) its operands there read
/// or write. A contiguous run touches each word it covers once; an element-strided operand
/// (stride0 != 1) touches one word per element, except that consecutive elements in the same
/// word share its access.
struct BankAccess {
  int level = -1;
  std::vector<int64_t> words; // per bank
  int64_t total = 0;          // sum of words
};

/// The accesses of `d` on every level with at least two banks (a single-bank level is taken as
/// wide enough for its users: the presets size it to the tensor unit's rate). A matmul's
/// accumulating C counts twice (read and write).
std::vector<BankAccess> bankAccesses(const isa::Target &t, const Decoded &d);

/// On-chip banks, port-aware (docs/SIMULATOR.md, "Banks"). Each bank serves `ports` word
/// accesses per cycle. An instruction lasting D cycles (before stalls) with w_b words on bank b
/// asks w_b / D accesses per cycle of it; the instructions running concurrently on other engines
/// add theirs. Over every interval where the summed demand on a bank exceeds its ports, the
/// later-starting instruction progresses at ports / demand on that bank, so it stalls for
///   sum over intervals of len * sum_b (w_b / W) * max(0, demand_b / ports - 1)
/// (W = sum_b w_b). Independently, an instruction can never be faster than its busiest bank:
/// it takes at least max_b ceil(w_b / ports) cycles (a strided access that keeps hitting one
/// bank is slowed). Demands at or below the ports cost nothing.
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
    std::vector<double> demand; // accesses per cycle, per bank
  };
  struct Level {
    int ports = 1;
    std::vector<Active> active;
  };
  const isa::Target &t_;
  std::vector<Level> levels_; // by level index
};

} // namespace npuc::sim
