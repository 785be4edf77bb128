// Tune.cpp - `npuc tune`: auto-scheduling of a model's NPU kernels on the simulator
// (tune/Tuner.h, docs/TUNING.md), with a progress line, the per-task table, a whole-model check
// and an optional plot of the best estimated cycles against trials. Under `mpirun -np N` rank 0
// tunes and the other ranks measure its batches (mpi/Executor.h).
#include "tools/cli/Commands.h"

#include "mpi/Executor.h"
#include "npuc/thread_pool.h"
#include "simulator/Simulator.h"
#include "support/Error.h"
#include "support/File.h"
#include "support/Plot.h"
#include "tune/Tuner.h"

#include <filesystem>
#include <fmt/format.h>
#include <iostream>
#include <unistd.h>

namespace npuc::cli {

namespace {

namespace fs = std::filesystem;

// Bad arguments, before the (slow) compile.
void checkTuneArgs(const TuneArgs &a) {
  if (driver::isCpuTarget(a.target) || a.target == "gpu")
    fail("--target {}: npuc tune tunes NPU kernels; give a target description YAML", a.target);
  if (a.trials <= 0)
    fail("--trials {}: must be at least 1", a.trials);
  if (a.jobs < 0 || a.jobs > rt::ThreadPool::kMaxThreads)
    fail("--jobs {}: must be in [1, {}] (0: the hardware's concurrency)", a.jobs,
         rt::ThreadPool::kMaxThreads);
  if (a.timeBudget < 0)
    fail("--time-budget {}: must not be negative", a.timeBudget);
  std::error_code ec;
  if (fs::is_directory(a.log, ec))
    fail("--log {}: is a directory, not a tuning log file", a.log);
  // The log is appended to and the plot replaced: neither may be a device, a FIFO or an input.
  checkOutputPath(a.log, {a.model, a.target});
  if (!a.plot.empty()) {
    checkOutputPath(a.plot, {a.model, a.target, a.log});
    const std::string ext = fs::path(a.plot).extension().string();
    if (ext != ".png" && ext != ".svg")
      fail("--plot {}: the plot is .png or .svg", a.plot);
  }
  if (!fs::exists(a.model, ec))
    fail("{}: no such model file", a.model);
}

// The progress line: `\r`-updated on a terminal, else a line every ~10% of the trials.
std::function<void(const tune::TuneProgress &)> progressLine(std::ostream &err, bool tty) {
  auto lastDecile = std::make_shared<int>(-1);
  return [&err, tty, lastDecile](const tune::TuneProgress &p) {
    const int decile = p.budget > 0 ? 10 * p.trials / p.budget : 10;
    if (!tty && decile == *lastDecile && p.trials < p.budget)
      return;
    *lastDecile = decile;
    const int done = p.trials - p.resumed;
    std::string eta = "-";
    if (done > 0 && p.trials < p.budget)
      eta = fmt::format("{:.0f}s", p.elapsed / done * (p.budget - p.trials));
    std::string line = fmt::format(
        "tune: {}/{} trials, best estimate {:.0f} cycles (untuned {:.0f}, {:.3f}x), {:.1f}s, "
        "ETA {}",
        p.trials, p.budget, p.best, p.untuned, p.best > 0 ? p.untuned / p.best : 1.0, p.elapsed,
        eta);
    err << (tty ? "\r" + line + "\x1b[K" : line + "\n") << std::flush;
  };
}

std::string cyclesOr(const std::optional<int64_t> &c) {
  return c ? std::to_string(*c) : "-";
}

void printTable(const tune::TuneResult &r, std::ostream &out) {
  out << fmt::format("{:<48} {:>6} {:>12} {:>12} {:>12} {:>7} {:>7}  {}\n", "task", "weight",
                     "untuned", "tuned", "roofline", "r/tuned", "trials", "stopped");
  for (const tune::TaskResult &t : r.tasks) {
    const std::optional<int64_t> tuned =
        t.untuned && t.tuned ? std::min(*t.untuned, *t.tuned) : t.tuned;
    const double ratio = tuned && *tuned > 0 ? double(t.roofline) / double(*tuned) : 0;
    out << fmt::format("{:<48} {:>6} {:>12} {:>12} {:>12} {:>7.3f} {:>7}  {}\n", t.task.name,
                       t.task.weight(), cyclesOr(t.untuned), cyclesOr(tuned), t.roofline, ratio,
                       t.trials, t.stop.empty() ? "budget" : t.stop);
  }
  for (const tune::Untunable &u : r.untunable)
    out << fmt::format("{:<48} {:>6}  not tuned: {}\n", u.name, u.weight, u.why);
  double roof = 0, macs = 0, macRoofOverTuned = 0;
  for (const tune::TaskResult &t : r.tasks)
    if (t.untuned && *t.untuned > 0) { // a group without instructions takes no cycles
      const double tuned = double(std::min(*t.untuned, t.tuned.value_or(*t.untuned)));
      roof += double(t.task.weight()) * double(t.roofline);
      macs += double(t.task.weight()) * double(t.macs);
      macRoofOverTuned += double(t.task.weight()) * double(t.macs) * double(t.roofline) / tuned;
    }
  out << fmt::format("tasks: untuned {:.0f} cycles, tuned {:.0f} ({:.3f}x), roofline {:.0f}: "
                     "roofline/tuned {:.3f} (MAC-weighted per task {:.3f})\n",
                     r.untunedTotal(), r.tunedTotal(), r.untunedTotal() / r.tunedTotal(), roof,
                     roof / r.tunedTotal(), macs > 0 ? macRoofOverTuned / macs : 0.0);
}

// The whole model's NPU cycles, every segment simulated timing-only.
int64_t modelCycles(const driver::CompiledModel &m) {
  int64_t sum = 0;
  for (const npu::Segment &s : m.npuSegments) {
    sim::Memory mem = sim::Memory::sizesOnly(m.target, s.dramBytes);
    sim::SimOptions o;
    o.functional = false;
    o.check = false;
    sum += sim::run(m.target, s.program, mem, o).totalCycles;
  }
  return sum;
}

// The real check: the whole model compiled with the log's best records (CompileOptions::tuned),
// and both it and the untuned compile `m` simulated.
void printWholeModelCheck(const TuneArgs &a, const driver::CompiledModel &m,
                          const frontend::ImportOptions &inputs, std::ostream &out) {
  npu::CompileOptions tunedOpt;
  tunedOpt.tuned = std::make_shared<const npu::ScheduleFile>(
      tune::bestSchedules(tune::readRecords(a.log).records));
  const int64_t before = modelCycles(m);
  const driver::CompiledModel tuned = driver::compileModel(a.model, a.target, inputs, tunedOpt);
  const int64_t after = modelCycles(tuned);
  size_t ignored = 0; // records whose point does not fit the group's real context
  for (const npu::Segment &s : tuned.npuSegments)
    ignored += s.warnings.size();
  out << fmt::format("whole model (compiled and simulated): untuned {} cycles, tuned {} cycles "
                     "({:.3f}x){}\n",
                     before, after, after > 0 ? double(before) / double(after) : 0.0,
                     ignored ? fmt::format("; {} tuned point(s) did not fit their group in the "
                                           "model (npuc compile --tuning-log names them)",
                                           ignored)
                             : "");
}

// Tunes `m` (measuring on `o.remote`'s `workers` ranks when set) and prints the results.
void tuneAndReport(const TuneArgs &a, const driver::CompiledModel &m,
                   const frontend::ImportOptions &inputs, tune::TuneOptions o, int workers,
                   std::ostream &out, std::ostream &err) {
  o.trials = a.trials;
  o.timeBudget = a.timeBudget;
  o.jobs = a.jobs;
  o.seed = a.seed;
  o.log = a.log;
  const bool tty = &err == &std::cerr && isatty(STDERR_FILENO);
  o.progress = progressLine(err, tty);
  tune::TuneResult r = tune::tune(m, o);
  if (tty)
    err << "\n";
  for (const std::string &w : r.warnings)
    err << "warning: " << w << "\n";
  out << fmt::format(
      "tuned {} for {}: {} tasks from {} NPU groups, {} trials ({} from the log) "
      "in {:.1f}s on {}\n",
      a.model, m.target.name, r.tasks.size(),
      [&] {
        int n = 0;
        for (const tune::TaskResult &t : r.tasks)
          n += t.task.weight();
        for (const tune::Untunable &u : r.untunable)
          n += u.weight;
        return n;
      }(),
      r.trials, r.resumed, r.seconds,
      workers > 0 ? fmt::format("{} MPI worker rank(s)", workers)
                  : fmt::format("{} thread{}", r.jobs, r.jobs == 1 ? "" : "s"));
  printTable(r, out);
  if (r.quality)
    out << fmt::format(
        "cost model: held-back Spearman {:.3f} (mean over {} tasks), pooled {:.3f}\n",
        r.quality->meanTaskSpearman, r.quality->tasks, r.quality->pooledSpearman);
  else
    out << "cost model: too few held-back measurements for a rank correlation\n";
  printWholeModelCheck(a, m, inputs, out);
  if (!a.plot.empty()) {
    Series s{"best estimate", {}};
    for (const auto &[trials, cycles] : r.curve)
      s.xy.emplace_back(trials, cycles);
    plotLines(
        a.plot,
        fmt::format("npuc tune {} on {}", fs::path(a.model).filename().string(), m.target.name),
        "trials", "estimated end-to-end cycles", {s});
    out << "plot: " << a.plot << "\n";
  }
}

// Under mpirun: every rank compiles the model and extracts its tasks (checked to be rank 0's);
// rank 0 tunes, the others measure the candidates it sends until it is done.
void tuneOnRanks(const TuneArgs &a, const frontend::ImportOptions &inputs, std::ostream &out,
                 std::ostream &err) {
  mpi::Session session;
  driver::CompiledModel m;
  tune::TaskSet tasks;
  try {
    m = driver::compileModel(a.model, a.target, inputs);
    tasks = tune::extractTasks(m);
    std::string keys = m.target.name;
    for (const tune::Task &t : tasks.tasks)
      keys.append(1, ' ').append(t.key.str());
    const std::string id = fmt::format("{:016x}", std::hash<std::string>{}(keys));
    session.checkSame(id, [&](const std::string &root) {
      return fmt::format("{}: this rank's model and target give tasks {}, rank 0's give {} (every "
                         "rank must read the same model and target)",
                         a.model, id, root);
    });
  } catch (const std::exception &e) {
    session.abort(e.what());
  }
  if (session.rank() != 0) {
    const tune::Measurer measurer(m, tasks, 1);
    try {
      mpi::serve([&](const std::string &job) {
        return tune::measurementText(measurer.measure(tune::candidateFromText(job)));
      });
    } catch (const std::exception &e) {
      session.abort(e.what());
    }
    return;
  }
  err << fmt::format("MPI: rank 0 tunes, {} worker rank(s) measure\n", session.size() - 1);
  tune::TuneOptions o;
  o.remote = [&](const std::vector<tune::Candidate> &cs) {
    std::vector<std::string> jobs;
    for (const tune::Candidate &c : cs)
      jobs.push_back(tune::candidateText(c));
    std::vector<tune::Measurement> out(cs.size());
    mpi::dispatch(session, jobs, [&](size_t i, const std::string &answer) {
      out[i] = tune::measurementFromText(answer);
    });
    return out;
  };
  try {
    tuneAndReport(a, m, inputs, o, session.size() - 1, out, err);
  } catch (const std::exception &e) {
    session.abort(e.what()); // the workers would otherwise wait for work forever
  }
  mpi::stopWorkers(session);
}

} // namespace

void cmdTune(const TuneArgs &a, std::ostream &out, std::ostream &err) {
  checkTuneArgs(a);
  const frontend::ImportOptions inputs = importOptions(a.inputShapes, a.binds);
  if (mpi::launched()) {
    tuneOnRanks(a, inputs, out, err);
    return;
  }
  const driver::CompiledModel m = driver::compileModel(a.model, a.target, inputs);
  tuneAndReport(a, m, inputs, {}, 0, out, err);
}

} // namespace npuc::cli
