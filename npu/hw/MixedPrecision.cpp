// MixedPrecision.cpp - the sensitivity analysis and the choice of groups kept wide (see
// MixedPrecision.h).
#include "npu/hw/MixedPrecision.h"

#include "graph/Passes.h"
#include "graph/Reference.h"
#include "support/Error.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace npuc::npu {

using graph::ValueId;

double outputCosine(const graph::Graph &g, const std::map<ValueId, HostTensor> &a,
                    const std::map<ValueId, HostTensor> &b) {
  double dot = 0, na = 0, nb = 0;
  for (ValueId v : g.outputs) {
    const std::vector<float> &x = a.at(v).data, &y = b.at(v).data;
    NPUC_ASSERT(x.size() == y.size(), "both runs computed the output whole");
    for (size_t i = 0; i < x.size(); ++i) {
      dot += double(x[i]) * double(y[i]);
      na += double(x[i]) * double(x[i]);
      nb += double(y[i]) * double(y[i]);
    }
  }
  if (na == 0 && nb == 0)
    return 1;
  if (na == 0 || nb == 0)
    return 0;
  return dot / std::sqrt(na * nb);
}

namespace {

// The runs the choice compares: every sample's fp32 values, and the model evaluated with a set
// of groups int8 (the worst cosine over the samples).
struct Runs {
  const graph::Graph &g;
  const QuantTable &q;
  std::vector<std::map<ValueId, HostTensor>> fp32;

  // The worst cosine with the groups `int8` names quantised, the groups before `from` (none of
  // them quantised) taken from the fp32 runs.
  double cosine(size_t from, const std::function<bool(size_t)> &int8) const {
    double worst = 1;
    for (const auto &ref : fp32) {
      std::map<ValueId, HostTensor> env = ref;
      evalQuantised(g, q, env, from, int8);
      worst = std::min(worst, outputCosine(g, ref, env));
    }
    return worst;
  }
};

// Which groups hold int8 with the groups `wide` kept wide: every NPU group that computes and is
// not wide, and every NPU group of views next to one of those; a view group between wide
// groups (or the graph's ends) moves to the CPU with them.
std::vector<bool> int8Groups(const graph::Graph &g, const std::set<size_t> &wide) {
  std::vector<bool> computes(g.groups.size(), false), out(g.groups.size(), false);
  std::map<ValueId, size_t> producer;
  for (size_t i = 0; i < g.groups.size(); ++i) {
    const graph::FusedGroup &grp = g.groups[i];
    computes[i] =
        grp.placement == graph::Placement::Npu && !graph::isViewOnly(g, grp) && !wide.count(i);
    out[i] = computes[i];
    for (ValueId v : grp.outputs)
      producer[v] = i;
  }
  for (size_t i = 0; i < g.groups.size(); ++i) {
    const graph::FusedGroup &grp = g.groups[i];
    if (grp.placement != graph::Placement::Npu || !graph::isViewOnly(g, grp))
      continue;
    for (ValueId v : grp.inputs)
      if (auto it = producer.find(v); it != producer.end() && computes[it->second])
        out[i] = true;
    for (size_t j = 0; j < g.groups.size(); ++j)
      for (ValueId v : g.groups[j].inputs)
        if (computes[j] &&
            std::find(grp.outputs.begin(), grp.outputs.end(), v) != grp.outputs.end())
          out[i] = true;
  }
  return out;
}

} // namespace

std::vector<int> viewsKeptWide(const graph::Graph &g, const std::vector<int> &wide) {
  std::set<size_t> w;
  for (int id : wide)
    w.insert(static_cast<size_t>(id));
  const std::vector<bool> int8 = int8Groups(g, w);
  std::vector<int> views;
  for (size_t i = 0; i < g.groups.size(); ++i)
    if (g.groups[i].placement == graph::Placement::Npu && graph::isViewOnly(g, g.groups[i]) &&
        !int8[i])
      views.push_back(g.groups[i].id);
  return views;
}

WideChoice chooseWideGroups(const graph::Graph &g, const QuantTable &q,
                            const std::vector<Sample> &samples, double target) {
  NPUC_ASSERT(!samples.empty(), "the accuracy is measured on at least one sample");
  Runs runs{g, q, {}};
  for (const Sample &s : samples)
    runs.fp32.push_back(graph::runReferenceAll(g, s));
  std::vector<size_t> candidates; // indices into g.groups
  for (size_t i = 0; i < g.groups.size(); ++i) {
    NPUC_ASSERT(g.groups[i].placement != graph::Placement::Unassigned, "groups are placed");
    if (g.groups[i].placement == graph::Placement::Npu && !graph::isViewOnly(g, g.groups[i]))
      candidates.push_back(i);
  }
  WideChoice c;
  // With the `k` most sensitive candidates wide (`order`), every other NPU group int8.
  std::vector<size_t> order;
  auto withWide = [&](size_t k) {
    const std::set<size_t> wide(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k));
    const std::vector<bool> int8 = int8Groups(g, wide);
    return runs.cosine(0, [&](size_t i) { return int8[i]; });
  };
  c.before = withWide(0);
  c.after = c.before;
  c.met = c.before >= target;
  if (c.met || candidates.empty())
    return c;
  for (size_t i : candidates)
    c.sensitivity[g.groups[i].id] = runs.cosine(i, [i](size_t j) { return j == i; });
  order = candidates;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return c.sensitivity.at(g.groups[a].id) < c.sensitivity.at(g.groups[b].id);
  });
  size_t lo = 1, hi = order.size(); // the answer is in [lo, hi] when hi meets the target
  double atHi = withWide(hi);
  if (atHi >= target)
    while (lo < hi) {
      const size_t mid = (lo + hi) / 2;
      const double at = withWide(mid);
      if (at >= target) {
        hi = mid;
        atHi = at;
      } else {
        lo = mid + 1;
      }
    }
  for (size_t k = 0; k < hi; ++k)
    c.groups.push_back(g.groups[order[k]].id);
  c.after = atHi;
  c.met = atHi >= target;
  return c;
}

} // namespace npuc::npu
