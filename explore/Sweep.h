// Sweep.h - a design-space sweep: its spec (YAML, docs/EXPLORE.md), its points, and the target
// description each point compiles for.
//
// A sweep is a base target description plus axes. An axis sets one field of the description
// (`param: memory.l1.size`), several together (`params: [tensor_unit.rows, tensor_unit.cols]`,
// a zip group: the i-th value of each), or adds optional vector ops (`optional_ops: [exp]`: two
// values, without and with). A point picks one value per axis; its description is the base with
// those fields replaced, then loaded and validated as any target is: a point the loader rejects
// is recorded as invalid with the loader's message, never fatal. Constraints (explore/Expr.h)
// filter points before anything is compiled.
//
// Everything about the spec itself is checked on load, so a typo fails at once instead of
// after an hour of sweeping: unknown keys, an axis whose field the base lacks, an empty or
// malformed value list, a constraint naming nothing, an unknown objective or strategy; each
// error names the file, the axis or field, and the value.
#pragma once

#include "explore/Expr.h"
#include "frontend/Onnx.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace npuc::explore {

/// What a sweep can optimise. Each is minimised except MacUtilization.
enum class Metric { Cycles, LatencyUs, EnergyUj, AreaMm2, DramBytes, MacUtilization, Edp };
/// Every metric, in enumerator order (the tables' columns).
inline constexpr Metric kAllMetrics[] = {Metric::Cycles,  Metric::LatencyUs, Metric::EnergyUj,
                                         Metric::AreaMm2, Metric::DramBytes, Metric::MacUtilization,
                                         Metric::Edp};
const char *metricName(Metric m);
std::optional<Metric> metricFromName(const std::string &name);
/// "cycles, latency_us, ..." for messages.
std::string metricNameList();
/// The metrics `names` name, in order; an unknown name is an error "WHERE: unknown objective
/// 'x' (expected one of: ...)".
std::vector<Metric> metricsFromNames(const std::vector<std::string> &names,
                                     const std::string &where);
bool maximised(Metric m);

enum class Strategy { Grid, Random, Nsga2 };

struct Axis {
  std::string name;
  std::vector<std::string> params;      // dotted paths; empty for an optional-ops axis
  std::vector<std::string> optionalOps; // an optional-ops axis: the ops it adds
  /// values[i][p]: the i-th value of params[p] (scalars as written: "512 KiB" stays a string);
  /// an optional-ops axis has [[false], [true]].
  std::vector<std::vector<nlohmann::json>> values;
};

struct ModelSpec {
  std::string name; // as results name it (default: the file's stem)
  std::string path; // resolved against the sweep file's directory
  int64_t weight = 1; // runs of the model per workload: its share of the point's metrics
  frontend::ImportOptions inputs;
};

struct Constraint {
  Expr expr;
  std::string text;
};

struct SweepSpec {
  std::string path;     // the sweep file
  std::string id;       // a digest of the spec, the base and the models (results' `sweep`)
  std::string basePath; // the base target description, resolved
  std::string baseText;
  std::vector<Axis> axes;
  std::vector<Constraint> constraints;
  std::vector<ModelSpec> models;
  std::vector<Metric> objectives;
  Strategy strategy = Strategy::Grid;
  int64_t samples = 0;                 // random: points to draw (capped at the grid's size)
  int population = 0, generations = 0; // nsga2 (explore/GeneticSearch.h)
  uint64_t seed = 0;
  /// false: a point where some group of a model runs on the CPU is `partial`, outside the
  /// Pareto front (its NPU cycles leave that work out).
  bool allowCpuGroups = false;
  /// > 0: every point's models are tuned with `npuc tune`'s machinery for this many trials
  /// before the measured compile (explore/Evaluate.h); `tune_trials:` or --tune-trials.
  int tuneTrials = 0;
};

/// Loads and checks a sweep spec. Throws npuc::Error naming the file and field.
SweepSpec loadSweep(const std::string &path);
/// The sweep's identity (SweepSpec::id): a digest of what a record depends on (the base, the
/// models, the axes, the constraints, allow_cpu_groups, tune_trials). Recompute it after
/// changing one of those.
std::string sweepId(const SweepSpec &s);

/// A design point: one value index per axis.
struct Point {
  int64_t index = 0;       // position in the grid (mixed radix, first axis most significant)
  std::vector<int> choice; // per axis
};

/// The number of points of the full grid (saturating at INT64_MAX).
int64_t gridSize(const SweepSpec &s);
/// The grid point at `index`.
Point pointAt(const SweepSpec &s, int64_t index);
/// The points a grid or random strategy visits, in visiting order: the whole grid, or `samples`
/// distinct points drawn with `seed`. (NSGA-II chooses its points from the records as it goes:
/// explore/GeneticSearch.h.)
std::vector<Point> pointsToVisit(const SweepSpec &s);

/// The point's axis values as JSON ({axis name: value}; a zip axis gives an array).
nlohmann::json pointJson(const SweepSpec &s, const Point &p);
/// The target description text of a point (the base with the point's fields replaced, and its
/// name suffixed with the point's index). Throws npuc::Error for a field path that does not
/// resolve (loadSweep has checked every axis against the base, so only a bug gets here).
std::string pointTargetText(const SweepSpec &s, const Point &p);
/// A YAML document (a target description) as JSON: plain numbers and booleans stay numbers and
/// booleans, everything else (`512 KiB`, `0x01`, `fp16`) a string. JSON is YAML, so the dump of
/// the result loads back as the same description (comments aside): the Python module hands
/// descriptions out as editable dicts so, keys in file order. Throws npuc::Error naming `origin` on
/// a syntax error.
nlohmann::ordered_json yamlAsJson(const std::string &text, const std::string &origin);

/// The first constraint the point violates ("" when it meets all).
std::string violatedConstraint(const SweepSpec &s, const Point &p);

} // namespace npuc::explore
