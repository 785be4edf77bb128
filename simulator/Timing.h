// Timing.h - the shared-resource parts of the timing model: DRAM channels and on-chip banks.
//
// Engine ordering, tokens and dispatch live in Simulator.cpp; this file models what engines
// contend for. Both models are fed instructions in non-decreasing start-time order (the
// scheduler guarantees it), so each can keep a simple "busy until" / "recently active" state.
#pragma once

#include "simulator/Decode.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <numeric>
#include <unordered_map>
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

/// Floor division and modulo by a fixed positive divisor (a bank count, width or period): shifts
/// and masks when it is a power of two, as every preset's is; the bank model divides several
/// times per row, and 64-bit division is slow.
class Divisor {
public:
  Divisor() : Divisor(1) {}
  explicit Divisor(int64_t d)
      : d_(d), shift_(std::has_single_bit(uint64_t(d)) ? std::countr_zero(uint64_t(d)) : -1) {}
  int64_t value() const { return d_; }
  int64_t div(int64_t a) const { return shift_ >= 0 ? a >> shift_ : (a - slowMod(a)) / d_; }
  int64_t mod(int64_t a) const { return shift_ >= 0 ? a & (d_ - 1) : slowMod(a); }
  /// d / gcd(step, d) for 0 <= step < d: how many multiples of step are distinct modulo d.
  int64_t cycle(int64_t step) const {
    if (shift_ >= 0)
      return step == 0 ? 1 : d_ >> std::min(shift_, std::countr_zero(uint64_t(step)));
    return d_ / std::gcd(step, d_); // gcd(0, d) = d
  }

private:
  int64_t slowMod(int64_t a) const {
    int64_t r = a % d_;
    return r < 0 ? r + d_ : r;
  }
  int64_t d_;
  int shift_; // log2(d), or -1 when d is not a power of two
};

/// The accesses of `d` on every level with at least two banks (a single-bank level is taken as
/// wide enough for its users: the presets size it to the tensor unit's rate). A matmul's
/// accumulating C counts twice (read and write).
std::vector<BankAccess> bankAccesses(const isa::Target &t, const Decoded &d);

/// What bankAccesses() computes, into storage reused from one instruction to the next (the bank
/// model asks for every instruction). Rows of an operand whose starts have the same offset
/// modulo one bank period (banks * width) touch the same banks in the same way, so each distinct
/// offset is counted once, weighted by its rows; along a dimension the row offsets repeat every
/// period / gcd(step, period) rows, so only that many are visited per outer row.
class BankCounter {
public:
  explicit BankCounter(const isa::Target &t);
  /// Counts the words of `d`; then levels() lists the banked levels with at least one word, in
  /// the order bankAccesses() lists them.
  void count(const Decoded &d);
  const std::vector<int> &levels() const { return touched_; }
  const std::vector<int64_t> &words(int level) const { return levels_[size_t(level)].words; }
  int64_t total(int level) const { return levels_[size_t(level)].total; }

private:
  struct Level {
    Divisor width, banks, period; // bank width in bytes, bank count, banks * width (bytes)
    std::vector<int64_t> words;   // per bank, for the current instruction; empty: unbanked
    int64_t total = 0;
    bool used = false; // counted for the current instruction
  };
  /// An operand's shape as far as its bank words go: level, element bytes, address modulo the
  /// bank period, stride0, n0, n1, the row step modulo the period, n2, the plane step modulo it.
  /// Programs repeat a few shapes many times, so add() remembers each one's words (up to
  /// kMaxShapes of them) instead of counting them again.
  struct Shape {
    int64_t v[9];
    bool operator==(const Shape &o) const { return std::equal(v, v + 9, o.v); }
  };
  struct ShapeHash {
    size_t operator()(const Shape &s) const;
  };
  static constexpr size_t kMaxShapes = 1 << 14;
  void add(const Operand &o, const int64_t *n);
  void addRows(Level &lv, const Operand &o, const int64_t *n);
  void addOffset(Level &lv, const Operand &o, int64_t n0, int64_t off, int64_t rows);
  const isa::TensorUnit &tensor_;
  std::vector<Level> levels_; // by level index
  std::vector<int> order_;    // levels touched by the current instruction, first touch first
  std::vector<int> touched_;  // order_ without the levels left at zero words
  std::vector<int64_t> rowsAt_, offsets_;             // row count per offset, offsets with rows
  std::unordered_map<Shape, size_t, ShapeHash> memo_; // shape -> its words at memoWords_[i...]
  std::vector<int64_t> memoWords_;
};

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
  };
  struct Level {
    int ports = 1;
    size_t banks = 0;
    std::vector<Active> active;
    std::vector<double> demand; // active[i]'s accesses per cycle per bank at [i * banks, +banks)
    /// Drops the entries that ended at or before `start` (in order).
    void retire(int64_t start);
  };
  std::vector<Level> levels_; // by level index
  BankCounter counter_;
  std::vector<int64_t> cuts_; // scratch: the interval boundaries of one stall() call
  std::vector<double> sum_;   // scratch: summed demand per bank over one interval
};

} // namespace npuc::sim
