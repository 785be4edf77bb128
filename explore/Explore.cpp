// Explore.cpp - the sweep loop: resume, constraints, worker threads, report (contract in
// Explore.h).
#include "explore/Explore.h"

#include "explore/Evaluate.h"
#include "explore/Report.h"
#include "explore/Results.h"
#include "support/Error.h"

#include <fmt/format.h>

#include <atomic>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>

namespace npuc::explore {

using nlohmann::json;

namespace {

/// A point evaluated on a worker: a compiler bug in one point (an exception that is not a
/// diagnostic) fails that point, not the sweep.
json evaluateGuarded(const SweepSpec &s, const Point &p) {
  try {
    return evaluatePoint(s, p);
  } catch (const std::exception &e) {
    json r = {{"sweep", s.id}, {"index", p.index}, {"point", pointJson(s, p)}};
    r["status"] = "failed";
    r["reason"] = fmt::format("internal error: {}", e.what());
    return r;
  }
}

std::string progressLine(const json &r, size_t done, size_t total) {
  std::string line = fmt::format("[{}/{}] point {}: {}", done, total, r.at("index").get<int64_t>(),
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

} // namespace

ExploreSummary runSweep(const SweepSpec &s, const ExploreOptions &o, std::ostream &log) {
  std::error_code ec;
  std::filesystem::create_directories(o.outDir, ec);
  if (ec || !std::filesystem::is_directory(o.outDir))
    fail("{}: cannot create the output directory: {}", o.outDir, ec.message());
  const std::string path = o.outDir + "/results.jsonl";
  ResultsWriter out(path, s);
  if (out.droppedCutLine())
    log << fmt::format("{}: dropped a last line cut short (the sweep was killed mid-write)\n",
                       path);
  std::set<int64_t> done;
  for (const json &r : out.existing())
    done.insert(r.at("index").get<int64_t>());

  ExploreSummary sum;
  std::vector<Point> todo;
  std::mutex mu; // serialises onPoint and the log
  size_t finished = 0;
  const std::vector<Point> points = pointsToVisit(s);
  sum.planned = points.size();
  auto record = [&](const json &r) {
    out.append(r);
    std::lock_guard<std::mutex> lock(mu);
    ++finished;
    log << progressLine(r, finished, sum.planned - sum.resumed) << "\n" << std::flush;
    if (o.onPoint)
      o.onPoint(r);
  };
  for (const Point &p : points) {
    if (done.count(p.index)) {
      ++sum.resumed;
      continue;
    }
    const std::string violated = violatedConstraint(s, p);
    if (violated.empty()) {
      todo.push_back(p);
      continue;
    }
    ++sum.rejected;
    record(rejectedRecord(s, p, violated));
  }
  if (sum.resumed)
    log << fmt::format("resuming: {} of {} point(s) already in {}\n", sum.resumed, sum.planned,
                       path);
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i; (i = next.fetch_add(1)) < todo.size();)
      record(evaluateGuarded(s, todo[i]));
  };
  const int jobs = std::max(1, std::min<int>(o.jobs, int(todo.size())));
  std::vector<std::thread> threads;
  for (int j = 1; j < jobs; ++j)
    threads.emplace_back(worker);
  worker();
  for (std::thread &t : threads)
    t.join();
  sum.evaluated = todo.size();

  ReportOptions ro;
  ro.plots = o.plots;
  ro.objectives = s.objectives; // the spec's, even when an earlier run's header named others
  sum.report = writeReport(readResults(path), o.outDir, ro);
  return sum;
}

} // namespace npuc::explore
