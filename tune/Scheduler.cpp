// Scheduler.cpp - Ansor's gradient task scheduler with early stopping (see Scheduler.h).
#include "tune/Scheduler.h"

#include "support/Error.h"

#include <fmt/format.h>

#include <limits>

namespace npuc::tune {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
}

TaskScheduler::TaskScheduler(std::vector<double> weights, std::vector<double> roofline,
                             SchedulerOptions o)
    : o_(o) {
  NPUC_ASSERT(weights.size() == roofline.size(), "one weight and one roofline per task");
  for (size_t i = 0; i < weights.size(); ++i) {
    State s;
    s.weight = weights[i];
    s.roofline = roofline[i];
    tasks_.push_back(std::move(s));
  }
}

void TaskScheduler::record(int task, std::optional<double> cycles) {
  State &s = tasks_.at(static_cast<size_t>(task));
  const double prev = s.best.empty() ? kInf : s.best.back();
  const double now = cycles && *cycles < prev ? *cycles : prev;
  ++s.trials;
  s.best.push_back(now);
  if (now < prev)
    s.lastImprovement = s.trials;
  if (!s.stop.empty())
    return;
  if (s.roofline > 0 && now <= s.roofline * (1 + o_.rooflineSlack))
    s.stop = fmt::format("within {:g}% of the roofline", o_.rooflineSlack * 100);
  else if (s.trials - s.lastImprovement >= o_.patience)
    s.stop = fmt::format("no improvement in {} trials", o_.patience);
}

void TaskScheduler::exhausted(int task, const std::string &why) {
  State &s = tasks_.at(static_cast<size_t>(task));
  if (s.stop.empty())
    s.stop = why;
}

double TaskScheduler::gradient(const State &s) const {
  const double now = s.best.empty() ? kInf : s.best.back();
  if (now == kInf) // nothing lowered yet: as urgent as possible
    return kInf;
  const int dt = std::min(o_.window, s.trials - 1);
  const double before = dt > 0 ? s.best[static_cast<size_t>(s.trials - 1 - dt)] : now;
  const double backward = dt > 0 && before != kInf ? (before - now) / dt : 0;
  const double optimistic = (now - std::max(0.0, s.roofline)) / std::max(1, s.trials);
  return s.weight * (o_.alpha * backward + (1 - o_.alpha) * optimistic);
}

std::optional<int> TaskScheduler::next() const {
  std::optional<int> best;
  double bestGrad = -1;
  for (size_t i = 0; i < tasks_.size(); ++i) {
    const State &s = tasks_[i];
    if (!s.stop.empty())
      continue;
    if (s.trials < o_.warmup) // warm-up: every task in order first
      return static_cast<int>(i);
    const double g = gradient(s);
    if (!best || g > bestGrad) {
      best = static_cast<int>(i);
      bestGrad = g;
    }
  }
  return best;
}

} // namespace npuc::tune
