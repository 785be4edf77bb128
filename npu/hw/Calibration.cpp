// Calibration.cpp - choosing an int8 clipping threshold from a magnitude histogram
// (Calibration.h).
#include "npu/hw/Calibration.h"

#include "support/Error.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace npuc::npu {

std::string CalibrationSpec::name() const {
  switch (method) {
  case CalibrationMethod::Max:
    return "max";
  case CalibrationMethod::Percentile:
    return fmt::format("percentile:{:g}", percentile);
  case CalibrationMethod::Entropy:
    return "entropy";
  case CalibrationMethod::Mse:
    return "mse";
  }
  NPUC_ASSERT(false, "every calibration method is named");
  return "";
}

CalibrationSpec parseCalibrationMethod(const std::string &text, const std::string &option) {
  CalibrationSpec s;
  const std::string forms = "max, percentile, percentile:Q (0 < Q <= 100), entropy or mse";
  if (text == "max") {
    s.method = CalibrationMethod::Max;
  } else if (text == "entropy") {
    s.method = CalibrationMethod::Entropy;
  } else if (text == "mse") {
    s.method = CalibrationMethod::Mse;
  } else if (text == "percentile" || text.rfind("percentile:", 0) == 0) {
    s.method = CalibrationMethod::Percentile;
    if (text != "percentile") {
      const std::string q = text.substr(std::string("percentile:").size());
      size_t used = 0;
      double v = std::numeric_limits<double>::quiet_NaN();
      try {
        v = std::stod(q, &used);
      } catch (const std::exception &) {
        used = 0;
      }
      if (q.empty() || used != q.size() || !(v > 0 && v <= 100))
        fail("{} '{}': the quantile '{}' is not a number in (0, 100]; expected {}", option, text, q,
             forms);
      s.percentile = v;
    }
  } else {
    fail("{} '{}': unknown calibration method; expected {}", option, text, forms);
  }
  return s;
}

MagnitudeHistogram::MagnitudeHistogram(float limit)
    : limit_(std::isfinite(limit) && limit > 0 ? limit : 0.0f),
      counts_(static_cast<size_t>(kBins), 0.0) {}

void MagnitudeHistogram::add(const std::vector<float> &xs) {
  if (limit_ <= 0)
    return;
  const double perBin = kBins / static_cast<double>(limit_);
  for (float x : xs) {
    if (!std::isfinite(x))
      continue;
    const double b = std::fabs(static_cast<double>(x)) * perBin;
    counts_[static_cast<size_t>(std::min<double>(b, kBins - 1))] += 1;
    total_ += 1;
  }
}

namespace {

// The smallest threshold (an upper bin edge) below which `percent` of the magnitudes lie.
float percentileThreshold(const MagnitudeHistogram &h, double percent) {
  const double want = h.total() * percent / 100.0;
  double seen = 0;
  for (int i = 0; i < MagnitudeHistogram::kBins; ++i) {
    seen += h.counts()[static_cast<size_t>(i)];
    if (seen >= want)
      return static_cast<float>((i + 1) * h.binWidth());
  }
  return h.limit();
}

// MXNet's _smooth_distribution: a little mass moved from the non-zero bins onto the zero ones,
// so that the divergence is finite. False when every bin is zero.
bool smooth(std::vector<double> &p) {
  constexpr double kEps = 1e-4;
  const double zeros = static_cast<double>(std::count(p.begin(), p.end(), 0.0));
  const double nonZeros = static_cast<double>(p.size()) - zeros;
  if (nonZeros == 0)
    return false;
  const double eps1 = kEps * zeros / nonZeros;
  for (double &x : p)
    x = x == 0 ? kEps : std::max(x - eps1, kEps * 1e-3);
  return true;
}

// KL(P || Q) of two unnormalised distributions of the same length.
double klDivergence(const std::vector<double> &p, const std::vector<double> &q) {
  double sp = 0, sq = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    sp += p[i];
    sq += q[i];
  }
  double kl = 0;
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] > 0)
      kl += p[i] / sp * std::log((p[i] / sp) / (q[i] / sq));
  return kl;
}

// The divergence between the magnitudes clipped to the first `kept` bins (P: the outliers
// counted in the last kept bin) and their quantisation to 128 levels (Q: each level's count
// spread evenly over the bins it merges that were not empty).
double clippedDivergence(const std::vector<double> &hist, int kept) {
  constexpr int kLevels = 128;
  std::vector<double> p(hist.begin(), hist.begin() + kept);
  for (size_t i = static_cast<size_t>(kept); i < hist.size(); ++i)
    p.back() += hist[i];
  std::vector<double> q(static_cast<size_t>(kept), 0.0);
  const int merged = kept / kLevels;
  for (int j = 0; j < kLevels; ++j) {
    const int lo = j * merged, hi = j == kLevels - 1 ? kept : lo + merged;
    double sum = 0, nonEmpty = 0;
    for (int k = lo; k < hi; ++k) {
      sum += hist[static_cast<size_t>(k)];
      nonEmpty += hist[static_cast<size_t>(k)] != 0;
    }
    for (int k = lo; k < hi; ++k)
      if (hist[static_cast<size_t>(k)] != 0)
        q[static_cast<size_t>(k)] = sum / nonEmpty;
  }
  if (!smooth(p) || !smooth(q))
    return std::numeric_limits<double>::infinity();
  return klDivergence(p, q);
}

float entropyThreshold(const MagnitudeHistogram &h) {
  // Every 8th bin count from 128 (one bin per level) up to all of them: the threshold moves in
  // steps of 1/256 of the range, and a tensor costs about a million operations.
  constexpr int kStride = 8;
  double best = std::numeric_limits<double>::infinity();
  int bestKept = MagnitudeHistogram::kBins;
  for (int kept = 128; kept <= MagnitudeHistogram::kBins; kept += kStride) {
    const double d = clippedDivergence(h.counts(), kept);
    if (d < best) {
      best = d;
      bestKept = kept;
    }
  }
  return static_cast<float>(bestKept * h.binWidth());
}

// The expected squared error of symmetric int8 with threshold T (step s = T / 127), a bin's
// values taken at its centre c: c^2 where they round to 0 (c < s/2), s^2/12 (uniform rounding
// error) elsewhere inside the range, (c - T)^2 where they clip. Prefix sums make each candidate
// O(1).
float mseThreshold(const MagnitudeHistogram &h) {
  const int n = MagnitudeHistogram::kBins;
  const double w = h.binWidth();
  std::vector<double> cnt(n + 1, 0), c1(n + 1, 0), c2(n + 1, 0); // prefix sums of h, hc, hc^2
  for (int b = 0; b < n; ++b) {
    const double c = (b + 0.5) * w, k = h.counts()[static_cast<size_t>(b)];
    cnt[b + 1] = cnt[b] + k;
    c1[b + 1] = c1[b] + k * c;
    c2[b + 1] = c2[b] + k * c * c;
  }
  double best = std::numeric_limits<double>::infinity();
  int bestBins = n;
  for (int t = 1; t <= n; ++t) { // T = t bins: bins [0, t) inside, [t, n) clipped
    const double T = t * w, s = T / 127;
    const int zero = std::min(t, static_cast<int>(std::ceil(s / 2 / w - 0.5))); // c < s/2
    const double inside = c2[zero] + (cnt[t] - cnt[zero]) * s * s / 12;
    const double clipped = (c2[n] - c2[t]) - 2 * T * (c1[n] - c1[t]) + T * T * (cnt[n] - cnt[t]);
    if (inside + clipped < best) {
      best = inside + clipped;
      bestBins = t;
    }
  }
  return static_cast<float>(bestBins * w);
}

} // namespace

float chooseThreshold(const MagnitudeHistogram &h, const CalibrationSpec &spec) {
  if (h.limit() <= 0 || h.total() == 0)
    return h.limit();
  switch (spec.method) {
  case CalibrationMethod::Max:
    return h.limit();
  case CalibrationMethod::Percentile:
    return percentileThreshold(h, spec.percentile);
  case CalibrationMethod::Entropy:
    return entropyThreshold(h);
  case CalibrationMethod::Mse:
    return mseThreshold(h);
  }
  NPUC_ASSERT(false, "every calibration method chooses a threshold");
  return h.limit();
}

} // namespace npuc::npu
