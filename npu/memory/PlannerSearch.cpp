// PlannerSearch.cpp - exact branch-and-bound for static memory planning within a capacity.
//
// Time is cut into sections at every buffer start/end. The state is a skyline: per section, the
// floor below which everything is decided. A valley is a maximal run V of sections at one floor
// f below both neighbours; each step picks one valley and branches:
//   (a) place a not-yet-placed buffer whose lifetime lies inside V at offset f. Symmetry
//       breaking: it is the buffer with the earliest start among those resting on f in V, so the
//       part of V before it stays empty up to min(left neighbour, its top) and is raised there;
//   (b) leave V empty: raise it to its lower neighbouring floor.
// Completeness (alignment 1): take a solution consistent with the state and push every buffer
// down as far as it goes. If anything then occupies V below its neighbours, the lowest such
// buffer lies inside V and rests on f, so some branch (a) reproduces it; otherwise (b) loses
// nothing. This holds for any valley, so the search takes the one with the fewest viable
// branches (fail first).
//
// Pruning and inference, all sound for the same reason:
//  - a section's floor rises to the lowest offset any of its unplaced buffers can take (the
//    highest floor over that buffer's lifetime): the space below is wasted;
//  - per section, the unplaced buffers must stack in one column of addresses, each no lower
//    than its lowest offset; stacking them by lowest offset gives the lowest possible top
//    (one machine with release times), which must stay within the capacity. On tight
//    instances (peak live size == capacity) this forbids any waste where the load is maximal;
//  - when no unplaced buffer crosses a section boundary, the two sides are independent parts,
//    solved one after the other (a failure in one does not re-explore the other);
//  - parts proved infeasible are remembered by a hash of (unplaced set, skyline).
// Search time on tight instances is heavy-tailed, so the search restarts (Luby budgets) over
// candidate heuristics and randomised variants, and runs as a portfolio with the time-reversed
// instance (see searchPlacement). The search is exact when every alignment divides the gcd of
// the sizes (all floors are then aligned); otherwise an exhausted search is reported as a
// timeout, not as a proof.
#include "npu/memory/MemoryPlanner.h"

#include "support/Error.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <unordered_set>

namespace npuc::npu::detail {

namespace {

enum class Outcome { Found, Fail, Abort };

int64_t alignUp(int64_t x, int64_t a) {
  return a <= 1 ? x : (x + a - 1) / a * a;
}

class SkylineSearch {
public:
  SkylineSearch(const std::vector<BufferReq> &all, int64_t capacity, double deadline)
      : C(capacity), deadline(deadline) {
    std::vector<int64_t> times;
    for (size_t i = 0; i < all.size(); ++i)
      if (all[i].start < all[i].end && all[i].size > 0) {
        ids.push_back(static_cast<int>(i));
        times.push_back(all[i].start);
        times.push_back(all[i].end);
      }
    // Internally buffers are numbered by start time, so every scan yields them sorted.
    std::stable_sort(ids.begin(), ids.end(),
                     [&](int x, int y) { return all[x].start < all[y].start; });
    for (int i : ids)
      bufs.push_back(all[i]);
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
    placedAt.assign(bufs.size(), -1);
  }

  /// False when some section alone holds more than the capacity (no search needed).
  bool loadFits() const {
    for (int s = 0; s < nsec; ++s)
      if (rem[s] > C)
        return false;
    return true;
  }
  bool isExact() const { return exact; }
  int64_t nodeCount() const { return nodes; }

  /// One restart: the candidate heuristics in turn, then randomised variants, each with a node
  /// budget from the Luby sequence (1 1 2 1 1 2 4 ...) times a base. Tight instances have a
  /// heavy-tailed search time - most orders find a packing fast, a few get lost - and Luby
  /// restarts are within a log factor of the best fixed budget. Subtrees proved infeasible stay
  /// remembered across restarts: that proof does not depend on the order. Fail is a proof.
  Outcome attempt(int64_t restart) {
    // First each heuristic as is, then alternately a random candidate order and a heuristic
    // with random valley choice among equally constrained ones.
    order = restart < kOrders ? static_cast<int>(restart)
            : restart % 2     ? kOrders
                              : static_cast<int>(restart / 2 % kOrders);
    randomValleys = restart >= kOrders;
    prio.assign(bufs.size(), 0);
    if (restart >= kOrders)
      for (auto &p : prio)
        p = rng();
    const int64_t base = 4 * static_cast<int64_t>(bufs.size()) + 64;
    nodeLimit = nodes + base * luby(restart + 1);
    size_t mark = log.size();
    Outcome r = dfs(0, nsec);
    if (r != Outcome::Found)
      undoTo(mark);
    return r;
  }

  /// The found plan, into the caller's offsets (by the caller's buffer indices).
  void write(std::vector<int64_t> &offsets) const {
    for (size_t i = 0; i < bufs.size(); ++i)
      offsets[ids[i]] = placedAt[i];
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
    floor[s] = v;
  }

  void undoTo(size_t mark) {
    while (log.size() > mark) {
      Undo u = log.back();
      log.pop_back();
      switch (u.kind) {
      case Kind::Floor:
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
        break;
      }
    }
  }

  int64_t slack(int s) const { return C - floor[s] - rem[s]; }

  /// Places buffer i at the lowest aligned offset >= f; false if that breaks a bound.
  bool place(int i, int64_t f) {
    const BufferReq &b = bufs[i];
    int64_t off = alignUp(f, b.alignment);
    if (off + b.size > C)
      return false;
    log.push_back({Kind::Placed, i, placedAt[i]});
    placedAt[i] = off;
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

  /// Searches the subproblem of the unplaced buffers inside sections [lo, hi); no unplaced
  /// buffer crosses its ends, so sections outside act as walls.
  Outcome dfs(int lo, int hi) {
    if ((++nodes & 255) == 0 && nowSeconds() > deadline)
      return Outcome::Abort;
    if (nodes > nodeLimit)
      return Outcome::Abort;
    std::vector<int> open;
    for (size_t i = 0; i < bufs.size(); ++i)
      if (placedAt[i] < 0 && sa[i] >= lo && se[i] <= hi)
        open.push_back(static_cast<int>(i));
    if (open.empty())
      return Outcome::Found;

    // Independent parts: groups of buffers whose lifetimes chain together. Solving them one
    // after another (instead of interleaved) is what keeps a failure in one part from
    // re-exploring the others.
    std::vector<std::pair<int, int>> parts;
    for (int i : open) {
      if (parts.empty() || sa[i] >= parts.back().second)
        parts.push_back({sa[i], se[i]});
      else
        parts.back().second = std::max(parts.back().second, se[i]);
    }
    if (parts.size() > 1) {
      for (auto [plo, phi] : parts) {
        Outcome r = dfs(plo, phi);
        if (r != Outcome::Found)
          return r;
      }
      return Outcome::Found;
    }
    lo = parts[0].first;
    hi = parts[0].second;

    uint64_t key = static_cast<uint64_t>(lo) * 0x9e3779b97f4a7c15ull ^
                   static_cast<uint64_t>(hi) * 0xc2b2ae3d27d4eb4full;
    for (int s = lo; s < hi; ++s)
      key += static_cast<uint64_t>(floor[s]) * zobSec[s];
    key *= 0x2545f4914f6cdd1dull;
    for (int i : open)
      key ^= zobBuf[i];
    if (failed.count(key))
      return Outcome::Fail;

    Outcome result = search(lo, hi, open);
    if (result == Outcome::Fail && failed.size() < kMaxRemembered)
      failed.insert(key);
    return result;
  }

  Outcome search(int lo, int hi, const std::vector<int> &open) {
    // Inference: nothing goes below the lowest offset any of a section's unplaced buffers can
    // take (the highest floor over its lifetime, aligned), so raise such floors - the space is
    // wasted.
    std::vector<int64_t> lowest(hi - lo, C);
    std::vector<std::pair<int64_t, int>> release; // (lowest offset, buffer)
    for (int i : open) {
      int64_t m = 0;
      for (int s = sa[i]; s < se[i]; ++s)
        m = std::max(m, floor[s]);
      m = alignUp(m, bufs[i].alignment);
      release.push_back({m, i});
      for (int s = sa[i]; s < se[i]; ++s)
        lowest[s - lo] = std::min(lowest[s - lo], m);
    }
    for (int s = lo; s < hi; ++s)
      if (floor[s] < lowest[s - lo]) {
        setFloor(s, lowest[s - lo]);
        if (slack(s) < 0)
          return Outcome::Fail;
      }
    // Bound: in each section the unplaced buffers stack in one column of addresses, each no
    // lower than its lowest offset. Stacking them by lowest offset (the optimal order for one
    // machine with release times, 1|r_j|Cmax) gives the lowest possible top; above the capacity
    // this state is dead. This subsumes the slack bound and sees gaps it cannot.
    std::sort(release.begin(), release.end());
    std::vector<int64_t> &top = lowest; // reuse: per-section column top
    for (int s = lo; s < hi; ++s)
      top[s - lo] = floor[s];
    for (auto [m, i] : release)
      for (int s = sa[i]; s < se[i]; ++s) {
        int64_t &t = top[s - lo];
        t = std::max(t, m) + bufs[i].size;
        if (t > C)
          return Outcome::Fail;
      }

    // Valleys: maximal runs of equal floor lower than both neighbours (sections outside
    // [lo, hi) and closed sections are walls). Any valley may be branched on; take the one with
    // the fewest viable choices (fail first), then the lowest.
    struct Valley {
      int a, b;
      int64_t f, left, right;
      std::vector<int> cand;
    };
    std::vector<Valley> valleys;
    std::vector<int> valleyOf(hi - lo, -1);
    for (int s = lo; s < hi;) {
      int e = s;
      while (e < hi && floor[e] == floor[s])
        ++e;
      int64_t left = s > lo ? floor[s - 1] : C, right = e < hi ? floor[e] : C;
      if (floor[s] < C && left > floor[s] && right > floor[s]) {
        for (int q = s; q < e; ++q)
          valleyOf[q - lo] = static_cast<int>(valleys.size());
        valleys.push_back({s, e, floor[s], left, right, {}});
      }
      s = e;
    }
    NPUC_ASSERT(!valleys.empty(), "an unplaced buffer keeps its sections open below the capacity");
    for (int i : open) {
      int v = valleyOf[sa[i] - lo];
      if (v >= 0 && se[i] <= valleys[v].b)
        valleys[v].cand.push_back(i);
    }
    // Least slack over [x, y).
    auto minSlack = [&](int x, int y) {
      int64_t m = C;
      for (int s = x; s < y; ++s)
        m = std::min(m, slack(s));
      return m;
    };
    int best = -1;
    size_t bestCount = 0;
    for (size_t v = 0; v < valleys.size(); ++v) {
      Valley &V = valleys[v];
      std::vector<int> viable;
      for (int i : V.cand) {
        int64_t top = V.f + bufs[i].size;
        if (top > C)
          continue;
        if (sa[i] > V.a && minSlack(V.a, sa[i]) < std::min(V.left, top) - V.f)
          continue;
        viable.push_back(i);
      }
      V.cand = std::move(viable);
      size_t count = V.cand.size() + (minSlack(V.a, V.b) >= std::min(V.left, V.right) - V.f);
      // (No valley to compare with before the first: valleys[-1] was read, out of bounds.)
      bool tieBreak = randomValleys ? (rng() & 1) : best >= 0 && V.f < valleys[best].f;
      if (best < 0 || count < bestCount || (count == bestCount && tieBreak)) {
        best = static_cast<int>(v);
        bestCount = count;
      }
      if (count == 0)
        return Outcome::Fail;
    }
    Valley &V = valleys[best];
    int a = V.a, b = V.b;
    int64_t f = V.f, left = V.left, right = V.right;
    std::vector<int> &cand = V.cand;
    std::sort(cand.begin(), cand.end(), [&](int x, int y) { return before(x, y); });
    for (size_t k = 0; k < cand.size(); ++k) {
      int i = cand[k];
      bool dup = false;
      for (size_t q = 0; q < k && !dup; ++q) {
        int j = cand[q];
        dup = sa[i] == sa[j] && se[i] == se[j] && bufs[i].size == bufs[j].size &&
              bufs[i].alignment == bufs[j].alignment;
      }
      if (dup)
        continue;
      size_t mark = log.size();
      bool ok = place(i, f);
      if (ok && sa[i] > a)
        ok = raise(a, sa[i], std::min(left, placedAt[i] + bufs[i].size));
      if (ok) {
        Outcome r = dfs(lo, hi);
        if (r != Outcome::Fail)
          return r;
      }
      undoTo(mark);
    }
    // Nothing rests on f in V: V stays empty up to its lower neighbour.
    size_t mark = log.size();
    if (raise(a, b, std::min(left, right))) {
      Outcome r = dfs(lo, hi);
      if (r != Outcome::Fail)
        return r;
    }
    undoTo(mark);
    return Outcome::Fail;
  }

  /// Candidate order under heuristic `order`: no waste before the buffer first (earliest
  /// start), then the hardest to place later.
  bool before(int x, int y) const {
    if (sa[x] != sa[y])
      return sa[x] < sa[y];
    int64_t lx = se[x] - sa[x], ly = se[y] - sa[y];
    int64_t ax = lx * bufs[x].size, ay = ly * bufs[y].size;
    switch (order) {
    case 0:
      if (lx != ly)
        return lx > ly;
      if (bufs[x].size != bufs[y].size)
        return bufs[x].size > bufs[y].size;
      break;
    case 1:
      if (bufs[x].size != bufs[y].size)
        return bufs[x].size > bufs[y].size;
      if (lx != ly)
        return lx > ly;
      break;
    case 2:
      if (ax != ay)
        return ax > ay;
      if (lx != ly)
        return lx > ly;
      break;
    default: // random among the buffers starting at the valley's start
      break;
    }
    return prio[x] != prio[y] ? prio[x] < prio[y] : x < y;
  }

  /// The Luby restart sequence: 1 1 2 1 1 2 4 1 1 2 1 1 2 4 8 ...
  static int64_t luby(int64_t i) {
    for (int64_t k = 1;; ++k) {
      if (i == (int64_t(1) << k) - 1)
        return int64_t(1) << (k - 1);
      if (i < (int64_t(1) << k) - 1)
        return luby(i - (int64_t(1) << (k - 1)) + 1);
    }
  }

  static constexpr int kOrders = 3;
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
  std::vector<Undo> log;
  std::vector<uint64_t> zobBuf, zobSec;
  int order = 0;              // candidate heuristic of the current restart
  std::vector<uint64_t> prio; // random tie-break of the current restart
  bool randomValleys = false; // break ties between valleys at random
  std::mt19937_64 rng{12345};
  int64_t nodeLimit = 0; // node budget of the current restart
  std::unordered_set<uint64_t> failed;
  int64_t nodes = 0;
};

} // namespace

SearchResult searchPlacement(const std::vector<BufferReq> &buffers, int64_t capacity,
                             double deadlineSeconds, std::vector<int64_t> &offsets,
                             int64_t &nodes) {
  offsets.assign(buffers.size(), 0);
  // A portfolio of two searches, interleaved restart by restart: the instance as given and
  // time-reversed ([s, e) -> [-e, -s); a plan of one is a plan of the other). The valley
  // choice and candidate order run left to right, so the two meet different early decisions;
  // on the MiniMalloc set an instance that is slow one way is typically fast the other way.
  std::vector<BufferReq> reversed = buffers;
  for (BufferReq &b : reversed)
    b = {-b.end, -b.start, b.size, b.alignment};
  SkylineSearch forward(buffers, capacity, deadlineSeconds);
  SkylineSearch backward(reversed, capacity, deadlineSeconds);
  SkylineSearch *searches[] = {&forward, &backward};
  auto done = [&](SearchResult r) {
    nodes += forward.nodeCount() + backward.nodeCount();
    return r;
  };
  if (!forward.loadFits())
    return done(forward.isExact() ? SearchResult::Infeasible : SearchResult::Timeout);
  for (int64_t restart = 0; nowSeconds() <= deadlineSeconds; ++restart)
    for (SkylineSearch *search : searches) {
      Outcome r = search->attempt(restart);
      if (r == Outcome::Found) {
        search->write(offsets);
        return done(SearchResult::Solved);
      }
      if (r == Outcome::Fail)
        return done(search->isExact() ? SearchResult::Infeasible : SearchResult::Timeout);
    }
  return done(SearchResult::Timeout);
}

} // namespace npuc::npu::detail
