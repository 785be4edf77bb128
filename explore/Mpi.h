// Mpi.h - a sweep's points evaluated on MPI ranks, for sweeps larger than one machine:
// `mpirun -np N npuc explore sweep.yaml` (docs/EXPLORE.md, "On a cluster"), on the executor
// `npuc tune` shares (mpi/Executor.h).
//
// Rank 0 runs the strategy, keeps results.jsonl and writes the report, exactly as a local run
// does; ranks 1..N-1 evaluate the points rank 0 sends them (a job is a point's index, the answer
// its record) with the sweep's models prepared once per rank. Every rank loads the spec itself
// and checks that it loaded the same sweep as rank 0. A record does not depend on the rank that
// made it, so the results are a serial run's. A rank that fails aborts the job; results.jsonl
// keeps every record that arrived, and rerunning resumes (the points in flight are evaluated
// again).
#pragma once

#include "explore/Sweep.h"
#include "mpi/Executor.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <vector>

namespace npuc::explore::mpi {

using npuc::mpi::launched;
using npuc::mpi::Session;
using npuc::mpi::stopWorkers;

/// Every rank: rank 0's sweep id must equal this rank's (npuc::Error otherwise).
void checkSameSweep(const Session &session, const SweepSpec &s);
/// Ranks 1..N-1: evaluates the points rank 0 sends until rank 0 says stop.
void serve(const SweepSpec &s);
/// Rank 0: evaluates `todo` on the other ranks; `done` is called with each record as it arrives.
void dispatch(const Session &session, const std::vector<Point> &todo,
              const std::function<void(const nlohmann::json &)> &done);

} // namespace npuc::explore::mpi
