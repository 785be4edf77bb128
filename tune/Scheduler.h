// Scheduler.h - the task scheduler: which task gets the next batch of trials (Ansor's gradient
// scheduler, section 6 of the Ansor paper).
//
// The objective is the estimated end-to-end cycles f = sum over tasks of weight x best cycles.
// After a warm-up that gives every task `warmup` trials, the next batch goes to the active task
// with the largest expected decrease of f per trial:
//   weight x (alpha x backward + (1 - alpha) x optimistic)
// where backward is the improvement of the task's best over its last `window` trials per trial
// (what the search just achieved) and optimistic is the gap between its best and its roofline
// over the trials it has had (what the search might still achieve, shrinking as trials go in
// without improvement). A task stops for good when `patience` trials brought no improvement,
// when its best is within `rooflineSlack` of its roofline, or when its space is exhausted.
// Ties go to the earlier task, so the schedule is deterministic.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace npuc::tune {

struct SchedulerOptions {
  int warmup = 16;             // trials every task gets before the gradient decides
  int window = 32;             // trials the backward term looks back
  int patience = 96;           // trials without improvement that stop a task
  double alpha = 0.2;          // Ansor's weight of the backward term
  double rooflineSlack = 0.01; // a best within 1% of the roofline stops the task
};

class TaskScheduler {
public:
  /// Per task: its weight (groups) and roofline (cycles; <= 0: unknown).
  TaskScheduler(std::vector<double> weights, std::vector<double> roofline, SchedulerOptions o = {});
  /// One trial of `task`: its measured cycles, or nullopt for a failed point.
  void record(int task, std::optional<double> cycles);
  /// The task's search has no point left to propose; `why` becomes its stop reason.
  void exhausted(int task, const std::string &why);
  /// The task to search next; nullopt when every task has stopped.
  std::optional<int> next() const;
  bool stopped(int task) const { return !tasks_[static_cast<size_t>(task)].stop.empty(); }
  /// Why a task stopped ("" while it is active).
  const std::string &stopReason(int task) const { return tasks_[static_cast<size_t>(task)].stop; }
  int trials(int task) const { return tasks_[static_cast<size_t>(task)].trials; }

private:
  struct State {
    double weight = 1, roofline = 0;
    int trials = 0;
    int lastImprovement = 0;  // trials when the best last improved
    std::vector<double> best; // best cycles after each trial (infinity before the first)
    std::string stop;
  };
  double gradient(const State &s) const;
  SchedulerOptions o_;
  std::vector<State> tasks_;
};

} // namespace npuc::tune
