// Tuner.cpp - the tuning loop (see Tuner.h).
#include "tune/Tuner.h"

#include "support/Error.h"

#include <chrono>
#include <map>

namespace npuc::tune {

double TuneResult::untunedTotal() const {
  double sum = 0;
  for (const TaskResult &t : tasks)
    if (t.untuned)
      sum += double(t.task.weight()) * double(*t.untuned);
  return sum;
}

double TuneResult::tunedTotal() const {
  double sum = 0;
  for (const TaskResult &t : tasks)
    if (t.untuned)
      sum +=
          double(t.task.weight()) * double(t.tuned ? std::min(*t.tuned, *t.untuned) : *t.untuned);
  return sum;
}

namespace {

using Clock = std::chrono::steady_clock;

// XGBoost trains on one thread: the measurer's threads have the cores, and libgomp's idle
// workers spin between trainings (with two OpenMP threads, 60% of a tuning run's CPU time went
// to libgomp's spin-wait on the 2-core machine).
CostModel::Options modelOptions() {
  CostModel::Options o;
  o.threads = 1;
  return o;
}

class Tuner {
public:
  Tuner(const driver::CompiledModel &m, const TuneOptions &o)
      : m_(m), o_(o), hw_(deriveHw(m.target)), set_(extractTasks(m)),
        measurer_(m, set_, o.jobs, o.remote), model_(o.seed, modelOptions()), start_(Clock::now()) {
  }

  TuneResult run();

private:
  void readLog();
  void measureDefaults();
  void replay();
  void commit(const Measurement &r);
  void round(int task);
  void report();
  double estimate() const;
  bool outOfTime() const {
    return o_.timeBudget > 0 &&
           std::chrono::duration<double>(Clock::now() - start_).count() >= o_.timeBudget;
  }

  const driver::CompiledModel &m_;
  const TuneOptions &o_;
  npu::Hw hw_;
  TaskSet set_;
  Measurer measurer_;
  CostModel model_;
  Clock::time_point start_;
  std::map<npu::ScheduleKey, int> taskOf_;
  std::vector<Record> logged_; // this model's records, in log order
  std::optional<RecordWriter> writer_;
  std::vector<std::unique_ptr<TaskSearch>> search_;
  std::optional<TaskScheduler> sched_;
  TuneResult res_;
};

void Tuner::readLog() {
  RecordLog log = readRecords(o_.log);
  res_.warnings = log.warnings;
  for (size_t i = 0; i < set_.tasks.size(); ++i) {
    taskOf_[set_.tasks[i].key] = static_cast<int>(i);
    res_.tasks.push_back({set_.tasks[i], {}, {}, 0, 0, 0, 0, {}, ""});
  }
  res_.untunable = set_.untunable;
  for (Record &r : log.records)
    if (taskOf_.count(r.key))
      logged_.push_back(std::move(r));
  res_.resumed = static_cast<int>(logged_.size());
  writer_.emplace(o_.log, log.validBytes);
}

// The untuned default of every task the log has none of, measured and logged.
void Tuner::measureDefaults() {
  std::vector<bool> known(set_.tasks.size(), false);
  for (const Record &r : logged_)
    if (r.isDefault)
      known[static_cast<size_t>(taskOf_.at(r.key))] = true;
  std::vector<Candidate> cs;
  for (size_t i = 0; i < known.size(); ++i)
    if (!known[i])
      cs.push_back({static_cast<int>(i), std::nullopt});
  for (const Measurement &r : measurer_.measureAll(cs)) {
    Record rec{set_.tasks[size_t(r.task)].key,
               set_.tasks[size_t(r.task)].name,
               r.schedule,
               r.cycles,
               r.error,
               true,
               r.seconds,
               r.rooflineCycles,
               r.macs};
    writer_->append(rec);
    logged_.push_back(std::move(rec));
  }
}

// Every record so far into the results, the searches, the scheduler and the model.
void Tuner::replay() {
  for (const Record &r : logged_)
    if (r.isDefault && r.ok()) {
      TaskResult &t = res_.tasks[size_t(taskOf_.at(r.key))];
      t.untuned = r.cycles;
      t.roofline = r.roofline;
      t.macs = r.macs;
    }
  std::vector<double> weights, roofs;
  for (size_t i = 0; i < set_.tasks.size(); ++i) {
    // The cost model's task-size features (MACs, input, constant and output elements).
    const graph::FusedGroup &grp = m_.graph.groups[size_t(set_.tasks[i].group)];
    search_.push_back(std::make_unique<TaskSearch>(
        m_, hw_, set_.tasks[i], taskFeatures(m_.graph, grp), o_.seed, o_.search));
    weights.push_back(set_.tasks[i].weight());
    roofs.push_back(double(res_.tasks[i].roofline));
  }
  sched_.emplace(weights, roofs, o_.scheduler);
  std::vector<Record> all = std::move(logged_);
  logged_.clear();
  std::vector<Sample> samples;
  for (const Record &r : all) {
    const int t = taskOf_.at(r.key);
    commit({t, r.schedule, r.isDefault, r.cycles, r.error, r.roofline, r.macs, r.seconds});
    if (std::optional<std::vector<float>> f = search_[size_t(t)]->features(r.schedule); f && r.ok())
      samples.push_back({t, std::move(*f), double(*r.cycles)});
  }
  if (!samples.empty())
    model_.update(samples);
}

// One measured candidate into the task's search, result and scheduler state.
void Tuner::commit(const Measurement &r) {
  TaskResult &t = res_.tasks[size_t(r.task)];
  search_[size_t(r.task)]->observe(r.schedule, r.cycles);
  sched_->record(r.task, r.cycles ? std::optional<double>(double(*r.cycles)) : std::nullopt);
  ++t.trials;
  t.failed += r.cycles ? 0 : 1;
  if (r.cycles && (!t.tuned || *r.cycles < *t.tuned)) {
    t.tuned = r.cycles;
    t.best = r.schedule;
  }
  ++res_.trials;
}

double Tuner::estimate() const {
  double sum = 0;
  for (const TaskResult &t : res_.tasks)
    if (t.untuned)
      sum += double(t.task.weight()) * double(std::min(*t.untuned, t.tuned.value_or(*t.untuned)));
  return sum;
}

// One batch of the scheduler's task: proposed, measured, logged, learned from.
void Tuner::round(int task) {
  const size_t n = static_cast<size_t>(std::min(o_.batch, o_.trials - res_.trials));
  std::vector<npu::Schedule> points = search_[size_t(task)]->propose(n, model_);
  if (points.empty()) {
    sched_->exhausted(task, search_[size_t(task)]->exhausted()
                                ? "space exhausted"
                                : "no new point worth measuring found");
    return;
  }
  std::vector<Candidate> cs;
  for (npu::Schedule &s : points)
    cs.push_back({task, std::move(s)});
  std::vector<Sample> samples;
  for (const Measurement &r : measurer_.measureAll(cs)) {
    const Task &t = set_.tasks[size_t(task)];
    writer_->append({t.key, t.name, r.schedule, r.cycles, r.error, false, r.seconds, 0, 0});
    if (r.cycles)
      if (std::optional<std::vector<float>> f = search_[size_t(task)]->features(r.schedule))
        samples.push_back({task, std::move(*f), double(*r.cycles)});
    commit(r);
    if (res_.curve.empty() || res_.curve.back().first != res_.trials)
      res_.curve.emplace_back(res_.trials, estimate()); // per trial: the plot drops where it did
  }
  if (!samples.empty())
    model_.update(samples);
}

void Tuner::report() {
  if (res_.curve.empty() || res_.curve.back().first != res_.trials)
    res_.curve.emplace_back(res_.trials, estimate());
  res_.seconds = std::chrono::duration<double>(Clock::now() - start_).count();
  if (o_.progress)
    o_.progress(
        {res_.trials, o_.trials, estimate(), res_.untunedTotal(), res_.seconds, res_.resumed});
}

TuneResult Tuner::run() {
  readLog();
  measureDefaults();
  replay();
  report();
  while (res_.trials < o_.trials && !outOfTime()) {
    std::optional<int> t = sched_->next();
    if (!t)
      break;
    const int before = res_.trials;
    round(*t);
    if (res_.trials != before)
      report();
  }
  for (size_t i = 0; i < res_.tasks.size(); ++i)
    res_.tasks[i].stop = sched_->stopReason(static_cast<int>(i));
  res_.quality = model_.heldOutQuality();
  res_.jobs = measurer_.jobs();
  res_.seconds = std::chrono::duration<double>(Clock::now() - start_).count();
  return std::move(res_);
}

} // namespace

TuneResult tune(const driver::CompiledModel &m, const TuneOptions &o) {
  if (o.trials <= 0)
    fail("--trials {}: must be at least 1", o.trials);
  if (o.log.empty())
    fail("--log: a tuning log file is required");
  Tuner t(m, o);
  return t.run();
}

} // namespace npuc::tune
