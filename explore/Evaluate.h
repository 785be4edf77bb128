// Evaluate.h - one design point, compiled and simulated for every model of the sweep.
//
// For each point: the point's target description is loaded (a description the loader rejects
// makes the point `invalid`, with the loader's message); each model is compiled for it (the
// compile `npuc compile` runs, from the model prepared once for the sweep: PreparedModels; a model
// that does not import or compile makes the point `failed`, with the error), timing-only (the
// constants' bytes are not packed: CompileOptions::timingOnly), and every NPU segment is
// simulated timing-only (the
// cycle count and the action counts are exactly a functional run's: docs/SIMULATOR.md). A group
// of a model placed on the CPU makes the point `partial` (its NPU figures leave that group's
// work out), with each such group's reason, unless the sweep allows CPU groups. With
// `tune_trials: N` each model is first tuned for N trials with `npuc tune`'s machinery (its
// records in a temporary file) and compiled again with the best points; the model's record then
// carries `tuning` (trials, the untuned compile's simulated cycles, the tuner's estimates).
//
// The record (one line of results.jsonl, docs/EXPLORE.md) holds the point's axis values, its
// status, the metrics summed over models (cycles, latency at the target's clock, energy, DRAM
// bytes, MAC utilisation, energy-delay product) and the target's area, each model's figures,
// the energy and area breakdowns, and, under `timing`, the wall times (the only fields that
// differ between two evaluations of the same point).
#pragma once

#include "explore/Sweep.h"
#include "graph/Graph.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace npuc::explore {

/// The sweep's models, each imported and prepared once (driver::prepareModelGraph: the
/// target-independent front half of every compile, a fifth of a ResNet-50 compile), which every
/// point's compile then copies (the constants' data is shared, read-only). A model that does not
/// import keeps its error, which every point reports as the fresh compile would.
class PreparedModels {
public:
  explicit PreparedModels(const SweepSpec &s);
  /// Model `i`'s prepared graph; throws the npuc::Error its preparation raised.
  const graph::Graph &graph(size_t i) const;

private:
  std::vector<graph::Graph> graphs_;
  std::vector<std::string> errors_; // per model: "" when prepared
};

/// Evaluates `p` with the sweep's prepared models. Never throws: a bad point is a record with its
/// status and reason, and an internal error (a compiler bug) a `failed` record saying so.
nlohmann::json evaluatePoint(const SweepSpec &s, const Point &p, const PreparedModels &models);

/// The record of a point rejected by a constraint (nothing compiled).
nlohmann::json rejectedRecord(const SweepSpec &s, const Point &p, const std::string &constraint);

/// A metric of a record with status ok or partial; nullopt otherwise.
std::optional<double> metricOf(const nlohmann::json &record, Metric m);

} // namespace npuc::explore
