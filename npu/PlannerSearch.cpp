// PlannerSearch.cpp - exact branch-and-bound for static memory planning within a capacity.
//
// Time is cut into sections at every buffer start/end. The state is a skyline: per section, the
// floor below which everything is decided. Each step takes the lowest floor f (leftmost valley
// V = maximal run of sections at f) and branches:
//   (a) place a not-yet-placed buffer whose lifetime lies inside V at offset f. Symmetry
//       breaking: it is the buffer with the earliest start among those resting on f in V, so the
//       part of V before it stays empty up to min(left neighbour, its top) and is raised there;
//   (b) leave V empty: raise it to its lower neighbouring floor.
// Completeness (alignment 1): push every buffer of a solution down as far as it goes. If
// anything then occupies V below its neighbours, the lowest such buffer lies inside V and
// rests on f, so some branch (a) reproduces it; otherwise (b) loses nothing.
//
// Pruning: slack[s] = capacity - floor[s] - (sizes of unplaced buffers live in s) must stay
// >= 0. Placing a buffer at its section floors leaves slack unchanged; only raised (wasted)
// space consumes it, so on tight instances (peak live size == capacity) any waste where the
// load is maximal is cut at once - this is what makes the MiniMalloc "challenging" instances
// quick. Subtrees proved infeasible are remembered by a hash of (placed set, skyline), which
// removes the re-exploration of the same state reached in another order. The search is exact
// when every alignment divides the gcd of the sizes (all floors are then aligned); otherwise an
// exhausted search is reported as a timeout, not as a proof.
#include "npu/MemoryPlanner.h"

#include "support/Error.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <unordered_set>

namespace npuc::npu::detail {

namespace {

enum class Outcome { Found, Fail, Abort };

class SkylineSearch {
public:
  SkylineSearch(const std::vector<BufferReq> &all, int64_t capacity, double deadline)
      : C(capacity), deadline(deadline) {
    std::vector<int64_t> times;
    for (size_t i = 0; i < all.size(); ++i)
      if (all[i].start < all[i].end && all[i].size > 0) {
        ids.push_back(static_cast<int>(i));
        bufs.push_back(all[i]);
        times.push_back(all[i].start);
        times.push_back(all[i].end);
      }
    std::sort(times.begin(), times.end());
    times.erase(std::unique(times.begin(), times.end()), times.end());
    nsec = times.empty() ? 0 : static_cast<int>(times.size()) - 1;
    auto sec = [&](int64_t t) {
      return static_cast<int>(std::lower_bound(times.begin(), times.end(), t) - times.begin());
    };
    int64_t g = 0;
    for (const BufferReq &b : bufs) {
      sa.push_back(sec(b.start));
      se.push_back(sec(b.end));
      g = std::gcd(g, b.size);
    }
    exact = std::all_of(bufs.begin(), bufs.end(),
                        [&](const BufferReq &b) { return g % b.alignment == 0; });
    floor.assign(nsec, 0);
    rem.assign(nsec, 0);
    cnt.assign(nsec, 0);
    for (size_t i = 0; i < bufs.size(); ++i)
      for (int s = sa[i]; s < se[i]; ++s) {
        rem[s] += bufs[i].size;
        cnt[s] += 1;
      }
    std::mt19937_64 rng(0x9e3779b97f4a7c15ull);
    zobBuf.resize(bufs.size());
    for (auto &z : zobBuf)
      z = rng();
    zobSec.resize(nsec);
    for (auto &z : zobSec)
      z = rng() | 1;
    for (int s = 0; s < nsec; ++s)
      hashFloor += static_cast<uint64_t>(floor[s]) * zobSec[s];
    placedAt.assign(bufs.size(), -1);
  }

  SearchResult run(std::vector<int64_t> &offsets, int64_t &nodeCount) {
    for (int s = 0; s < nsec; ++s)
      if (rem[s] > C) {
        nodeCount += 1;
        return exact ? SearchResult::Infeasible : SearchResult::Timeout;
      }
    Outcome r = dfs();
    nodeCount += nodes;
    if (r == Outcome::Abort)
      return SearchResult::Timeout;
    if (r == Outcome::Fail)
      return exact ? SearchResult::Infeasible : SearchResult::Timeout;
    for (size_t i = 0; i < bufs.size(); ++i)
      offsets[ids[i]] = placedAt[i];
    return SearchResult::Solved;
  }

private:
  // Undo log: every mutation records (what, index, old value).
  enum class Kind : uint8_t { Floor, Rem, Cnt, Placed };
  struct Undo {
    Kind kind;
    int index;
    int64_t old;
  };

  void setFloor(int s, int64_t v) {
    log.push_back({Kind::Floor, s, floor[s]});
    hashFloor += static_cast<uint64_t>(v - floor[s]) * zobSec[s];
    floor[s] = v;
  }

  void undoTo(size_t mark) {
    while (log.size() > mark) {
      Undo u = log.back();
      log.pop_back();
      switch (u.kind) {
      case Kind::Floor:
        hashFloor += static_cast<uint64_t>(u.old - floor[u.index]) * zobSec[u.index];
        floor[u.index] = u.old;
        break;
      case Kind::Rem:
        rem[u.index] = u.old;
        break;
      case Kind::Cnt:
        cnt[u.index] = static_cast<int>(u.old);
        break;
      case Kind::Placed:
        placedAt[u.index] = u.old;
        hashPlaced ^= zobBuf[u.index];
        --numPlaced;
        break;
      }
    }
  }

  int64_t slack(int s) const { return C - floor[s] - rem[s]; }

  /// Places buffer i at the lowest aligned offset >= f; false if that breaks a bound.
  bool place(int i, int64_t f) {
    const BufferReq &b = bufs[i];
    int64_t off = b.alignment > 1 ? (f + b.alignment - 1) / b.alignment * b.alignment : f;
    if (off + b.size > C)
      return false;
    log.push_back({Kind::Placed, i, placedAt[i]});
    placedAt[i] = off;
    hashPlaced ^= zobBuf[i];
    ++numPlaced;
    bool ok = true;
    for (int s = sa[i]; s < se[i]; ++s) {
      log.push_back({Kind::Rem, s, rem[s]});
      log.push_back({Kind::Cnt, s, cnt[s]});
      rem[s] -= b.size;
      cnt[s] -= 1;
      // A section nothing will use any more is closed: it must not count as a valley.
      setFloor(s, cnt[s] == 0 ? C : off + b.size);
      ok = ok && slack(s) >= 0;
    }
    return ok;
  }

  /// Raises sections [a, b) (all at one floor) to v; false if some slack goes negative.
  bool raise(int a, int b, int64_t v) {
    bool ok = true;
    for (int s = a; s < b; ++s) {
      setFloor(s, v);
      ok = ok && slack(s) >= 0;
    }
    return ok;
  }

  Outcome dfs() {
    if ((++nodes & 1023) == 0 && nowSeconds() > deadline)
      return Outcome::Abort;
    if (numPlaced == static_cast<int>(bufs.size()))
      return Outcome::Found;
    uint64_t key = hashPlaced ^ (hashFloor * 0x2545f4914f6cdd1dull);
    if (failed.count(key))
      return Outcome::Fail;

    // The lowest open valley, leftmost.
    int64_t f = C;
    int a = -1;
    for (int s = 0; s < nsec; ++s)
      if (floor[s] < f) {
        f = floor[s];
        a = s;
      }
    NPUC_ASSERT(a >= 0, "an unplaced buffer keeps its sections open below the capacity");
    int b = a;
    while (b < nsec && floor[b] == f)
      ++b;
    int64_t left = a > 0 ? floor[a - 1] : C, right = b < nsec ? floor[b] : C;

    // Candidates: unplaced buffers inside the valley. Prefer no waste before them, then long
    // lifetimes and large sizes (the hardest to fit later). Identical buffers are tried once.
    std::vector<int> cand;
    for (size_t i = 0; i < bufs.size(); ++i)
      if (placedAt[i] < 0 && sa[i] >= a && se[i] <= b)
        cand.push_back(static_cast<int>(i));
    std::sort(cand.begin(), cand.end(), [&](int x, int y) {
      if (sa[x] != sa[y])
        return sa[x] < sa[y];
      if (se[x] != se[y])
        return se[x] > se[y];
      return bufs[x].size > bufs[y].size;
    });
    for (size_t k = 0; k < cand.size(); ++k) {
      int i = cand[k];
      if (k > 0) {
        int j = cand[k - 1];
        if (sa[i] == sa[j] && se[i] == se[j] && bufs[i].size == bufs[j].size &&
            bufs[i].alignment == bufs[j].alignment)
          continue;
      }
      size_t mark = log.size();
      bool ok = place(i, f);
      if (ok && sa[i] > a)
        ok = raise(a, sa[i], std::min(left, placedAt[i] + bufs[i].size));
      if (ok) {
        Outcome r = dfs();
        if (r != Outcome::Fail)
          return r;
      }
      undoTo(mark);
    }
    // Nothing rests on f in V: V stays empty up to its lower neighbour.
    size_t mark = log.size();
    if (raise(a, b, std::min(left, right))) {
      Outcome r = dfs();
      if (r != Outcome::Fail)
        return r;
    }
    undoTo(mark);
    if (failed.size() < kMaxRemembered)
      failed.insert(key);
    return Outcome::Fail;
  }

  static constexpr size_t kMaxRemembered = 4u << 20;
  int64_t C;
  double deadline;
  bool exact = true;
  std::vector<int> ids; // live buffer -> index in the caller's vector
  std::vector<BufferReq> bufs;
  std::vector<int> sa, se; // section span [sa, se)
  int nsec = 0;
  std::vector<int64_t> floor, rem;
  std::vector<int> cnt;
  std::vector<int64_t> placedAt;
  int numPlaced = 0;
  std::vector<Undo> log;
  std::vector<uint64_t> zobBuf, zobSec;
  uint64_t hashPlaced = 0, hashFloor = 0;
  std::unordered_set<uint64_t> failed;
  int64_t nodes = 0;
};

} // namespace

SearchResult searchPlacement(const std::vector<BufferReq> &buffers, int64_t capacity,
                             double deadlineSeconds, std::vector<int64_t> &offsets,
                             int64_t &nodes) {
  offsets.assign(buffers.size(), 0);
  SkylineSearch search(buffers, capacity, deadlineSeconds);
  return search.run(offsets, nodes);
}

} // namespace npuc::npu::detail
