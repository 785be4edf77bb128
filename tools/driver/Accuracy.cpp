// Accuracy.cpp - a run's host values against the reference executor's (contract in Accuracy.h).
#include "tools/driver/Accuracy.h"

#include "support/Error.h"
#include "tools/driver/Report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

namespace npuc::driver {

namespace {

using graph::ValueId;

// "group 3 'conv1' (Conv+Relu)" for the group whose nodes produce value v.
std::string producerOf(const graph::Graph &g, ValueId v) {
  const graph::NodeId p = g.value(v).producer;
  for (const graph::FusedGroup &grp : g.groups) {
    if (std::find(grp.nodes.begin(), grp.nodes.end(), p) == grp.nodes.end())
      continue;
    return fmt::format("group {} '{}' ({})", grp.id, grp.name, fmt::join(groupOps(g, grp), "+"));
  }
  return "-";
}

// The reference's value for each name: its values by their names, and the graph outputs by the
// names the model declares for them.
std::map<std::string, const HostTensor *> refByName(const graph::Graph &model,
                                                    const std::map<ValueId, HostTensor> &ref) {
  std::map<std::string, const HostTensor *> out;
  for (const auto &[v, t] : ref)
    if (!model.value(v).isConstant())
      out[model.value(v).name] = &t;
  for (size_t i = 0; i < model.outputs.size(); ++i)
    if (auto it = ref.find(model.outputs[i]); it != ref.end())
      out[model.outputName(i)] = &it->second;
  return out;
}

std::string formatDb(double db) {
  return std::isinf(db) ? "exact" : fmt::format("{:.1f}", db);
}

} // namespace

TensorError measureError(const HostTensor &got, const HostTensor &ref) {
  NPUC_ASSERT(got.size() == ref.size(), "compared tensors have the same element count");
  TensorError e;
  e.shape = ref.shape;
  double dot = 0, gg = 0, rr = 0, ee = 0, sumAbs = 0;
  int64_t finite = 0;
  for (int64_t i = 0; i < ref.size(); ++i) {
    const double a = got.valueAt(i), b = ref.valueAt(i);
    if (!std::isfinite(a) || !std::isfinite(b)) {
      // Equal infinities, or NaN against NaN, agree.
      if (!(a == b || (std::isnan(a) && std::isnan(b))))
        ++e.nonFinite;
      continue;
    }
    const double d = std::fabs(a - b);
    ++finite;
    e.maxAbsErr = std::max(e.maxAbsErr, d);
    e.refMaxAbs = std::max(e.refMaxAbs, std::fabs(b));
    sumAbs += d;
    dot += a * b;
    gg += a * a;
    rr += b * b;
    ee += d * d;
  }
  e.meanAbsErr = finite ? sumAbs / static_cast<double>(finite) : 0.0;
  if (gg > 0 && rr > 0)
    e.cosine = dot / std::sqrt(gg * rr);
  else if (gg > 0 || rr > 0)
    e.cosine = 0; // one side all zeros, the other not
  if (ee > 0)
    e.snrDb = rr > 0 ? 10.0 * std::log10(rr / ee) : -std::numeric_limits<double>::infinity();
  return e;
}

AccuracyReport compareWithReference(const CompiledModel &m, const RunResult &run,
                                    const graph::Graph &model,
                                    const std::map<ValueId, HostTensor> &ref) {
  const graph::Graph &g = m.graph;
  std::map<std::string, const HostTensor *> byName = refByName(model, ref);
  std::map<ValueId, std::string> outputName;
  for (size_t i = 0; i < g.outputs.size(); ++i)
    outputName.emplace(g.outputs[i], g.outputName(i));
  AccuracyReport r;
  // Outputs the run computed, and how many of them the model has: an output that is an input
  // passed through or a constant is not a host value, and is no evidence either way.
  int computedOutputs = 0, matchedOutputs = 0;
  for (const HostValue &hv : run.hostValues) {
    const graph::Value &val = g.value(hv.value);
    auto out = outputName.find(hv.value);
    const std::string name = out != outputName.end() ? out->second : val.name;
    computedOutputs += out != outputName.end();
    auto it = byName.find(name);
    if (it == byName.end()) {
      r.unmatched.push_back(name + ": the model has no value of this name (made by a graph pass)");
      continue;
    }
    if (it->second->shape != hv.tensor.shape) {
      r.unmatched.push_back(fmt::format("{}: shape {} here, {} in the model", name,
                                        shapeToString(hv.tensor.shape),
                                        shapeToString(it->second->shape)));
      continue;
    }
    TensorError e = measureError(hv.tensor, *it->second);
    e.name = name;
    e.segment = hv.segment;
    e.npu = m.segments.at(size_t(hv.segment)).npu;
    e.producer = producerOf(g, hv.value);
    e.graphOutput = out != outputName.end();
    matchedOutputs += e.graphOutput;
    r.tensors.push_back(std::move(e));
  }
  if (computedOutputs > 0 && matchedOutputs == 0)
    fail("no output of the package ('{}', ...) is a value of this model: was the package "
         "compiled from it?",
         g.outputName(0));
  return r;
}

nlohmann::json accuracyJson(const AccuracyReport &r) {
  nlohmann::json tensors = nlohmann::json::array();
  for (const TensorError &e : r.tensors)
    tensors.push_back({{"name", e.name},
                       {"segment", e.segment},
                       {"placement", e.npu ? "npu" : "cpu"},
                       {"producer", e.producer},
                       {"graph_output", e.graphOutput},
                       {"shape", e.shape},
                       {"max_abs_err", e.maxAbsErr},
                       {"mean_abs_err", e.meanAbsErr},
                       {"ref_max_abs", e.refMaxAbs},
                       {"cosine", e.cosine},
                       // JSON has no infinity: an exact match has no SNR.
                       {"snr_db", std::isfinite(e.snrDb) ? nlohmann::json(e.snrDb) : nullptr},
                       {"non_finite_mismatches", e.nonFinite}});
  return {{"tensors", tensors}, {"unmatched", r.unmatched}};
}

std::string formatAccuracy(const AccuracyReport &r) {
  std::string s = "accuracy against the fp32 reference (npuc ref), every value held on the host:\n";
  auto label = [](const TensorError &e) { return e.name + (e.graphOutput ? " (out)" : ""); };
  size_t w = 5;
  for (const TensorError &e : r.tensors)
    w = std::max(w, label(e).size());
  s += fmt::format("  {:>3} {:<4} {:<{}} {:>10} {:>10} {:>9} {:>8}  {}\n", "seg", "on", "value", w,
                   "max|err|", "max|ref|", "cosine", "SNR dB", "computed by");
  const TensorError *worst = nullptr;
  for (const TensorError &e : r.tensors) {
    s += fmt::format("  {:>3} {:<4} {:<{}} {:>10.3g} {:>10.3g} {:>9.6f} {:>8}  {}{}\n", e.segment,
                     e.npu ? "npu" : "cpu", label(e), w, e.maxAbsErr, e.refMaxAbs, e.cosine,
                     formatDb(e.snrDb), e.producer,
                     e.nonFinite ? fmt::format(", {} non-finite mismatches", e.nonFinite) : "");
    if (!worst || e.snrDb < worst->snrDb)
      worst = &e;
  }
  for (const std::string &u : r.unmatched)
    s += "  not compared: " + u + "\n";
  if (worst)
    s += fmt::format("  lowest SNR: {} ({} dB, cosine {:.6f}), computed by {}\n", worst->name,
                     formatDb(worst->snrDb), worst->cosine, worst->producer);
  return s;
}

} // namespace npuc::driver
