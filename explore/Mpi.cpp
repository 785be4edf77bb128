// Mpi.cpp - the rank-0 coordinator and the worker ranks (contract in Mpi.h). Built against
// OpenMPI when CMake finds it (NPUC_HAVE_MPI); otherwise launched() still detects mpirun and a
// Session is an error that says this npuc was built without MPI.
#include "explore/Mpi.h"

#include "explore/Evaluate.h"
#include "support/Error.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <iostream>
#include <optional>

#ifdef NPUC_HAVE_MPI
#include <mpi.h>
#endif

namespace npuc::explore::mpi {

using nlohmann::json;

bool launched() {
  // OpenMPI's mpirun sets these in every rank; a singleton run does not.
  const char *size = std::getenv("OMPI_COMM_WORLD_SIZE");
  return size && std::atoi(size) > 1;
}

#ifdef NPUC_HAVE_MPI

namespace {

enum Tag { kWork = 1, kResult = 2, kStop = 3 };

} // namespace

Session::Session() {
  int ok = 0;
  MPI_Initialized(&ok);
  NPUC_ASSERT(!ok, "one MPI session per process");
  MPI_Init(nullptr, nullptr);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

Session::~Session() {
  MPI_Finalize();
}

void Session::abort(const std::string &message) const {
  std::cerr << "npuc: error: rank " << rank_ << ": " << message << std::endl;
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::exit(1); // MPI_Abort does not return; this satisfies [[noreturn]]
}

void Session::checkSameSweep(const SweepSpec &s) const {
  char id[64] = {};
  std::snprintf(id, sizeof id, "%s", s.id.c_str());
  MPI_Bcast(id, sizeof id, MPI_CHAR, 0, MPI_COMM_WORLD);
  if (s.id != id)
    fail("{}: this rank loaded sweep {}, rank 0 sweep {} (every rank must read the same spec, "
         "base and models)",
         s.path, s.id, id);
}

void serve(const SweepSpec &s) {
  std::optional<PreparedModels> models; // prepared with the first point this rank receives
  for (;;) {
    MPI_Status st;
    int64_t index = 0;
    MPI_Recv(&index, 1, MPI_INT64_T, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
    if (st.MPI_TAG == kStop)
      return;
    if (!models)
      models.emplace(s);
    const std::string text = evaluatePoint(s, pointAt(s, index), *models).dump();
    MPI_Send(text.data(), int(text.size()), MPI_CHAR, 0, kResult, MPI_COMM_WORLD);
  }
}

void dispatch(const Session &session, const std::vector<Point> &todo,
              const std::function<void(const json &)> &done) {
  std::deque<int> idle;
  for (int r = 1; r < session.size(); ++r)
    idle.push_back(r);
  size_t next = 0, busy = 0;
  while (next < todo.size() || busy > 0) {
    while (next < todo.size() && !idle.empty()) {
      int64_t index = todo[next++].index;
      MPI_Send(&index, 1, MPI_INT64_T, idle.front(), kWork, MPI_COMM_WORLD);
      idle.pop_front();
      ++busy;
    }
    MPI_Status st;
    MPI_Probe(MPI_ANY_SOURCE, kResult, MPI_COMM_WORLD, &st);
    int n = 0;
    MPI_Get_count(&st, MPI_CHAR, &n);
    std::string text(size_t(n), '\0');
    MPI_Recv(text.data(), n, MPI_CHAR, st.MPI_SOURCE, kResult, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    idle.push_back(st.MPI_SOURCE);
    --busy;
    done(json::parse(text));
  }
}

void stopWorkers(const Session &session) {
  int64_t none = 0;
  for (int r = 1; r < session.size(); ++r)
    MPI_Send(&none, 1, MPI_INT64_T, r, kStop, MPI_COMM_WORLD);
}

#else // no MPI: launched() still tells, and a session says why it cannot run

Session::Session() {
  fail("this npuc was built without MPI (install libopenmpi-dev and rebuild: "
       "scripts/install-deps.sh)");
}
Session::~Session() = default;
void Session::abort(const std::string &message) const {
  std::cerr << "npuc: error: " << message << std::endl;
  std::exit(1);
}
void Session::checkSameSweep(const SweepSpec &) const {}
void serve(const SweepSpec &) {}
void dispatch(const Session &, const std::vector<Point> &,
              const std::function<void(const json &)> &) {}
void stopWorkers(const Session &) {}

#endif

} // namespace npuc::explore::mpi
