// Explore.cpp - the sweep loop: resume, constraints, worker threads, the strategies, the report
// (contract in Explore.h).
#include "explore/Explore.h"

#include "explore/Evaluate.h"
#include "explore/GeneticSearch.h"
#include "explore/Mpi.h"
#include "explore/Report.h"
#include "explore/Results.h"
#include "support/Error.h"
#include "support/WorkQueue.h"

#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <mutex>
#include <set>

namespace npuc::explore {

using nlohmann::json;

namespace {

std::string progressLine(const json &r, size_t done) {
  std::string line = fmt::format("[{}] point {}: {}", done, r.at("index").get<int64_t>(),
                                 r.at("status").get<std::string>());
  if (r.contains("metrics")) {
    const json &m = r.at("metrics");
    line +=
        fmt::format(" cycles {} energy {:.4g} uJ area {:.4g} mm^2", m.at("cycles").get<int64_t>(),
                    m.at("energy_uj").get<double>(), m.at("area_mm2").get<double>());
  }
  if (r.contains("reason") && r.at("status") != "ok")
    line += fmt::format(": {}", r.at("reason").get<std::string>().substr(0, 200));
  if (r.contains("timing"))
    line += fmt::format(" ({:.1f} s)", r.at("timing").value("seconds", 0.0));
  return line;
}

/// The records of a sweep by point index: those of results.jsonl, and new ones made on demand
/// (constraints first, then compiled and simulated on the worker threads) and appended.
class Evaluator {
public:
  /// `ranks`: evaluate on the other MPI ranks instead of local threads.
  Evaluator(const SweepSpec &s, const ExploreOptions &o, ResultsWriter &out, std::ostream &log,
            ExploreSummary &sum, const mpi::Session *ranks)
      : s_(s), o_(o), out_(out), log_(log), sum_(sum), ranks_(ranks) {
    for (const json &r : out.existing())
      records_[r.at("index").get<int64_t>()] = r;
  }

  /// Makes sure every point has a record.
  void evaluate(const std::vector<Point> &points) {
    std::vector<Point> todo;
    for (const Point &p : points) {
      if (!requested_.insert(p.index).second)
        continue; // asked for before in this run
      ++sum_.planned;
      if (records_.count(p.index)) {
        ++sum_.resumed; // in results.jsonl from an earlier run
        continue;
      }
      const std::string violated = violatedConstraint(s_, p);
      if (!violated.empty()) {
        ++sum_.rejected;
        record(rejectedRecord(s_, p, violated));
      } else {
        todo.push_back(p);
      }
    }
    sum_.evaluated += todo.size();
    if (ranks_) {
      mpi::dispatch(*ranks_, todo, [&](const json &r) { record(r); });
      return;
    }
    if (todo.empty())
      return;
    const PreparedModels models(s_);
    runTasks(todo.size(), o_.jobs, [&](size_t i) { record(evaluatePoint(s_, todo[i], models)); });
  }

  /// Objective values of every record so far (maximised ones negated; nullopt when not ok).
  Scores scores() const {
    Scores sc;
    for (const auto &[index, r] : records_) {
      if (r.at("status") != "ok") {
        sc[index] = std::nullopt;
        continue;
      }
      std::vector<double> v;
      for (Metric m : s_.objectives)
        v.push_back(maximised(m) ? -*metricOf(r, m) : *metricOf(r, m));
      sc[index] = v;
    }
    return sc;
  }

private:
  void record(const json &r) {
    out_.append(r);
    std::lock_guard<std::mutex> lock(mu_);
    records_[r.at("index").get<int64_t>()] = r;
    log_ << progressLine(r, ++finished_) << "\n" << std::flush;
    if (o_.onPoint)
      o_.onPoint(r);
  }

  const SweepSpec &s_;
  const ExploreOptions &o_;
  ResultsWriter &out_;
  std::ostream &log_;
  ExploreSummary &sum_;
  const mpi::Session *ranks_;
  std::mutex mu_; // records_, the log, onPoint
  std::map<int64_t, json> records_;
  std::set<int64_t> requested_;
  size_t finished_ = 0;
};

void searchGenetic(const SweepSpec &s, Evaluator &ev, std::ostream &log) {
  GeneticSearch ga(s);
  ev.evaluate(ga.initial());
  for (int g = 1; g <= s.generations; ++g) {
    const std::vector<Point> kids = ga.offspring(ev.scores());
    if (kids.empty()) {
      log << fmt::format("nsga2: generation {} bred no new point (the grid is exhausted)\n", g);
      break;
    }
    ev.evaluate(kids);
    ga.select(kids, ev.scores());
    log << fmt::format("nsga2: generation {} of {} done\n", g, s.generations);
  }
}

ExploreSummary sweepOn(const SweepSpec &s, const ExploreOptions &o, std::ostream &log,
                       const mpi::Session *ranks) {
  std::error_code ec;
  std::filesystem::create_directories(o.outDir, ec);
  if (ec || !std::filesystem::is_directory(o.outDir))
    fail("{}: cannot create the output directory: {}", o.outDir, ec.message());
  const std::string path = o.outDir + "/results.jsonl";
  ResultsWriter out(path, s);
  if (out.droppedCutLine())
    log << fmt::format("{}: dropped a last line cut short (the sweep was killed mid-write)\n",
                       path);
  ExploreSummary sum;
  Evaluator ev(s, o, out, log, sum, ranks);
  if (s.strategy == Strategy::Nsga2) {
    searchGenetic(s, ev, log);
  } else {
    const std::vector<Point> pts = pointsToVisit(s);
    ev.evaluate(pts);
  }
  if (sum.resumed)
    log << fmt::format("resumed: {} point(s) were already in {}\n", sum.resumed, path);

  ReportOptions ro;
  ro.plots = o.plots;
  ro.objectives = s.objectives; // the spec's, even when an earlier run's header named others
  sum.report = writeReport(readResults(path), o.outDir, ro);
  return sum;
}

// Under mpirun: rank 0 sweeps with the other ranks as its workers; they serve until it is done.
ExploreSummary sweepOnRanks(const SweepSpec &s, const ExploreOptions &o, std::ostream &log) {
  mpi::Session session;
  try {
    mpi::checkSameSweep(session, s);
  } catch (const std::exception &e) {
    session.abort(e.what());
  }
  ExploreSummary sum;
  if (session.rank() != 0) {
    mpi::serve(s);
    sum.workerRank = true;
    return sum;
  }
  log << fmt::format("MPI: rank 0 coordinates {} worker rank(s)\n", session.size() - 1);
  try {
    sum = sweepOn(s, o, log, &session);
  } catch (const std::exception &e) {
    session.abort(e.what()); // the workers would otherwise wait for work forever
  }
  mpi::stopWorkers(session);
  return sum;
}

} // namespace

ExploreSummary runSweep(const SweepSpec &s, const ExploreOptions &o, std::ostream &log) {
  if (mpi::launched())
    return sweepOnRanks(s, o, log);
  return sweepOn(s, o, log, nullptr);
}

} // namespace npuc::explore
