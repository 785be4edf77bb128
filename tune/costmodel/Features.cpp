// Features.cpp - featurize(): a schedule point as a fixed-length vector (CostModel.h).
#include "tune/costmodel/CostModel.h"

#include "support/Error.h"

#include <algorithm>
#include <cmath>
#include <set>

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
  static const std::vector<std::string> names = {
      "buffers", "chunked", "depth", "elems", "khg", "kouter", "kv",  "nin", "rowouter", "rows",
      "tc",      "tic",     "tk",    "tk2",   "tm",  "tn",     "toc", "toh", "tp"};
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

namespace {

// The multiply-accumulates of one node (0 for nodes that do none).
double macs(const graph::Graph &g, const graph::Node &n) {
  if (n.outputs.empty() || n.inputs.size() < 2)
    return 0;
  const double out = double(numElements(g.value(n.outputs[0]).shape));
  const Shape &a = g.value(n.inputs[0]).shape, &b = g.value(n.inputs[1]).shape;
  switch (n.kind) {
  case graph::OpKind::Conv: // weights [OC, C / group, kernel...]: one MAC per weight and output
    return b.empty() ? 0 : out * double(numElements(b) / std::max<int64_t>(b[0], 1));
  case graph::OpKind::Gemm:
    return a.size() == 2 ? out * double(a[n.attrInt("transA", 0) ? 0 : 1]) : 0;
  case graph::OpKind::MatMul:
    return a.empty() ? 0 : out * double(a.back());
  default:
    return 0;
  }
}

} // namespace

std::vector<float> taskFeatures(const graph::Graph &g, const graph::FusedGroup &grp) {
  double mac = 0, outputs = 0, inputs = 0, constants = 0;
  std::set<graph::ValueId> seen;
  for (graph::NodeId id : grp.nodes) {
    const graph::Node &n = g.node(id);
    mac += macs(g, n);
    for (graph::ValueId v : n.inputs)
      if (v != graph::kNoValue && g.value(v).isConstant() && seen.insert(v).second)
        constants += double(numElements(g.value(v).shape));
  }
  for (graph::ValueId v : grp.inputs)
    inputs += double(numElements(g.value(v).shape));
  for (graph::ValueId v : grp.outputs)
    outputs += double(numElements(g.value(v).shape));
  return {log2p1(mac), log2p1(inputs), log2p1(constants), log2p1(outputs)};
}

std::vector<float> featurize(const npu::KernelSpace &space, const npu::Schedule &s,
                             const std::vector<float> &taskFeatures) {
  return Featurizer(space, taskFeatures)(s);
}

} // namespace npuc::tune
