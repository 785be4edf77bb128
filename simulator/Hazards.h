// Hazards.h - the simulator's hazard checker (SimOptions::check, on by default).
//
// Bring-up engineers need a race reported, not silently computed in whatever order the timing
// model happened to pick. The checker tracks happens-before between instructions with vector
// clocks: an engine is an in-order queue (each instruction is ordered after the previous one of
// its engine), and a token pushed by X and popped by Y orders X before Y. Token and dispatch
// back-pressure are not orderings (they only constrain start times), so they are ignored.
//
// Every instruction's operands are recorded per memory level. Two accesses race when they come
// from different engines, overlap in bytes, at least one writes, and neither happens before the
// other. Candidates are found with operand bounding boxes and then confirmed exactly (the
// strided operands are expanded into byte intervals), so interleaved strided tiles never raise
// false alarms. Misaligned accesses (an operand's base address not a multiple of its element
// size) are reported too. The scheduler calls check() on each instruction in start order and
// turns a non-empty result into an npuc::Error with the engines' states appended.
#pragma once

#include "simulator/Decode.h"

#include <cstdint>
#include <string>
#include <vector>

namespace npuc::sim {

class HazardChecker {
public:
  HazardChecker(const isa::Target &t, const isa::Program &p);

  /// Processes instruction `d` starting on engine `e` (after its pops were taken, in start
  /// order). Returns an empty string, or the hazard's description (without engine states).
  std::string check(const Decoded &d, int e);

private:
  /// One strided access of an instruction: element (i0,i1,i2) at addr + eb*sum(i_d*stride_d).
  struct Access {
    int level = -1;
    int64_t addr = 0;
    int eb = 1;
    int64_t n[3] = {1, 1, 1};
    int64_t stride[3] = {0, 0, 0};
    int64_t lo = 0, hi = 0; // bounding box in bytes
    bool write = false;
    bool dense = false; // touches every byte of [lo, hi)
    const char *what = "";
  };
  struct Record {
    Access a;
    int engine = 0;
    uint32_t seq = 0;  // the instruction's position on its engine, from 1
    int64_t index = 0; // program index
  };
  /// A record's place in its level's search order, with what the search filters on inline (the
  /// Record itself, in pool_, is read only for candidates that pass).
  struct Entry {
    int64_t lo, hi; // the record's bounding box
    uint32_t seq;
    uint32_t slot; // index in pool_
    int engine;
    bool write;
  };
  struct LevelState {
    std::vector<Entry> byLo; // sorted by lo; equal lo in insertion order
    int64_t maxLen = 0;      // longest bounding box ever recorded (bounds the overlap search)
  };

  void accesses(const Decoded &d, std::vector<Access> &out) const;
  std::string alignment(const Decoded &d, const std::vector<Access> &acc) const;
  bool happensBefore(int engine, uint32_t seq, int e) const;
  /// The first entry of `lv` whose record may overlap [lo, hi): lo - maxLen onwards.
  std::vector<Entry>::iterator searchFrom(LevelState &lv, int64_t lo);
  void insert(LevelState &lv, const Record &r);
  void prune();

  const isa::Target &t_;
  const isa::Program &p_;
  size_t E_;
  /// The clocks of the tokens in one (producer, consumer) queue, E values per token, oldest
  /// first; the first `head` values are popped.
  struct TokenClocks {
    std::vector<uint32_t> clocks;
    size_t head = 0;
  };
  /// Records that every engine's clock has passed can never race again; prune() drops them
  /// when the records have doubled since the last prune (and at least this many exist). Dropping
  /// them earlier or later changes nothing but the cost of the overlap searches.
  static constexpr int64_t kMinPruneAt = 256;

  std::vector<std::vector<uint32_t>> clock_; // per engine: vector clock
  std::vector<TokenClocks> fifo_;            // producer*E+consumer
  std::vector<LevelState> levels_;
  std::vector<Record> pool_;        // every live record (and free slots)
  std::vector<uint32_t> freeSlots_; // free slots of pool_
  std::vector<Access> acc_;         // scratch: the accesses of the instruction being checked
  int64_t records_ = 0, pruneAt_ = kMinPruneAt;
};

/// Whether the strided accesses overlap in at least one byte (exact; used by the checker).
bool stridedOverlap(int64_t addrA, int ebA, const int64_t *nA, const int64_t *sA, int64_t addrB,
                    int ebB, const int64_t *nB, const int64_t *sB);

/// "pc 0x... (instruction #I): <disassembly>" of one instruction, for diagnostics.
std::string instrText(const isa::Target &t, const isa::Program &p, int64_t index);

} // namespace npuc::sim
