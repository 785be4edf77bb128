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
//
// The hardware's queues are bounded (engines' instruction queues, tokens.queue_depth per engine
// pair), so more tokens outstanding between two engines than the FIFO holds, before the program
// reaches their pops, can deadlock it. boundTokenQueues() then merges adjacent tokens of that
// pair (a consumer waits for a slightly later instruction of the in-order producer), only where
// an exact untimed model of the queues finds a deadlock; a program that cannot deadlock keeps
// its tokens. insertTokens() asserts that its result cannot deadlock.
#pragma once

#include "isa/Program.h"

#include <cstdint>
#include <string>
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
  int64_t tokens = 0; // in the final program
  int64_t merged = 0; // tokens merged into a neighbour to keep the queues from deadlocking
};

/// Sets the pop/push fields of every instruction of `p` (existing values are replaced), then
/// boundTokenQueues(); NPUC_ASSERTs that the result cannot deadlock.
SyncStats insertTokens(const isa::Target &t, isa::Program &p);

/// Empty when `p` runs to completion on the simulator under every timing; otherwise what each
/// blocked engine waits for once no instruction can start (dispatch into the engines' queues
/// in program order, token FIFOs of t.tokenQueueDepth; docs/SIMULATOR.md). Exact, untimed.
std::string findDeadlock(const isa::Target &t, const isa::Program &p);

/// Makes `p` (tokens as insertTokens derives them: every pop's push earlier in program order)
/// deadlock-free by merging tokens where the queues would otherwise deadlock (Sync.cpp proves
/// each merge sound). Returns the number of tokens merged away; 0 leaves `p` unchanged.
int64_t boundTokenQueues(const isa::Target &t, isa::Program &p);

} // namespace npuc::npu
