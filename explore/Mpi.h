// Mpi.h - a sweep's points evaluated on MPI ranks (OpenMPI from Debian), for sweeps larger than
// one machine: `mpirun -np N npuc explore sweep.yaml` (docs/EXPLORE.md, "On a cluster").
//
// Rank 0 runs the strategy, keeps results.jsonl and writes the report, exactly as a local run
// does; ranks 1..N-1 evaluate the points rank 0 sends them, one at a time, taken dynamically (a
// rank that finishes gets the next point), and send each record back. Every rank loads the spec
// itself (a shared file system is assumed) and checks that it loaded the same sweep as rank 0.
// A record does not depend on the rank that made it, so the results are a serial run's.
//
// MPI is initialised only when the process was started by mpirun with more than one rank
// (launched()): a plain `npuc explore` never touches MPI. When any rank fails (bad output
// directory, a spec that differs between ranks), the whole job is aborted with that rank's
// message; results.jsonl keeps every record that arrived, and rerunning resumes (the points that
// were in flight are evaluated again).
#pragma once

#include "explore/Sweep.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <vector>

namespace npuc::explore::mpi {

/// Whether mpirun started this process as one of several ranks.
bool launched();

/// MPI_Init on construction, MPI_Finalize on destruction; one per process.
class Session {
public:
  Session();
  ~Session();
  Session(const Session &) = delete;
  Session &operator=(const Session &) = delete;
  int rank() const { return rank_; }
  int size() const { return size_; }
  /// Every rank: rank 0's sweep id must equal this rank's (npuc::Error otherwise).
  void checkSameSweep(const SweepSpec &s) const;
  /// Aborts every rank with `message` printed by this one (never returns).
  [[noreturn]] void abort(const std::string &message) const;

private:
  int rank_ = 0, size_ = 1;
};

/// Ranks 1..N-1: evaluates the points rank 0 sends until rank 0 says stop.
void serve(const SweepSpec &s);
/// Rank 0: evaluates `todo` on the other ranks; `done` is called with each record as it arrives.
void dispatch(const Session &session, const std::vector<Point> &todo,
              const std::function<void(const nlohmann::json &)> &done);
/// Rank 0: tells the other ranks to stop serving.
void stopWorkers(const Session &session);

} // namespace npuc::explore::mpi
