// MemoryPlanner.cpp - planMemory: request validation, the lower bound, the greedy phase, and the
// driver that falls back to the exact search (PlannerSearch.cpp).
//
// Greedy: buffers are taken in one of several orders (largest first, longest-lived first,
// largest area first, earliest first) and each goes into a gap among the already placed
// buffers that are live at the same time - the lowest gap (first fit) or the tightest gap
// (best fit). This is what production allocators do and it is near-optimal on typical
// liveness patterns, but it fails on tight instances (the MiniMalloc "challenging" set, whose
// peak live size equals the capacity): there every byte must be used, and the exact search
// takes over.
#include "npu/memory/MemoryPlanner.h"

#include "support/Error.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <limits>

namespace npuc::npu {

namespace detail {
double nowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
} // namespace detail

namespace {

bool isLive(const BufferReq &b) {
  return b.start < b.end && b.size > 0;
}

int64_t alignUp(int64_t x, int64_t a) {
  return a <= 1 ? x : (x + a - 1) / a * a;
}

/// The largest total size live at one step: no plan can have a lower peak.
int64_t liveLowerBound(const std::vector<BufferReq> &buffers) {
  std::vector<std::pair<int64_t, int64_t>> events; // (time, +size at start / -size at end)
  for (const BufferReq &b : buffers)
    if (isLive(b)) {
      events.push_back({b.start, b.size});
      events.push_back({b.end, -b.size});
    }
  // Ends before starts at the same time: [start, end) intervals touching do not overlap.
  std::sort(events.begin(), events.end());
  int64_t cur = 0, best = 0;
  for (auto &[t, d] : events) {
    cur += d;
    best = std::max(best, cur);
  }
  return best;
}

struct Placed {
  int64_t lo, hi;
};

/// Greedy placement in the given order. bestFit: the tightest gap that holds the buffer below
/// `capacity`; otherwise (or when none holds it) the lowest. Returns the peak.
int64_t greedyPlace(const std::vector<BufferReq> &buffers, const std::vector<int> &order,
                    bool bestFit, int64_t capacity, std::vector<int64_t> &offsets) {
  offsets.assign(buffers.size(), 0);
  std::vector<int> placed;
  std::vector<Placed> busy;
  int64_t peak = 0;
  for (int i : order) {
    const BufferReq &b = buffers[i];
    busy.clear();
    for (int p : placed) {
      const BufferReq &o = buffers[p];
      if (o.start < b.end && b.start < o.end)
        busy.push_back({offsets[p], offsets[p] + o.size});
    }
    std::sort(busy.begin(), busy.end(), [](auto &x, auto &y) { return x.lo < y.lo; });
    int64_t cursor = 0, firstFit = -1, bestOff = -1, bestGap = std::numeric_limits<int64_t>::max();
    auto consider = [&](int64_t gapLo, int64_t gapHi) {
      int64_t off = alignUp(gapLo, b.alignment);
      if (off + b.size > gapHi)
        return;
      if (firstFit < 0)
        firstFit = off;
      if (off + b.size <= capacity && gapHi - gapLo < bestGap) {
        bestGap = gapHi - gapLo;
        bestOff = off;
      }
    };
    for (const Placed &q : busy) {
      if (q.lo > cursor)
        consider(cursor, q.lo);
      cursor = std::max(cursor, q.hi);
    }
    consider(cursor, std::numeric_limits<int64_t>::max()); // the open top
    int64_t off = (bestFit && bestOff >= 0) ? bestOff : firstFit;
    NPUC_ASSERT(off >= 0, "the open gap above every placed buffer always fits");
    offsets[i] = off;
    peak = std::max(peak, off + b.size);
    placed.push_back(i);
  }
  return peak;
}

struct Ordering {
  const char *name;
  std::function<bool(const BufferReq &, const BufferReq &)> before;
};

} // namespace

MemoryPlan planMemory(const std::vector<BufferReq> &buffers, int64_t capacity,
                      const PlannerOptions &options) {
  double t0 = detail::nowSeconds();
  if (capacity < 0)
    fail("memory planner: negative capacity {}", capacity);
  for (size_t i = 0; i < buffers.size(); ++i) {
    const BufferReq &b = buffers[i];
    if (b.size < 0)
      fail("memory planner: buffer {} has negative size {}", i, b.size);
    if (b.end < b.start)
      fail("memory planner: buffer {} ends (step {}) before it starts (step {})", i, b.end,
           b.start);
    if (b.alignment < 1)
      fail("memory planner: buffer {} has alignment {} (must be >= 1)", i, b.alignment);
  }

  MemoryPlan plan;
  plan.offsets.assign(buffers.size(), 0);
  plan.stats.lowerBound = liveLowerBound(buffers);
  std::vector<int> live;
  for (size_t i = 0; i < buffers.size(); ++i)
    if (isLive(buffers[i]))
      live.push_back(static_cast<int>(i));
  auto finish = [&](MemoryPlan &p) -> MemoryPlan & {
    p.solved = p.peak <= capacity;
    p.stats.optimal = p.stats.optimal || p.peak == p.stats.lowerBound;
    p.stats.seconds = detail::nowSeconds() - t0;
    return p;
  };
  if (live.empty()) {
    plan.stats.method = "empty";
    return finish(plan);
  }

  // ---- greedy phase: keep the lowest peak over all orderings and both gap rules ----
  auto len = [](const BufferReq &b) { return b.end - b.start; };
  const std::vector<Ordering> orderings = {
      {"size",
       [&](auto &a, auto &b) { return a.size != b.size ? a.size > b.size : len(a) > len(b); }},
      {"lifetime",
       [&](auto &a, auto &b) { return len(a) != len(b) ? len(a) > len(b) : a.size > b.size; }},
      {"area", [&](auto &a, auto &b) { return a.size * len(a) > b.size * len(b); }},
      {"start",
       [&](auto &a, auto &b) { return a.start != b.start ? a.start < b.start : a.size > b.size; }},
  };
  plan.peak = std::numeric_limits<int64_t>::max();
  std::vector<int64_t> offs;
  for (const Ordering &o : orderings) {
    std::vector<int> order = live;
    std::stable_sort(order.begin(), order.end(),
                     [&](int x, int y) { return o.before(buffers[x], buffers[y]); });
    for (bool bestFit : {false, true}) {
      int64_t peak = greedyPlace(buffers, order, bestFit, capacity, offs);
      if (peak < plan.peak) {
        plan.peak = peak;
        plan.offsets = offs;
        plan.stats.method = fmt::format("greedy:{}{}", o.name, bestFit ? "/best-fit" : "");
      }
    }
  }
  bool fits = plan.peak <= capacity;
  if (plan.stats.lowerBound > capacity) {
    plan.stats.provedInfeasible = true; // more is live at one step than the capacity holds
    return finish(plan);
  }
  if (plan.peak == plan.stats.lowerBound || !options.useSearch || (fits && !options.minimizePeak))
    return finish(plan);

  // ---- exact phase ----
  double deadline = t0 + options.timeLimitSeconds;
  if (!fits) {
    auto r = detail::searchPlacement(buffers, capacity, deadline, offs, plan.stats.searchNodes);
    if (r == detail::SearchResult::Infeasible)
      plan.stats.provedInfeasible = true;
    if (r != detail::SearchResult::Solved)
      return finish(plan);
    plan.offsets = offs;
    plan.peak = 0;
    for (int i : live)
      plan.peak = std::max(plan.peak, offs[i] + buffers[i].size);
    plan.stats.method = "search";
    if (!options.minimizePeak)
      return finish(plan);
  }
  // Minimise: bisect the capacity between the lower bound and the best peak so far.
  int64_t lo = plan.stats.lowerBound, hi = plan.peak; // hi is achieved
  while (lo < hi && detail::nowSeconds() < deadline) {
    int64_t mid = lo + (hi - lo) / 2;
    auto r = detail::searchPlacement(buffers, mid, deadline, offs, plan.stats.searchNodes);
    if (r == detail::SearchResult::Timeout)
      break;
    if (r == detail::SearchResult::Infeasible) {
      lo = mid + 1;
      continue;
    }
    plan.offsets = offs;
    plan.peak = 0;
    for (int i : live)
      plan.peak = std::max(plan.peak, offs[i] + buffers[i].size);
    plan.stats.method = "search";
    hi = plan.peak;
  }
  plan.stats.optimal = lo >= hi;
  return finish(plan);
}

} // namespace npuc::npu
