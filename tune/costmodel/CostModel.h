// CostModel.h - the auto-tuner's learned cost model (issue 16): fixed-length features of a
// schedule point, and an XGBoost model trained online on the cycles the simulator measured, which
// ranks a task's candidates before they are measured.
//
// As in Ansor, one model learns across every task of a tuning run: the features have the same
// length for every kernel family and task (a fixed list of decision names, the strategy as a
// one-hot, the family's analytic estimate, and task-size features the caller passes), and the
// training target is normalised per task so that a 1x1 conv of 10^4 cycles and a 3x3 conv of
// 10^7 cycles teach the same thing about tile shapes (see Objective). Scores only order the
// candidates of one task; they are not cycles.
//
// Deterministic: the same samples in the same order and the same seed give the same model and the
// same scores (XGBoost's hist method without row or column sampling, its pair sampling seeded,
// one thread: tests/tune checks it). A share of each update is held back from training so that
// heldOutQuality() measures the rank quality on points the model has not seen (the Spearman
// >= 0.8 goal).
#pragma once

#include "npu/schedule/Space.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace npuc::tune {

/// Every decision name any kernel family's space uses (npu/kernels/KernelSpaces.h), sorted. A
/// test enumerates each family's decisions and asserts that this list is exactly their union;
/// featurize() asserts on a name missing here.
const std::vector<std::string> &knownDecisions();

/// Features per known decision (see featurize), the strategy one-hot, the estimate.
inline constexpr int kFeaturesPerDecision = 3;
int scheduleFeatureCount();
/// Index of log2(1 + space.cost(s)) in a feature vector (what a cold model ranks by).
int costFeatureIndex();
/// Names of the features in order ("toh.log2", "toh.rel", "toh.present", "strategy.pool",
/// "cost.log2", then "task0", "task1", ... for `taskFeatures` of them): for dumps and tests.
std::vector<std::string> featureNames(int taskFeatures);

/// Features of the points of one space: computes once what every point shares (the decisions'
/// candidate values). Use it to featurize many points of one task; featurize() builds one per
/// call.
class Featurizer {
public:
  Featurizer(const npu::KernelSpace &space, std::vector<float> taskFeatures);
  std::vector<float> operator()(const npu::Schedule &s) const;

private:
  const npu::KernelSpace &space_;
  std::vector<float> task_;
  std::map<std::string, int64_t> largest_; // per decision of the space: its largest candidate
};

/// Fixed-length features of one point `s` of `space` (same length for every family and task, so
/// that one model learns across tasks): per known decision name log2(1+value), log2(1+value)
/// minus log2(1+its largest candidate here) (the tile as a share of its dimension, which carries
/// across task sizes) and a present-bit (all 0 when the family lacks the decision); a one-hot of
/// the strategy; log2(1 + space.cost(s)); then `taskFeatures` as given (e.g. log2 MACs, log2
/// bytes of the task's tensors: the caller passes the same number for every task).
std::vector<float> featurize(const npu::KernelSpace &space, const npu::Schedule &s,
                             const std::vector<float> &taskFeatures);

/// The task-size features this library suggests for a group, kTaskFeatures of them: log2(1 + x)
/// of the multiply-accumulates of its Conv/Gemm/MatMul nodes, of the elements of its activation
/// inputs, of its constants (each once) and of its outputs. Element counts rather than bytes: the
/// number format is the target's, the same for every task of a run.
inline constexpr int kTaskFeatures = 4;
std::vector<float> taskFeatures(const graph::Graph &g, const graph::FusedGroup &grp);

struct Sample {
  int task = 0;                // which task: rankings are compared within a task
  std::vector<float> features; // featurize()
  double cycles = 0;           // measured by the simulator
};

/// The training target (CostModel.cpp says which ranked best, measured).
enum class Objective {
  /// Regress log2(cycles) minus log2 of the point's own analytic estimate: the model learns the
  /// estimate's error, a scale-free quantity, and the score is the estimate corrected by it.
  EstimateResidual,
  /// Regress log2(cycles) minus the task's best measured log2(cycles) (Ansor's per-task
  /// normalised throughput, on a log scale).
  TaskRelative,
  /// XGBoost's rank:pairwise with one query group per task: only the order within a task.
  PairwiseRank,
};
const char *objectiveName(Objective o);

class CostModel {
public:
  struct Options {
    Objective objective = Objective::PairwiseRank;
    int rounds = 120; // boosting rounds per retraining
    int maxDepth = 4; // tree depth
    double learningRate = 0.1;
    /// XGBoost's nthread. 1: XGBoost opens an OpenMP parallel region per tree node, and on a
    /// busy 2-core machine (the measurer's threads, other jobs) a descheduled thread stalls every
    /// one of them: tune_tests' conv ranking took 36 s with 2 threads under load, 2.3 s with 1.
    int threads = 1;
    double holdBack = 0.2; // share of each update's samples kept out of training
  };

  explicit CostModel(uint64_t seed = 0);
  CostModel(uint64_t seed, const Options &options);
  ~CostModel();
  CostModel(const CostModel &) = delete;
  CostModel &operator=(const CostModel &) = delete;

  /// Adds measured samples and retrains (XGBoost, in process, deterministic for a seed): a
  /// seeded share of them (Options::holdBack) is kept for heldOutQuality() and never trained on.
  /// Every sample has the same feature length as the first one the model saw.
  void update(const std::vector<Sample> &samples);
  bool trained() const;
  /// Scores for candidates of ONE task: lower predicts fewer cycles (only the order matters).
  /// Before training: the analytic-estimate feature (so a cold model ranks like the heuristic).
  /// Not to be called from two threads at once (XGBoost returns predictions in a buffer of the
  /// model's own).
  std::vector<double> predict(const std::vector<std::vector<float>> &candidates) const;

  /// Rank quality on samples the last training did not see (the held-back share of every
  /// update): the mean over tasks with >= 5 held-back samples of the Spearman correlation between
  /// predicted score and measured cycles, and the number of tasks it averages. pooledSpearman is
  /// one correlation over all those tasks' held-back samples together, between the score and
  /// what it stands for across tasks: cycles for EstimateResidual (its score is a log2 cycle
  /// count), else cycles over the task's best measured cycles (for PairwiseRank, whose scores of
  /// different tasks share no scale, a rough figure). nullopt before training or while no task
  /// has 5 held-back samples.
  struct Quality {
    double meanTaskSpearman;
    int tasks;
    double pooledSpearman;
  };
  std::optional<Quality> heldOutQuality() const;

  /// Samples trained on and held back so far.
  size_t trainedSamples() const { return train_.size(); }
  size_t heldBackSamples() const { return held_.size(); }
  const Options &options() const { return opt_; }

private:
  void retrain();
  std::optional<Quality> measureQuality() const;
  /// Per task: the least log2(cycles) among all its samples (training and held back).
  double taskBest(int task) const;

  uint64_t seed_;
  Options opt_;
  uint64_t drawn_ = 0; // samples seen, for the seeded hold-back draw
  int width_ = -1;     // feature length, fixed by the first sample
  std::vector<Sample> train_, held_;
  std::map<int, double> best_; // task -> least log2(cycles) seen
  void *booster_ = nullptr;    // BoosterHandle (kept out of this header with xgboost's API)
  std::optional<Quality> quality_;
};

/// Spearman's rank correlation (average ranks for ties); nullopt for < 2 points or a constant
/// side.
std::optional<double> spearman(const std::vector<double> &a, const std::vector<double> &b);

} // namespace npuc::tune
