// Report.h - what a sweep's results become: tables, the Pareto front and plots
// (`npuc explore` writes them after sweeping; `npuc explore report` redraws them from
// results.jsonl without simulating anything).
//
// Files, in the output directory (docs/EXPLORE.md):
//   results.csv           every record, by point index: status, axis values, metrics, per-model
//                         cycles, reason
//   pareto.csv            the Pareto-optimal points under the objectives (status ok only)
//   pareto.png, .svg      the first two objectives against each other, every ok point coloured
//                         by the third objective (or energy), the front drawn over them
//   sensitivity-AXIS.png, .svg  per axis of two or more values: the best and the median of the
//                         first objective at each of the axis's values
#pragma once

#include "explore/Results.h"
#include "explore/Sweep.h"

#include <string>
#include <vector>

namespace npuc::explore {

struct ReportOptions {
  std::vector<Metric> objectives; // empty: the results header's
  bool plots = true;              // false: tables only (no gnuplot run)
};

/// The indices (into r.records) of the Pareto-optimal ok records under `objectives`, ordered by
/// the first objective.
std::vector<size_t> paretoRecords(const Results &r, const std::vector<Metric> &objectives);

/// Writes the files above into `dir` (which must exist) and returns a text summary: counts by
/// status and the front. Throws npuc::Error for an unknown objective in the header or a failed
/// plot.
std::string writeReport(const Results &r, const std::string &dir, const ReportOptions &o);

} // namespace npuc::explore
