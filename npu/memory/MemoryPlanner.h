// MemoryPlanner.h - static memory planning: offsets for buffers with known lifetimes.
//
// One planner serves every memory level: DRAM tensors (lifetimes = the fused groups between a
// tensor's producer and its last consumer) and on-chip buffers (lifetimes = steps of a kernel).
// It knows nothing about the graph: a buffer is a half-open lifetime [start, end) in abstract
// program steps, a size and an alignment. Buffers whose lifetimes overlap must not overlap in
// [offset, offset + size); every offset + size must stay within the capacity.
//
// The planner runs a fast greedy best-fit with several orderings first; when that cannot fit
// the capacity (or when asked to minimise the peak), it runs an exact branch-and-bound over
// "skyline" placements (npu/memory/PlannerSearch.cpp), bounded by a time limit. Every returned plan
// can be validated by checkMemoryPlan (npu/memory/PlannerCheck.cpp), a deliberately separate and
// naive checker.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace npuc::npu {

/// One buffer to place. Live over program steps [start, end); a buffer with start == end is
/// never live and gets offset 0. alignment >= 1 (the offset must be a multiple of it).
struct BufferReq {
  int64_t start = 0;
  int64_t end = 0;
  int64_t size = 0;
  int64_t alignment = 1;
};

struct PlannerOptions {
  /// Wall-clock budget for the exact search (the greedy phase is not limited: it is fast).
  /// Short by default because a compiler pass that cannot fit should learn it quickly and try
  /// another choice; every MiniMalloc "challenging" instance needs well under a second.
  double timeLimitSeconds = 2.0;
  /// Keep searching below the first plan that fits until the peak equals the lower bound
  /// (the largest total size live at one step) or the time runs out.
  bool minimizePeak = false;
  /// Allow the exact search at all (false: greedy only).
  bool useSearch = true;
};

struct PlanStats {
  std::string method;            // "empty", "greedy:<ordering>", "search" or "none"
  int64_t lowerBound = 0;        // largest total size of the buffers live at one step
  int64_t searchNodes = 0;       // branch-and-bound nodes expanded
  bool provedInfeasible = false; // no plan fits the capacity (the search was exhaustive)
  bool optimal = false;          // peak == lowerBound, or the search proved nothing lower fits
  double seconds = 0;            // total planning time
};

struct MemoryPlan {
  std::vector<int64_t> offsets; // one per BufferReq, in input order
  int64_t peak = 0;             // max over buffers of offset + size
  bool solved = false;          // peak <= capacity
  PlanStats stats;
};

/// Plans `buffers` within `capacity` bytes. Invalid requests (negative size, end < start,
/// alignment < 1) are user errors naming the buffer index. When no plan fits, `solved` is false
/// and `offsets` hold the best (over-capacity) greedy plan.
MemoryPlan planMemory(const std::vector<BufferReq> &buffers, int64_t capacity,
                      const PlannerOptions &options = {});

/// Validates a plan independently of the planner: every buffer within [0, capacity), aligned,
/// and no two buffers overlapping in both time and address. Returns "" if valid, otherwise a
/// description of the first violation found (naming the buffer indices).
std::string checkMemoryPlan(const std::vector<BufferReq> &buffers,
                            const std::vector<int64_t> &offsets, int64_t capacity);

/// Reads a buffer list in MiniMalloc's CSV format: a header line, then rows id,lower,upper,size
/// (lifetime [lower, upper)); ids must be 0..n-1 in any order. Errors name the file and line.
std::vector<BufferReq> readBufferCsv(const std::string &path);

namespace detail {
/// Outcome of one exact search for a fixed capacity.
enum class SearchResult { Solved, Infeasible, Timeout };

/// Exact skyline branch-and-bound (PlannerSearch.cpp). On Solved, `offsets` holds a plan within
/// `capacity`. `deadline` is a steady_clock time in seconds since its epoch.
SearchResult searchPlacement(const std::vector<BufferReq> &buffers, int64_t capacity,
                             double deadlineSeconds, std::vector<int64_t> &offsets, int64_t &nodes);

/// steady_clock now, in seconds.
double nowSeconds();
} // namespace detail

} // namespace npuc::npu
