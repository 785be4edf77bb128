// Explore.h - running a sweep: every point the strategy visits is checked against the
// constraints, then compiled and simulated (explore/Evaluate.h) on worker threads, each record
// appended to DIR/results.jsonl as it finishes; the points already there are not visited again
// (a killed sweep resumes where it stopped, with nothing lost but the points in flight). Then
// the report (explore/Report.h) is written from the whole file.
//
// Records are appended in completion order, which threads make nondeterministic; every table and
// plot orders them by point index, and a record's content does not depend on the thread that
// made it (only its `timing` does), so a sweep on N threads gives what one thread gives.
#pragma once

#include "explore/Sweep.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <ostream>
#include <string>

namespace npuc::explore {

struct ExploreOptions {
  std::string outDir; // created when missing; never cleared (results.jsonl is resumed)
  int jobs = 1;       // points evaluated at once
  bool plots = true;
  /// Called with each new record (from the worker thread that made it, serialised).
  std::function<void(const nlohmann::json &)> onPoint;
};

struct ExploreSummary {
  size_t planned = 0;      // distinct points the strategy asked for
  size_t resumed = 0;      // of them, already in results.jsonl
  size_t evaluated = 0;    // compiled and simulated now (ok, partial, invalid or failed)
  size_t rejected = 0;     // by a constraint, now
  std::string report;      // writeReport's summary
  bool workerRank = false; // an MPI rank other than 0: it served points, rank 0 reports
};

/// Runs the sweep; progress lines go to `log`. Throws npuc::Error for an output directory that
/// cannot be written or a results file of another sweep. Under mpirun with several ranks, the
/// points are evaluated on ranks 1..N-1 instead of threads (explore/Mpi.h; o.jobs is ignored).
ExploreSummary runSweep(const SweepSpec &s, const ExploreOptions &o, std::ostream &log);

} // namespace npuc::explore
