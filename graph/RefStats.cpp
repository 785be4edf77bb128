// RefStats.cpp - reference kernels of the statistics over a tensor's axes:
// MeanVarianceNormalization and the losses NegativeLogLikelihoodLoss and
// SoftmaxCrossEntropyLoss (RefInternal.h). Labels are fp32 integers, as every runtime integer
// tensor; one outside [0, C) that is not ignore_index is an error naming the node.
#include "graph/RefInternal.h"

#include "support/Error.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace npuc::graph::ref {

RefResult refMvn(const RefArgs &a) {
  const HostTensor &x = a.in(0);
  // Each element's group: its index with the normalised axes set to 0.
  std::vector<bool> reduced(x.shape.size(), false);
  for (int64_t ax : a.n.attrInts("axes"))
    reduced[static_cast<size_t>(ax)] = true;
  Shape keep = x.shape;
  for (size_t d = 0; d < keep.size(); ++d)
    if (reduced[d])
      keep[d] = 1;
  std::vector<int64_t> group(static_cast<size_t>(x.size()));
  for (int64_t i = 0; i < x.size(); ++i) {
    Index idx = unflatten(i, x.shape);
    for (size_t d = 0; d < idx.size(); ++d)
      if (reduced[d])
        idx[d] = 0;
    group[static_cast<size_t>(i)] = flatten(idx, keep);
  }
  auto groups = static_cast<size_t>(numElements(keep));
  std::vector<double> mean(groups, 0.0), var(groups, 0.0);
  double count = static_cast<double>(x.size()) / static_cast<double>(groups);
  for (int64_t i = 0; i < x.size(); ++i)
    mean[static_cast<size_t>(group[size_t(i)])] += x.data[i] / count;
  for (int64_t i = 0; i < x.size(); ++i) {
    double dev = x.data[i] - mean[static_cast<size_t>(group[size_t(i)])];
    var[static_cast<size_t>(group[size_t(i)])] += dev * dev / count;
  }
  // ONNX's function body: (X - E[X]) / (sqrt(E[X^2] - E[X]^2) + 1e-9).
  HostTensor out(x.shape);
  for (int64_t i = 0; i < x.size(); ++i) {
    auto gi = static_cast<size_t>(group[size_t(i)]);
    out.data[i] = static_cast<float>((x.data[i] - mean[gi]) / (std::sqrt(var[gi]) + 1e-9));
  }
  return {out};
}

namespace {

// log(softmax(x)) along axis 1 of [N, C, inner...], the log_prob SoftmaxCrossEntropyLoss feeds
// to its likelihood.
HostTensor logSoftmaxAxis1(const HostTensor &x) {
  const int64_t N = x.shape[0], C = x.shape[1], inner = x.size() / std::max<int64_t>(N * C, 1);
  HostTensor out(x.shape);
  for (int64_t b = 0; b < N; ++b)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t c) { return (b * C + c) * inner + i; };
      double mx = -std::numeric_limits<double>::infinity(), sum = 0;
      for (int64_t c = 0; c < C; ++c)
        mx = std::max(mx, static_cast<double>(x.data[at(c)]));
      for (int64_t c = 0; c < C; ++c)
        sum += std::exp(x.data[at(c)] - mx);
      for (int64_t c = 0; c < C; ++c)
        out.data[at(c)] = static_cast<float>(x.data[at(c)] - mx - std::log(sum));
    }
  return out;
}

} // namespace

// NegativeLogLikelihoodLoss(input = log-probabilities, target, weight) and
// SoftmaxCrossEntropyLoss(scores, labels, weights) = the former on LogSoftmax(scores, axis 1),
// with log_prob as its optional second output. loss[n, d...] = -input[n, t, d...] * weight[t]
// with t = target[n, d...]; an element whose label is ignore_index has loss and weight 0;
// reduction mean divides the sum by the sum of the weights.
RefResult refLoss(const RefArgs &a) {
  const Node &n = a.n;
  const bool sce = n.kind == OpKind::SoftmaxCrossEntropyLoss;
  HostTensor logp = sce ? logSoftmaxAxis1(a.in(0)) : a.in(0);
  const HostTensor &t = a.in(1);
  const HostTensor *w = a.opt(2);
  const int64_t N = logp.shape[0], C = logp.shape[1];
  const int64_t inner = logp.size() / std::max<int64_t>(N * C, 1);
  const bool hasIgnore = n.hasAttr("ignore_index");
  const int64_t ignore = n.attrInt("ignore_index", 0);
  const std::string reduction = n.attrString("reduction", "mean");
  HostTensor perElem(t.shape);
  double sum = 0, weights = 0;
  for (int64_t b = 0; b < N; ++b)
    for (int64_t i = 0; i < inner; ++i) {
      float label = t.data[b * inner + i];
      if (hasIgnore && label == static_cast<float>(ignore))
        continue;
      if (std::nearbyint(label) != label || label < 0 || label >= static_cast<float>(C))
        fail("node '{}' ({}): label {} is not an integer in [0, {}) nor ignore_index", n.name,
             n.kind, label, C);
      auto c = static_cast<int64_t>(label);
      double wt = w ? w->data[c] : 1.0;
      double loss = -logp.data[(b * C + c) * inner + i] * wt;
      perElem.data[b * inner + i] = static_cast<float>(loss);
      sum += loss;
      weights += wt;
    }
  RefResult res;
  if (reduction == "none")
    res.push_back(perElem);
  else
    res.push_back(HostTensor({}, {static_cast<float>(reduction == "sum" ? sum : sum / weights)}));
  if (sce && n.outputs.size() > 1)
    res.push_back(logp);
  return res;
}

} // namespace npuc::graph::ref
