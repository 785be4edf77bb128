// GeneticSearch.cpp - NSGA-II: non-dominated sorting, crowding distance and the generation step
// (GeneticSearch.h).
#include "explore/GeneticSearch.h"

#include "explore/Pareto.h"

#include "support/Error.h"

#include <algorithm>
#include <limits>
#include <set>

namespace npuc::explore {

namespace {

using Score = std::optional<std::vector<double>>;

/// Crowding distance of each member within its rank (infinite at a rank's extremes).
std::vector<double> crowding(const std::vector<Score> &s, const std::vector<int> &rank) {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> d(s.size(), 0);
  std::map<int, std::vector<size_t>> byRank;
  for (size_t i = 0; i < s.size(); ++i)
    byRank[rank[i]].push_back(i);
  for (auto &[r, members] : byRank) {
    if (!s[members[0]]) { // the not-ok points: no objectives to spread over
      continue;
    }
    const size_t m = s[members[0]]->size();
    for (size_t k = 0; k < m; ++k) {
      std::sort(members.begin(), members.end(),
                [&](size_t a, size_t b) { return (*s[a])[k] < (*s[b])[k]; });
      const double lo = (*s[members.front()])[k], hi = (*s[members.back()])[k];
      d[members.front()] = d[members.back()] = inf;
      if (hi <= lo)
        continue;
      for (size_t j = 1; j + 1 < members.size(); ++j)
        d[members[j]] += ((*s[members[j + 1]])[k] - (*s[members[j - 1]])[k]) / (hi - lo);
    }
  }
  return d;
}

std::vector<Score> scoresOf(const std::vector<Point> &pts, const Scores &scores) {
  std::vector<Score> s;
  for (const Point &p : pts) {
    auto it = scores.find(p.index);
    NPUC_ASSERT(it != scores.end(), "every member of a generation is scored before selection");
    s.push_back(it->second);
  }
  return s;
}

} // namespace

std::vector<int> nondominatedRanks(const std::vector<Score> &s) {
  const int none = std::numeric_limits<int>::max();
  std::vector<int> rank(s.size(), none);
  size_t assigned = 0, feasible = 0;
  for (const Score &x : s)
    feasible += x.has_value();
  for (int r = 0; assigned < feasible; ++r) {
    std::vector<size_t> front;
    for (size_t i = 0; i < s.size(); ++i) {
      if (!s[i] || rank[i] != none)
        continue;
      bool dominated = false;
      for (size_t j = 0; j < s.size() && !dominated; ++j)
        dominated = j != i && s[j] && rank[j] == none && dominates(*s[j], *s[i]);
      if (!dominated)
        front.push_back(i);
    }
    for (size_t i : front)
      rank[i] = r;
    assigned += front.size();
  }
  return rank;
}

GeneticSearch::GeneticSearch(const SweepSpec &s) : s_(s), rng_(s.seed) {
  NPUC_ASSERT(s.strategy == Strategy::Nsga2 && s.population >= 2, "loadSweep checked it");
}

Point GeneticSearch::indexed(std::vector<int> choice) const {
  Point p{0, std::move(choice)};
  for (size_t a = 0; a < s_.axes.size(); ++a)
    p.index = p.index * int64_t(s_.axes[a].values.size()) + p.choice[a];
  return p;
}

Point GeneticSearch::randomPoint() {
  std::vector<int> c(s_.axes.size());
  for (size_t a = 0; a < c.size(); ++a)
    c[a] =
        int(std::uniform_int_distribution<int64_t>(0, int64_t(s_.axes[a].values.size()) - 1)(rng_));
  return indexed(std::move(c));
}

std::vector<Point> GeneticSearch::initial() {
  const int64_t want = std::min<int64_t>(s_.population, gridSize(s_));
  std::set<int64_t> seen;
  pop_.clear();
  while (int64_t(pop_.size()) < want) {
    Point p = randomPoint();
    if (seen.insert(p.index).second)
      pop_.push_back(p);
  }
  return pop_;
}

size_t GeneticSearch::tournament(const std::vector<int> &rank, const std::vector<double> &crowd) {
  std::uniform_int_distribution<size_t> pick(0, pop_.size() - 1);
  const size_t a = pick(rng_), b = pick(rng_);
  if (rank[a] != rank[b])
    return rank[a] < rank[b] ? a : b;
  return crowd[a] >= crowd[b] ? a : b;
}

std::vector<Point> GeneticSearch::offspring(const Scores &scores) {
  const std::vector<Score> s = scoresOf(pop_, scores);
  const std::vector<int> rank = nondominatedRanks(s);
  const std::vector<double> crowd = crowding(s, rank);
  std::set<int64_t> seen;
  for (const Point &p : pop_)
    seen.insert(p.index);
  std::vector<Point> kids;
  std::uniform_real_distribution<double> coin(0, 1);
  const double mutate = 1.0 / double(s_.axes.size());
  // Children equal to a member or to each other are bred again; a small grid may run out of new
  // points, so the attempts are bounded.
  for (int attempts = 0; kids.size() < pop_.size() && attempts < 20 * s_.population; ++attempts) {
    const Point &x = pop_[tournament(rank, crowd)], &y = pop_[tournament(rank, crowd)];
    std::vector<int> c(s_.axes.size());
    for (size_t a = 0; a < c.size(); ++a) {
      c[a] = coin(rng_) < 0.5 ? x.choice[a] : y.choice[a];
      if (coin(rng_) < mutate)
        c[a] = int(
            std::uniform_int_distribution<int64_t>(0, int64_t(s_.axes[a].values.size()) - 1)(rng_));
    }
    Point child = indexed(std::move(c));
    if (seen.insert(child.index).second)
      kids.push_back(child);
  }
  return kids;
}

void GeneticSearch::select(const std::vector<Point> &children, const Scores &scores) {
  std::vector<Point> all = pop_;
  all.insert(all.end(), children.begin(), children.end());
  const std::vector<Score> s = scoresOf(all, scores);
  const std::vector<int> rank = nondominatedRanks(s);
  const std::vector<double> crowd = crowding(s, rank);
  std::vector<size_t> order(all.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (rank[a] != rank[b])
      return rank[a] < rank[b];
    if (crowd[a] != crowd[b])
      return crowd[a] > crowd[b];
    return all[a].index < all[b].index;
  });
  const size_t keep = std::min(pop_.size(), all.size());
  std::vector<Point> next;
  for (size_t i = 0; i < keep; ++i)
    next.push_back(all[order[i]]);
  pop_ = std::move(next);
}

} // namespace npuc::explore
