// ParetoTest.cpp - the non-dominated filter on constructed sets whose fronts are known.
#include "explore/Pareto.h"

#include <gtest/gtest.h>

using namespace npuc::explore;

TEST(ExplorePareto, TwoObjectives) {
  // (cycles, area): 0, 1 and 3 trade off; 2 is dominated by 1; 4 by 3; 5 equals 1.
  const std::vector<std::vector<double>> pts = {{10, 9}, {20, 5}, {25, 5},
                                                {40, 1}, {40, 2}, {20, 5}};
  EXPECT_EQ(paretoFront(pts), (std::vector<size_t>{0, 1, 3, 5}));
}

TEST(ExplorePareto, ThreeObjectivesAndEdges) {
  // A point worse in two objectives and better in the third stays on the front.
  const std::vector<std::vector<double>> pts = {{1, 1, 9}, {2, 2, 1}, {2, 2, 9}, {3, 3, 3}};
  EXPECT_EQ(paretoFront(pts), (std::vector<size_t>{0, 1}));
  EXPECT_TRUE(paretoFront({}).empty());
  EXPECT_EQ(paretoFront({{5}}), (std::vector<size_t>{0}));
  // One objective: the minima.
  EXPECT_EQ(paretoFront({{3}, {1}, {2}, {1}}), (std::vector<size_t>{1, 3}));
}
