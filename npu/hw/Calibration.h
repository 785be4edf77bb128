// Calibration.h - how an int8 activation's clipping threshold (its scale is threshold / 127) is
// chosen from the magnitudes a tensor held over a calibration set:
//
//   max         the largest |x| (nothing clips; one outlier coarsens every step)
//   percentile  a quantile of |x| (percentile:99.99 clips the largest 0.01%)
//   entropy     the threshold whose 128-level quantisation of the |x| histogram loses the least
//               information, the minimum KL divergence (TensorRT's entropy calibrator, MXNet's
//               and ONNX Runtime's Entropy method)
//   mse         the threshold of least expected squared error, rounding inside the range plus
//               clipping beyond it
//
// Max needs one reference run per sample; the others histogram |x| over [0, max] in a second run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace npuc::npu {

enum class CalibrationMethod { Max, Percentile, Entropy, Mse };

struct CalibrationSpec {
  CalibrationMethod method = CalibrationMethod::Max;
  double percentile = 99.99; // Percentile: the quantile of |x| kept, in percent, in (0, 100]
  /// "max", "percentile:99.99", "entropy" or "mse" (what parseCalibrationMethod reads back).
  std::string name() const;
};

/// Parses "max", "percentile" (99.99) or "percentile:Q" with 0 < Q <= 100, "entropy" or "mse";
/// anything else is an error naming `option` and the accepted forms.
CalibrationSpec parseCalibrationMethod(const std::string &text, const std::string &option);

/// A histogram of |x| over [0, limit] in kBins equal bins, accumulated over a calibration set.
/// Values that are not finite are left out (a max-based scale of them is the default one anyway).
class MagnitudeHistogram {
public:
  static constexpr int kBins = 2048;
  explicit MagnitudeHistogram(float limit);
  void add(const std::vector<float> &xs);
  float limit() const { return limit_; }
  double binWidth() const { return static_cast<double>(limit_) / kBins; }
  const std::vector<double> &counts() const { return counts_; }
  double total() const { return total_; }

private:
  float limit_;
  std::vector<double> counts_;
  double total_ = 0;
};

/// The clipping threshold `spec` chooses from `h`, in (0, h.limit()]; h.limit() for Max and for
/// a histogram with nothing in it (or a limit of 0).
float chooseThreshold(const MagnitudeHistogram &h, const CalibrationSpec &spec);

} // namespace npuc::npu
