// Executor.cpp - the MPI job protocol (see Executor.h): tag kWork carries a job to a worker,
// kResult its answer back, kStop ends a worker's loop. Jobs and answers are strings of chars.
#include "mpi/Executor.h"

#include "support/Error.h"

#include <cstdio>
#include <cstdlib>
#include <deque>
#include <iostream>

#ifdef NPUC_HAVE_MPI
#include <mpi.h>
#endif

namespace npuc::mpi {

bool launched() {
  // OpenMPI's mpirun sets these in every rank; a singleton run does not.
  const char *size = std::getenv("OMPI_COMM_WORLD_SIZE");
  return size && std::atoi(size) > 1;
}

#ifdef NPUC_HAVE_MPI

namespace {

enum Tag { kWork = 1, kResult = 2, kStop = 3 };

// The next message with tag `tag` from `source` (or any), its sender in `from`.
std::string receive(int source, int tag, int &from) {
  MPI_Status st;
  MPI_Probe(source, tag, MPI_COMM_WORLD, &st);
  int n = 0;
  MPI_Get_count(&st, MPI_CHAR, &n);
  std::string text(size_t(n), '\0');
  MPI_Recv(text.data(), n, MPI_CHAR, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  from = st.MPI_SOURCE;
  return text;
}

void send(const std::string &text, int to, int tag) {
  MPI_Send(text.data(), int(text.size()), MPI_CHAR, to, tag, MPI_COMM_WORLD);
}

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

void Session::checkSame(const std::string &id,
                        const std::function<std::string(const std::string &)> &why) const {
  NPUC_ASSERT(id.size() < 64, "checkSame compares digests of at most 63 characters");
  char root[64] = {};
  std::snprintf(root, sizeof root, "%s", id.c_str());
  MPI_Bcast(root, sizeof root, MPI_CHAR, 0, MPI_COMM_WORLD);
  if (id != root)
    fail("{}", why(root));
}

void serve(const std::function<std::string(const std::string &)> &handler) {
  for (;;) {
    MPI_Status st;
    MPI_Probe(0, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
    int from = 0;
    const std::string job = receive(0, st.MPI_TAG, from);
    if (st.MPI_TAG == kStop)
      return;
    send(handler(job), 0, kResult);
  }
}

void dispatch(const Session &session, const std::vector<std::string> &jobs,
              const std::function<void(size_t, const std::string &)> &done) {
  std::deque<int> idle;
  for (int r = 1; r < session.size(); ++r)
    idle.push_back(r);
  std::vector<size_t> running(size_t(session.size()), 0); // per rank: its job
  size_t next = 0, busy = 0;
  while (next < jobs.size() || busy > 0) {
    while (next < jobs.size() && !idle.empty()) {
      running[size_t(idle.front())] = next;
      send(jobs[next++], idle.front(), kWork);
      idle.pop_front();
      ++busy;
    }
    int from = 0;
    const std::string answer = receive(MPI_ANY_SOURCE, kResult, from);
    idle.push_back(from);
    --busy;
    done(running[size_t(from)], answer);
  }
}

void stopWorkers(const Session &session) {
  for (int r = 1; r < session.size(); ++r)
    send("", r, kStop);
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
void Session::checkSame(const std::string &,
                        const std::function<std::string(const std::string &)> &) const {}
void serve(const std::function<std::string(const std::string &)> &) {}
void dispatch(const Session &, const std::vector<std::string> &,
              const std::function<void(size_t, const std::string &)> &) {}
void stopWorkers(const Session &) {}

#endif

} // namespace npuc::mpi
