// GeneticSearch.h - the multi-objective search over a sweep's grid, after NSGA-II (Deb, Pratap,
// Agarwal, Meyarivan, "A fast and elitist multiobjective genetic algorithm: NSGA-II", IEEE TEC
// 2002), for spaces too large to enumerate.
//
// A genome is a point's choice vector. The first generation is `population` distinct random
// points; each later one breeds as many offspring (binary tournaments on rank then crowding
// distance, uniform crossover of the axis choices, each choice redrawn with probability 1/axes)
// and keeps the best `population` of parents and offspring by non-dominated rank, then crowding
// distance. A point whose record is not `ok` (rejected, invalid, partial, failed) ranks below
// every ok point. Everything is drawn from one generator seeded by `seed`, and the records it
// reads do not depend on threads, so a run is reproducible and a resumed run replays the same
// generations, taking the points already evaluated from results.jsonl.
#pragma once

#include "explore/Sweep.h"

#include <map>
#include <optional>
#include <random>
#include <vector>

namespace npuc::explore {

/// Objective values of evaluated points by index, each minimised (maximised ones negated);
/// nullopt for a point that is not ok.
using Scores = std::map<int64_t, std::optional<std::vector<double>>>;

/// Non-dominated rank (0 = the front) of each score; nullopt scores get the largest rank.
std::vector<int> nondominatedRanks(const std::vector<std::optional<std::vector<double>>> &s);

class GeneticSearch {
public:
  explicit GeneticSearch(const SweepSpec &s);
  /// The first generation.
  std::vector<Point> initial();
  /// Given the scores of every point so far (the population's included), the next offspring.
  std::vector<Point> offspring(const Scores &scores);
  /// Keeps the best `population` of the population and `children` (call after scoring them).
  void select(const std::vector<Point> &children, const Scores &scores);
  const std::vector<Point> &population() const { return pop_; }

private:
  Point randomPoint();
  Point indexed(std::vector<int> choice) const;
  size_t tournament(const std::vector<int> &rank, const std::vector<double> &crowd);
  const SweepSpec &s_;
  std::mt19937_64 rng_;
  std::vector<Point> pop_;
};

} // namespace npuc::explore
