// Spearman.cpp - Spearman's rank correlation: Pearson's correlation of the two sides' ranks,
// tied values sharing their average rank (so that it is exact with ties, unlike 1 - 6 sum d^2 /
// (n (n^2 - 1)), which assumes none).
#include "tune/costmodel/CostModel.h"

#include "support/Error.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace npuc::tune {

namespace {

// Ranks 1..n, ties at the mean of the ranks they span.
std::vector<double> ranks(const std::vector<double> &v) {
  std::vector<size_t> order(v.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]])
      ++j;
    const double mean = (static_cast<double>(i) + static_cast<double>(j)) / 2 + 1;
    for (size_t k = i; k <= j; ++k)
      r[order[k]] = mean;
    i = j + 1;
  }
  return r;
}

} // namespace

std::optional<double> spearman(const std::vector<double> &a, const std::vector<double> &b) {
  NPUC_ASSERT(a.size() == b.size(), "spearman: both sides have one value per point");
  if (a.size() < 2)
    return std::nullopt;
  const std::vector<double> ra = ranks(a), rb = ranks(b);
  const double mean = (static_cast<double>(a.size()) + 1) / 2; // of 1..n, ties or not
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    sab += (ra[i] - mean) * (rb[i] - mean);
    saa += (ra[i] - mean) * (ra[i] - mean);
    sbb += (rb[i] - mean) * (rb[i] - mean);
  }
  if (saa == 0 || sbb == 0) // a constant side: the correlation is undefined
    return std::nullopt;
  return sab / std::sqrt(saa * sbb);
}

} // namespace npuc::tune
