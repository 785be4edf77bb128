// Search.h - the search over one task's schedule space (Ansor's per-task policy).
//
// Each sketch (a strategy that may run the group: Task::sketches) has a space built in the
// measuring context (measuringContext: the whole window, every tensor in DRAM). A round of
// proposals builds a pool of legal points nobody has measured yet from
//   - random sampling: each decision uniform over its values, kept when whyIllegal is nullopt;
//     a sketch whose random points are mostly illegal (a sparse space) draws from a fixed-seed
//     enumerate() sample instead;
//   - evolution: mutation of one decision of a good measured point (to a neighbouring value or a
//     random one) and crossover of two measured points of one sketch (each decision from either
//     parent), both kept only when legal;
// leaves out points whose analytic estimate is several times the task's best measured cycles,
// then ranks the pool with the learned cost model and proposes the best, plus an epsilon share
// drawn at random from the rest (so that a model that is wrong somewhere still sees data there).
// Every random choice comes from one mt19937_64 seeded by the tuner's seed and the task's key:
// the proposals are the same in every run with the same seed and the same measurements. The
// measured points (this run's and the log's) are the memory: nothing is proposed twice.
#pragma once

#include "tune/Task.h"
#include "tune/costmodel/CostModel.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace npuc::tune {

struct SearchOptions {
  size_t poolPerProposal = 8; // pool size: this many points per proposed one
  double epsilon = 0.1;       // share of the proposals drawn at random from the ranked-out rest
  size_t population = 8;      // the best measured points evolution starts from
};

class TaskSearch {
public:
  /// `m` and `hw` must outlive the search. `taskFeatures`: what featurize() adds per task.
  TaskSearch(const driver::CompiledModel &m, const npu::Hw &hw, const Task &t,
             std::vector<float> taskFeatures, uint64_t seed, SearchOptions o = {});
  ~TaskSearch();

  /// A measured point, from this run or the log (failed points have no cycles).
  void observe(const npu::Schedule &s, std::optional<int64_t> cycles);
  bool measured(const npu::Schedule &s) const { return seen_.count(s.str()) != 0; }
  std::optional<int64_t> best() const { return best_; }
  const std::optional<npu::Schedule> &bestSchedule() const { return bestSchedule_; }

  /// Up to `n` legal points not measured yet, best-ranked first; empty when a round found none
  /// (every legal point measured, see exhausted(), or none drawn at random in a large sparse
  /// space, or every new one pruned).
  std::vector<npu::Schedule> propose(size_t n, const CostModel &model);
  /// Every sketch has been enumerated and all its legal points measured.
  bool exhausted() const;

  /// featurize() of a point of one of the sketches (nullopt for another strategy, or a point
  /// its space calls illegal in the measuring context).
  std::optional<std::vector<float>> features(const npu::Schedule &s) const;

private:
  struct Sketch;
  std::optional<npu::Schedule> randomPoint(Sketch &k);
  std::optional<npu::Schedule> mutate(const npu::Schedule &parent);
  std::optional<npu::Schedule> crossover(const npu::Schedule &a, const npu::Schedule &b);
  std::vector<npu::Schedule> candidatePool(size_t size);
  /// The point's analytic estimate is far above the best measured cycles (kPruneFactor).
  bool hopeless(const npu::Schedule &s) const;
  Sketch *sketchOf(npu::Strategy s) const;
  size_t pick(size_t n) { return static_cast<size_t>(rng_() % n); }

  std::vector<std::unique_ptr<Sketch>> sketches_;
  std::vector<float> taskFeatures_;
  SearchOptions o_;
  std::mt19937_64 rng_;
  std::set<std::string> seen_;                          // Schedule::str() of measured points
  std::vector<std::pair<int64_t, npu::Schedule>> good_; // measured, by cycles then order
  std::optional<int64_t> best_;
  std::optional<npu::Schedule> bestSchedule_;
};

} // namespace npuc::tune
