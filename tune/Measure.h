// Measure.h - the measurer: a candidate schedule of a task, compiled alone and simulated.
//
// A candidate is measured by compiling the task's representative group as a one-group segment
// (npu::compileSegment: every tensor in DRAM, the whole on-chip window, the model's compile
// options) with CompileOptions::schedules forcing the point, and running the program on the
// simulator timing-only (no data, no hazard check: the cycle count is exactly a functional
// run's). The simulator is deterministic, so a point is measured once. A point that does not
// lower (the kernel's Reject, or a ScheduleError for a point the group cannot take) is a failed
// candidate with its reason. Measuring with no forced point gives the untuned default: the
// kernel reports the point its heuristic chose (GroupInfo::schedule).
//
// What the measurement does not see: residency and the neighbours' buffers (a group's window in
// the real segment may be smaller, and its inputs may already be in L1), batch splitting, and
// the overlap of one group's tail with the next group's head.
//
// Measurer::measureAll runs a batch on `jobs` threads. compileSegment only reads the graph and
// the target (every phase writes into its own SegmentPlan; the pass registries, Z3 contexts and
// builders are per call; the simulator's scratch buffers are thread_local), so the threads share
// them without locks. Under mpirun it hands the batch to a RemoteMeasure instead: the MPI
// executor (mpi/Executor.h) sends each candidate as text to a worker rank, which compiled the
// same model, extracted the same tasks and measures it with its own Measurer.
#pragma once

#include "tune/Task.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace npuc::tune {

struct Measurement {
  int task = -1;          // index into TaskSet::tasks
  npu::Schedule schedule; // the point measured (for the default: the one the heuristic chose)
  bool isDefault = false;
  std::optional<int64_t> cycles; // nullopt: the point did not lower
  std::string error;             // why not
  int64_t rooflineCycles = 0;    // of the group (GroupInfo), when it lowered
  int64_t macs = 0;
  double seconds = 0; // wall time of the compile and the simulation
};

/// A candidate: a forced point of a task, or (nullopt) its untuned default.
struct Candidate {
  int task = -1;
  std::optional<npu::Schedule> schedule;
};

/// Measures a batch elsewhere (MPI worker ranks); the results in the candidates' order.
using RemoteMeasure = std::function<std::vector<Measurement>(const std::vector<Candidate> &)>;

/// A candidate as an MPI job's text (its task by index: every rank extracts the same tasks from
/// the same compiled model), and a measurement as the answer's, each read back exactly.
std::string candidateText(const Candidate &c);
Candidate candidateFromText(const std::string &text);
std::string measurementText(const Measurement &m);
Measurement measurementFromText(const std::string &text);

class Measurer {
public:
  /// `m` and `tasks` must outlive the measurer. jobs <= 0: the hardware's concurrency. With
  /// `remote`, measureAll hands every batch to it.
  Measurer(const driver::CompiledModel &m, const TaskSet &tasks, int jobs,
           RemoteMeasure remote = nullptr);
  int jobs() const { return jobs_; }
  Measurement measure(const Candidate &c) const;
  /// Every candidate, on up to jobs() threads (or remotely); results in the candidates' order.
  std::vector<Measurement> measureAll(const std::vector<Candidate> &cs) const;

private:
  const driver::CompiledModel &m_;
  const TaskSet &tasks_;
  int jobs_ = 1;
  RemoteMeasure remote_;
};

} // namespace npuc::tune
