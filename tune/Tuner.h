// Tuner.h - `npuc tune`'s engine: tasks, measurer, search, scheduler and records together.
//
// tune() extracts the model's tasks (Task.h), reads the log (Records.h) and measures each task's
// untuned default that the log lacks, then spends the remaining trials in batches: the task
// scheduler (Scheduler.h) picks a task, its search (Search.h) proposes a batch ranked by the
// cost model, the measurer (Measure.h) runs the batch on `jobs` threads, each result is appended
// to the log as a record, and the model retrains on everything measured. A trial is one measured
// candidate (a point that does not lower counts too: it cost a compile); the budget counts the
// log's records of this model's tasks, so a resumed run continues where the last one stopped.
// With the same seed, log and budget (no time budget), a run proposes and records the same
// points whatever the number of jobs.
#pragma once

#include "tune/Measure.h"
#include "tune/Records.h"
#include "tune/Scheduler.h"
#include "tune/Search.h"

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace npuc::tune {

struct TuneProgress {
  int trials = 0, budget = 0;   // done (the log's included) and asked for
  double best = 0, untuned = 0; // estimated end-to-end cycles: sum of weight x cycles
  double elapsed = 0;           // seconds of this run
  int resumed = 0;              // trials read from the log
};

struct TuneOptions {
  int trials = 1000;     // total trials of this model's tasks in the log
  double timeBudget = 0; // seconds; 0: none
  int jobs = 0;          // measuring threads; 0: the hardware's concurrency
  uint64_t seed = 0;
  std::string log; // the JSON-lines record file (read, then appended to)
  int batch = 16;  // candidates per task per round
  SearchOptions search;
  SchedulerOptions scheduler;
  std::function<void(const TuneProgress &)> progress; // after each batch
  /// Measures every batch elsewhere instead of on `jobs` threads (`npuc tune` under mpirun: the
  /// worker ranks); a run proposes and records the same points either way.
  RemoteMeasure remote;
};

struct TaskResult {
  Task task;
  std::optional<int64_t> untuned, tuned; // the default's cycles, the best measured
  int64_t roofline = 0, macs = 0;
  int trials = 0, failed = 0; // measured candidates (the log's included), of them not lowered
  std::optional<npu::Schedule> best;
  std::string stop; // why the scheduler stopped it ("" if the budget ran out first)
};

struct TuneResult {
  std::vector<TaskResult> tasks;
  std::vector<Untunable> untunable;
  std::vector<std::pair<int, double>> curve; // (trials, estimated end-to-end cycles) per trial
  std::optional<CostModel::Quality> quality; // the model's held-back rank correlation
  int trials = 0, resumed = 0;               // in the log at the end, of them read at the start
  double seconds = 0;
  int jobs = 1; // measuring threads
  std::vector<std::string> warnings;
  /// Sums of weight x cycles over the tasks whose default lowered.
  double untunedTotal() const;
  double tunedTotal() const;
};

/// Tunes the NPU groups of a compiled model. Throws npuc::Error for a bad log.
TuneResult tune(const driver::CompiledModel &m, const TuneOptions &o);

} // namespace npuc::tune
