// Executor.h - jobs evaluated on MPI ranks (OpenMPI from Debian): the scale-out executor that
// `npuc explore` (design points, explore/Mpi.h) and `npuc tune` (measurements, tune/Measure.h)
// share.
//
// Under `mpirun -np N`, rank 0 coordinates and ranks 1..N-1 work: rank 0 sends each job (a
// string: the caller's serialised request) to an idle rank, one at a time and dynamically (a
// rank that finishes gets the next job), and receives its answer (the worker's serialised
// result); a worker answers each job with its handler until rank 0 tells it to stop. Jobs carry
// no state between them, so an answer does not depend on the rank that made it, and a run under
// mpirun gives what a serial run gives. Every rank loads its inputs itself (a shared file system
// is assumed) and checkSame() makes sure they loaded the same ones.
//
// MPI is initialised only when the process was started by mpirun with more than one rank
// (launched()): a plain run never touches MPI. A rank that fails aborts the whole job with its
// message (Session::abort); the callers' logs (results.jsonl, tuning records) keep what arrived,
// so rerunning resumes. Without MPI at build time, a Session says why it cannot start.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace npuc::mpi {

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
  /// Every rank: rank 0's `id` (at most 63 characters: a digest) must equal this rank's;
  /// otherwise npuc::Error with why(rank 0's id).
  void checkSame(const std::string &id,
                 const std::function<std::string(const std::string &)> &why) const;
  /// Aborts every rank with `message` printed by this one (never returns).
  [[noreturn]] void abort(const std::string &message) const;

private:
  int rank_ = 0, size_ = 1;
};

/// Ranks 1..N-1: answers each job rank 0 sends with handler(job) until rank 0 says stop.
void serve(const std::function<std::string(const std::string &)> &handler);
/// Rank 0: runs `jobs` on the other ranks; done(i, answer) is called for job i as each answer
/// arrives (in arrival order).
void dispatch(const Session &session, const std::vector<std::string> &jobs,
              const std::function<void(size_t, const std::string &)> &done);
/// Rank 0: tells the other ranks to stop serving.
void stopWorkers(const Session &session);

} // namespace npuc::mpi
