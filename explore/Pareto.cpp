// Pareto.cpp - the non-dominated filter (contract in Pareto.h). O(n^2 d): sweeps have
// thousands of points, not millions.
#include "explore/Pareto.h"

#include "support/Error.h"

namespace npuc::explore {

bool dominates(const std::vector<double> &a, const std::vector<double> &b) {
  bool better = false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] > b[i])
      return false;
    better = better || a[i] < b[i];
  }
  return better;
}

std::vector<size_t> paretoFront(const std::vector<std::vector<double>> &points) {
  std::vector<size_t> front;
  for (size_t i = 0; i < points.size(); ++i) {
    NPUC_ASSERT(points[i].size() == points[0].size(), "every point has every objective");
    bool dominated = false;
    for (size_t j = 0; j < points.size() && !dominated; ++j)
      dominated = j != i && dominates(points[j], points[i]);
    if (!dominated)
      front.push_back(i);
  }
  return front;
}

} // namespace npuc::explore
