// Sync.h - dependency tokens between engines.
//
// Each engine executes its own queue in order; engines are ordered against each other only by
// tokens (an instruction's `push` bit e sends a token to engine e when it completes, its `pop`
// bit p waits for the oldest token from engine p). insertTokens() derives the tokens from memory
// accesses: for every instruction it finds, per other engine, the latest earlier instruction that
// conflicts with it (read-after-write, write-after-read or write-after-write on overlapping bytes
// of the same level, DRAM included) and is not already known complete through earlier tokens
// (vector clocks), and links the two with one token. Tokens between a pair of engines are pushed
// and popped in the same order, so FIFO matching is exact.
#pragma once

#include "isa/Program.h"

#include <cstdint>
#include <vector>

namespace npuc::npu {

struct Access {
  int level = 0;
  int64_t lo = 0, hi = 0; // byte range [lo, hi)
  bool write = false;
};

/// The byte ranges an instruction reads and writes (bounding boxes of its strided views).
std::vector<Access> accessesOf(const isa::Target &t, const isa::Instr &in);

struct SyncStats {
  int64_t tokens = 0;
};

/// Sets the pop/push fields of every instruction of `p` (existing values are replaced).
SyncStats insertTokens(const isa::Target &t, isa::Program &p);

/// Vector ops that read src2.
bool vectorOpIsBinary(const std::string &op);

} // namespace npuc::npu
