// Explore.cpp - `npuc explore SWEEP.yaml` and `npuc explore report RESULTS.jsonl`
// (docs/EXPLORE.md).
#include "explore/Explore.h"
#include "explore/Evaluate.h"
#include "explore/GeneticSearch.h"
#include "explore/Report.h"
#include "explore/Results.h"
#include "explore/Roofline.h"
#include "explore/Sweep.h"
#include "support/Error.h"
#include "tools/cli/Commands.h"

#include <fmt/format.h>

#include <filesystem>

namespace npuc::cli {

namespace {

std::string defaultOutDir(const std::string &spec) {
  namespace fs = std::filesystem;
  const fs::path p(spec);
  return (p.parent_path() / (p.stem().string() + ".explore")).string();
}

void printDryRun(const explore::SweepSpec &s, std::ostream &out) {
  const bool ga = s.strategy == explore::Strategy::Nsga2;
  const std::vector<explore::Point> pts =
      ga ? explore::GeneticSearch(s).initial() : explore::pointsToVisit(s);
  out << fmt::format("{}: {} axes, grid of {} point(s), ", s.path, s.axes.size(),
                     explore::gridSize(s));
  if (ga)
    out << fmt::format("nsga2: population {}, {} generation(s), at most {} point(s); the first "
                       "generation below; models:",
                       s.population, s.generations, int64_t(s.population) * (s.generations + 1));
  else
    out << fmt::format("visiting {}; models:", pts.size());
  for (const explore::ModelSpec &m : s.models)
    out << " " << m.name;
  out << "\n";
  for (const explore::Point &p : pts) {
    const std::string v = explore::violatedConstraint(s, p);
    out << fmt::format("  #{:<6} {}{}\n", p.index, explore::pointJson(s, p).dump(),
                       v.empty() ? "" : "  rejected: " + v);
  }
}

} // namespace

void cmdExplore(const ExploreArgs &a, std::ostream &out, std::ostream &err) {
  explore::SweepSpec s = explore::loadSweep(a.sweep);
  if (a.tuneTrials >= 0) {
    s.tuneTrials = a.tuneTrials;
    s.id = explore::sweepId(s); // tuning changes the records: another sweep
  }
  if (a.dryRun) {
    printDryRun(s, out);
    return;
  }
  explore::ExploreOptions o;
  o.outDir = a.outDir.empty() ? defaultOutDir(a.sweep) : a.outDir;
  o.jobs = a.jobs;
  o.plots = !a.noPlots;
  const explore::ExploreSummary sum = explore::runSweep(s, o, err);
  if (sum.workerRank)
    return; // an MPI worker: rank 0 prints
  out << fmt::format("{} point(s) visited: {} already in {}/results.jsonl, {} evaluated, {} "
                     "rejected by constraints\n",
                     sum.planned, sum.resumed, o.outDir, sum.evaluated, sum.rejected);
  out << sum.report;
  out << fmt::format("tables and plots in {}/ (results.csv, pareto.csv{})\n", o.outDir,
                     o.plots ? ", pareto.png/.svg, sensitivity-*.png/.svg" : "");
}

void cmdExploreReport(const ExploreArgs &a, std::ostream &out) {
  const explore::Results r = explore::readResults(a.results);
  explore::ReportOptions o;
  o.objectives = explore::metricsFromNames(a.objectives, "--objectives");
  o.plots = !a.noPlots;
  std::filesystem::path dir(a.outDir);
  if (dir.empty())
    dir = std::filesystem::path(a.results).parent_path();
  if (dir.empty())
    dir = std::filesystem::path(".");
  if (!std::filesystem::is_directory(dir))
    fail("{}: not a directory", dir.string());
  out << explore::writeReport(r, dir.string(), o);
  if (a.roofline.empty())
    return;
  const std::string specPath = r.header.value("spec", "");
  const explore::SweepSpec s = explore::loadSweep(specPath);
  if (s.id != r.header.value("sweep", ""))
    fail("{}: the spec changed since {} was written (sweep {} there, {} now); --roofline needs "
         "the sweep's own spec, base and models",
         specPath, a.results, r.header.value("sweep", ""), s.id);
  for (int64_t index : a.roofline) {
    if (index < 0 || index >= explore::gridSize(s))
      fail("--roofline {}: the sweep's points are 0 to {}", index, explore::gridSize(s) - 1);
    const explore::Point p = explore::pointAt(s, index);
    const explore::PointRoofline roof = explore::pointRoofline(s, p);
    for (const char *ext : {".png", ".svg"})
      out << explore::plotRoofline((dir / fmt::format("roofline-p{}{}", index, ext)).string(), p,
                                   roof)
          << "\n";
  }
}

} // namespace npuc::cli
