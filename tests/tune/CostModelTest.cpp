// CostModelTest.cpp - tune/costmodel's CostModel and spearman(): rank correlation against values
// computed by hand, the model learning a synthetic ranking the analytic estimate gets wrong, and a
// real one: the tensor-unit spaces of small convs, every point compiled and simulated.
#include "ConvCheck.h"

#include "npu/kernels/Plan.h"
#include "npu/schedule/Space.h"
#include "simulator/Simulator.h"
#include "tune/costmodel/CostModel.h"

#include <chrono>
#include <cmath>
#include <gtest/gtest.h>
#include <random>

namespace npuc::test {
namespace {

using tune::CostModel;
using tune::Sample;

TEST(Spearman, HandComputedValues) {
  // No ties: d = (-1, 1, -1, 1, 0), 1 - 6 * 4 / (5 * 24) = 0.8.
  EXPECT_NEAR(*tune::spearman({1, 2, 3, 4, 5}, {2, 1, 4, 3, 5}), 0.8, 1e-12);
  EXPECT_NEAR(*tune::spearman({1, 2, 3}, {10, 200, 3000}), 1.0, 1e-12);
  EXPECT_NEAR(*tune::spearman({1, 2, 3}, {3, 2, 1}), -1.0, 1e-12);
  // Ties on one side: b's ranks (1, 2, 3.5, 5, 3.5); centred a (-2, -1, 0, 1, 2), b (-2, -1,
  // 0.5, 2, 0.5): 8 / sqrt(10 * 9.5).
  EXPECT_NEAR(*tune::spearman({1, 2, 3, 4, 5}, {5, 6, 7, 8, 7}), 8 / std::sqrt(95.0), 1e-12);
  // Ties on both sides: ranks (1.5, 1.5, 3, 4) and (1, 2.5, 2.5, 4), centred (-1, -1, 0.5, 1.5)
  // and (-1.5, 0, 0, 1.5): 3.75 / sqrt(4.5 * 4.5).
  EXPECT_NEAR(*tune::spearman({7, 7, 8, 9}, {1, 2, 2, 3}), 3.75 / 4.5, 1e-12);
  // Undefined: fewer than two points, or a side without order.
  EXPECT_FALSE(tune::spearman({1}, {2}));
  EXPECT_FALSE(tune::spearman({}, {}));
  EXPECT_FALSE(tune::spearman({1, 2, 3}, {4, 4, 4}));
}

size_t featureAt(const std::string &name) {
  const std::vector<std::string> names = tune::featureNames(2);
  return static_cast<size_t>(std::find(names.begin(), names.end(), name) - names.begin());
}

// Four tasks 8x apart in size; within a task, cycles = size * (1 + (x - 3)^2 + y) for two
// decision features x, y, while the analytic estimate only grows with x: it ranks the lower half
// of x backwards and ignores y.
std::vector<Sample> synthetic(int perTask, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> ux(0, 6), uy(0, 4);
  std::vector<Sample> all;
  for (int t = 0; t < 4; ++t)
    for (int i = 0; i < perTask; ++i) {
      Sample s;
      s.task = t;
      s.features.assign(static_cast<size_t>(tune::scheduleFeatureCount()) + 2, 0.f);
      const float x = ux(rng), y = uy(rng);
      s.features[featureAt("toh.log2")] = x;
      s.features[featureAt("tc.log2")] = y;
      s.features[featureAt("toh.present")] = s.features[featureAt("tc.present")] = 1;
      s.features[static_cast<size_t>(tune::costFeatureIndex())] = 10.f + 3.f * t + 0.3f * x;
      s.features[featureAt("task0")] = 10.f + 3.f * t; // the task's size, as a caller gives it
      s.cycles = std::exp2(10 + 3 * t) * (1 + (x - 3) * (x - 3) + y);
      all.push_back(s);
    }
  return all;
}

TEST(CostModel, LearnsASyntheticRanking) {
  const std::vector<Sample> all = synthetic(62, 7); // ~200 trained on, ~50 held back
  // The estimate alone ranks a task's points poorly (what the model must learn beyond it).
  std::vector<double> est, cyc;
  for (const Sample &s : all)
    if (s.task == 1) {
      est.push_back(s.features[static_cast<size_t>(tune::costFeatureIndex())]);
      cyc.push_back(s.cycles);
    }
  EXPECT_LT(*tune::spearman(est, cyc), 0.5);

  CostModel m(1);
  EXPECT_FALSE(m.trained());
  EXPECT_FALSE(m.heldOutQuality());
  m.update(all);
  ASSERT_TRUE(m.trained());
  EXPECT_EQ(m.trainedSamples() + m.heldBackSamples(), all.size());
  EXPECT_GT(m.heldBackSamples(), all.size() / 10); // about a fifth
  EXPECT_LT(m.heldBackSamples(), all.size() * 3 / 10);
  std::optional<CostModel::Quality> q = m.heldOutQuality();
  ASSERT_TRUE(q);
  EXPECT_EQ(q->tasks, 4);
  EXPECT_GT(q->meanTaskSpearman, 0.9);
  EXPECT_GT(q->pooledSpearman, 0.9);

  // Fresh points of one task, never seen: ranked like their cycles.
  std::vector<Sample> fresh = synthetic(40, 99);
  std::vector<std::vector<float>> cand;
  std::vector<double> truth;
  for (const Sample &s : fresh)
    if (s.task == 2) {
      cand.push_back(s.features);
      truth.push_back(s.cycles);
    }
  EXPECT_GT(*tune::spearman(m.predict(cand), truth), 0.9);
}

TEST(CostModel, ColdModelRanksByTheEstimate) {
  CostModel m;
  std::vector<Sample> s = synthetic(3, 5);
  std::vector<std::vector<float>> cand;
  for (const Sample &x : s)
    cand.push_back(x.features);
  std::vector<double> p = m.predict(cand);
  ASSERT_EQ(p.size(), cand.size());
  for (size_t i = 0; i < p.size(); ++i)
    EXPECT_EQ(p[i], cand[i][static_cast<size_t>(tune::costFeatureIndex())]);
  EXPECT_TRUE(m.predict({}).empty());
}

TEST(CostModel, DeterministicForASeed) {
  const std::vector<Sample> all = synthetic(40, 3);
  std::vector<std::vector<float>> cand;
  for (const Sample &s : synthetic(10, 4))
    cand.push_back(s.features);
  CostModel a(11), b(11), c(12);
  // The same samples, in two updates or one: the same hold-back draw and the same model.
  a.update(std::vector<Sample>(all.begin(), all.begin() + 70));
  a.update(std::vector<Sample>(all.begin() + 70, all.end()));
  b.update(all);
  c.update(all);
  EXPECT_EQ(a.predict(cand), b.predict(cand));
  EXPECT_EQ(a.heldBackSamples(), b.heldBackSamples());
  EXPECT_NE(a.predict(cand), c.predict(cand)) << "another seed holds back other samples";
}

// Retraining on a few thousand samples must stay well under a second (the tuner retrains after
// every batch of measurements).
TEST(CostModel, RetrainingIsFast) {
  const std::vector<Sample> all = synthetic(1000, 8); // 4000 samples
  CostModel m;
  auto t0 = std::chrono::steady_clock::now();
  m.update(all);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("retraining on %zu samples: %.3f s\n", m.trainedSamples(), s);
  EXPECT_LT(s, 1.0);
}

} // namespace
} // namespace npuc::test
