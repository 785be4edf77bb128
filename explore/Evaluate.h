// Evaluate.h - one design point, compiled and simulated for every model of the sweep.
//
// For each point: the point's target description is loaded (a description the loader rejects
// makes the point `invalid`, with the loader's message); each model is compiled for it
// (driver::compileModel, the same compile `npuc compile` runs; a model that does not compile
// makes the point `failed`, with the error) and every NPU segment is simulated timing-only (the
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

#include <nlohmann/json.hpp>

namespace npuc::explore {

/// Evaluates `p`. Never throws: a bad point is a record with its status and reason, and an
/// internal error (a compiler bug) a `failed` record saying so.
nlohmann::json evaluatePoint(const SweepSpec &s, const Point &p);

/// The record of a point rejected by a constraint (nothing compiled).
nlohmann::json rejectedRecord(const SweepSpec &s, const Point &p, const std::string &constraint);

/// A metric of a record with status ok or partial; nullopt otherwise.
std::optional<double> metricOf(const nlohmann::json &record, Metric m);

} // namespace npuc::explore
