// Features.cpp - featurize(): a schedule point as a fixed-length vector (CostModel.h).
#include "tune/costmodel/CostModel.h"

#include "support/Error.h"

#include <algorithm>
#include <cmath>

namespace npuc::tune {

namespace {

// The strategies in Strategy's order (one-hot slots); View is the last enumerator.
constexpr int kStrategies = static_cast<int>(npu::Strategy::View) + 1;

int decisionSlot(const std::string &name) {
  const std::vector<std::string> &known = knownDecisions();
  auto it = std::lower_bound(known.begin(), known.end(), name);
  NPUC_ASSERT(it != known.end() && *it == name,
              "decision '" + name + "' is missing from tune/costmodel's knownDecisions()");
  return static_cast<int>(it - known.begin());
}

float log2p1(double v) {
  return static_cast<float>(std::log2(1.0 + std::max(0.0, v)));
}

} // namespace

const std::vector<std::string> &knownDecisions() {
  // The union of npu/kernels/KernelSpaces.h's decisions, sorted (binary search above). A
  // function-local constant, not a cache: it is initialised once and never changes.
  static const std::vector<std::string> names = {"buffers", "chunked", "depth", "elems", "khg",
                                                 "kouter",  "rows",    "tc",    "tic",   "tk",
                                                 "tm",      "tn",      "toc",   "toh",   "tp"};
  return names;
}

int scheduleFeatureCount() {
  return static_cast<int>(knownDecisions().size()) * kFeaturesPerDecision + kStrategies + 1;
}

int costFeatureIndex() {
  return scheduleFeatureCount() - 1;
}

std::vector<std::string> featureNames(int taskFeatures) {
  std::vector<std::string> names;
  for (const std::string &d : knownDecisions()) {
    names.push_back(d + ".log2");
    names.push_back(d + ".rel");
    names.push_back(d + ".present");
  }
  for (int s = 0; s < kStrategies; ++s)
    names.push_back(std::string("strategy.") + npu::strategyName(static_cast<npu::Strategy>(s)));
  names.push_back("cost.log2");
  for (int i = 0; i < taskFeatures; ++i)
    names.push_back("task" + std::to_string(i));
  return names;
}

Featurizer::Featurizer(const npu::KernelSpace &space, std::vector<float> taskFeatures)
    : space_(space), task_(std::move(taskFeatures)) {
  for (const npu::Decision &d : space.decisions()) {
    decisionSlot(d.name); // a name the model does not know is a bug here, not at the first point
    int64_t most = 0;
    for (int64_t v : d.values)
      most = std::max(most, v);
    largest_[d.name] = most;
  }
}

std::vector<float> Featurizer::operator()(const npu::Schedule &s) const {
  std::vector<float> f(static_cast<size_t>(scheduleFeatureCount()), 0.f);
  for (const auto &[name, value] : s.decisions) {
    const size_t at = static_cast<size_t>(decisionSlot(name) * kFeaturesPerDecision);
    auto most = largest_.find(name);
    NPUC_ASSERT(most != largest_.end(),
                "the point " + s.str() + " has a decision its space does not list");
    f[at] = log2p1(static_cast<double>(value));
    f[at + 1] = f[at] - log2p1(static_cast<double>(most->second));
    f[at + 2] = 1.f;
  }
  const size_t strategies = knownDecisions().size() * kFeaturesPerDecision;
  NPUC_ASSERT(s.strategy == space_.strategy(),
              "featurize: the point " + s.str() + " is not of its space's strategy");
  f[strategies + static_cast<size_t>(s.strategy)] = 1.f;
  f[static_cast<size_t>(costFeatureIndex())] = log2p1(space_.cost(s));
  f.insert(f.end(), task_.begin(), task_.end());
  return f;
}

std::vector<float> featurize(const npu::KernelSpace &space, const npu::Schedule &s,
                             const std::vector<float> &taskFeatures) {
  return Featurizer(space, taskFeatures)(s);
}

} // namespace npuc::tune
