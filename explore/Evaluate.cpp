// Evaluate.cpp - compiling and simulating one design point (contract in Evaluate.h).
#include "explore/Evaluate.h"

#include "isa/Costs.h"
#include "simulator/Energy.h"
#include "simulator/Simulator.h"
#include "simulator/StatsSum.h"
#include "support/Error.h"
#include "tools/driver/Compiler.h"
#include "tune/Records.h"
#include "tune/Tuner.h"

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace npuc::explore {

using nlohmann::json;

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

json baseRecord(const SweepSpec &s, const Point &p) {
  return {{"sweep", s.id}, {"index", p.index}, {"point", pointJson(s, p)}};
}

struct ModelRun {
  json j;
  sim::SimStats stats;
  int cpuGroups = 0;
};

/// Every NPU segment of `m` simulated timing-only (cycles and action counts are exactly a
/// functional run's); adds the groups' roofline cycles to `roofline`.
sim::SimStats simulate(const driver::CompiledModel &m, const isa::Target &t, int64_t &roofline) {
  sim::SimStats total;
  for (const npu::Segment &seg : m.npuSegments) {
    sim::Memory mem = sim::Memory::sizesOnly(t, seg.dramBytes);
    sim::SimOptions o;
    o.functional = false;
    o.check = false;
    sim::addStats(total, sim::run(t, seg.program, mem, o));
    for (const npu::GroupInfo &gi : seg.groupInfo)
      roofline += gi.rooflineCycles;
  }
  return total;
}

/// A private temporary directory, removed with its contents on destruction.
class TempDir {
public:
  TempDir() {
    const char *base = std::getenv("TMPDIR");
    path_ = std::string(base && *base ? base : "/tmp") + "/npuc-explore-XXXXXX";
    if (!mkdtemp(path_.data()))
      fail("cannot create a temporary directory {}: {}", path_, std::strerror(errno));
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
  const std::string &path() const { return path_; }

private:
  std::string path_;
};

/// `m` tuned for s.tuneTrials trials with `npuc tune`'s machinery (one thread: the points run in
/// parallel already) and compiled again with the best records; `tuning` gets the tuner's figures
/// and the untuned compile's simulated cycles.
driver::CompiledModel tuned(const graph::Graph &prepared, const isa::Target &t,
                            const driver::CompiledModel &m, const SweepSpec &s, json &tuning) {
  const TempDir dir;
  tune::TuneOptions o;
  o.trials = s.tuneTrials;
  o.jobs = 1;
  o.seed = s.seed;
  o.log = dir.path() + "/tune.jsonl";
  const tune::TuneResult r = tune::tune(m, o);
  npu::CompileOptions opt;
  opt.jobs = 1; // the points run on the explorer's threads
  opt.timingOnly = true;
  opt.tuned = std::make_shared<const npu::ScheduleFile>(
      tune::bestSchedules(tune::readRecords(o.log).records));
  int64_t roofline = 0;
  tuning = {{"trials", r.trials},
            {"untuned_cycles", simulate(m, t, roofline).totalCycles},
            {"tasks_estimate_untuned", r.untunedTotal()},
            {"tasks_estimate_tuned", r.tunedTotal()}};
  return driver::compilePrepared(prepared, t, opt);
}

ModelRun runModel(const graph::Graph &prepared, const isa::Target &t, const SweepSpec &s) {
  ModelRun r;
  const auto t0 = Clock::now();
  npu::CompileOptions one;
  one.jobs = 1; // the points run on the explorer's threads
  one.timingOnly = true;
  driver::CompiledModel m = driver::compilePrepared(prepared, t, one);
  json tuning;
  if (s.tuneTrials > 0)
    m = tuned(prepared, t, m, s, tuning);
  const double compileS = secondsSince(t0);
  const auto t1 = Clock::now();
  int64_t roofline = 0;
  r.stats = simulate(m, t, roofline);
  const double simS = secondsSince(t1);
  int npuGroups = 0;
  json cpu = json::array();
  for (const graph::FusedGroup &g : m.graph.groups) {
    if (g.placement == graph::Placement::Cpu) {
      ++r.cpuGroups;
      cpu.push_back({{"group", g.name}, {"reason", g.cpuReason}});
    } else {
      ++npuGroups;
    }
  }
  const sim::SimStats &st = r.stats;
  const double energyPj = sim::energyOf(t, st).total();
  const double peak = double(t.tensor.peakMacsPerCycle());
  r.j = {
      {"cycles", st.totalCycles},
      {"latency_us", double(st.totalCycles) / t.clockGhz / 1e3},
      {"energy_uj", energyPj / 1e6},
      {"dram_bytes", st.dramBytesRead + st.dramBytesWritten},
      {"macs", st.macs},
      {"mac_utilization", st.totalCycles > 0 ? double(st.macs) / (peak * st.totalCycles) : 0.0},
      {"roofline_cycles", roofline},
      {"roofline_fraction", st.totalCycles > 0 ? double(roofline) / double(st.totalCycles) : 0.0},
      {"npu_groups", npuGroups},
      {"cpu_groups", r.cpuGroups},
      {"cpu_group_reasons", cpu},
      {"timing", {{"compile_s", compileS}, {"simulate_s", simS}}}};
  if (!tuning.is_null())
    r.j["tuning"] = tuning;
  return r;
}

json breakdowns(const isa::Target &t, const sim::SimStats &total) {
  const sim::EnergyBreakdown e = sim::energyOf(t, total);
  const isa::AreaBreakdown a = isa::areaOf(t);
  json energy = {{"mac", e.mac / 1e6}, {"vector", e.vector / 1e6}, {"leakage", e.leakage / 1e6}};
  json area = {{"tensor_unit", a.tensorUnit}, {"vector_unit", a.vectorUnit}};
  for (const isa::MemoryLevel &l : t.levels) {
    energy[l.name] = e.levels[size_t(l.index)] / 1e6;
    if (!l.isDram)
      area[l.name] = a.levels[size_t(l.index)];
  }
  return {{"energy_uj", energy}, {"area_mm2", area}};
}

// evaluatePoint's work; npuc::Error from a model's compile makes the point `failed`.
json evaluateChecked(const SweepSpec &s, const Point &p, const PreparedModels &prepared) {
  const auto t0 = Clock::now();
  json r = baseRecord(s, p);
  isa::Target t;
  try {
    t = isa::parseTarget(pointTargetText(s, p), fmt::format("point {}", p.index));
  } catch (const Error &e) {
    r["status"] = "invalid";
    r["reason"] = e.what();
    return r;
  }
  sim::SimStats total;
  json models = json::object();
  int cpuGroups = 0;
  for (size_t i = 0; i < s.models.size(); ++i) {
    const ModelSpec &ms = s.models[i];
    try {
      ModelRun mr = runModel(prepared.graph(i), t, s);
      if (ms.weight != 1)
        mr.j["weight"] = ms.weight;
      models[ms.name] = mr.j;
      cpuGroups += mr.cpuGroups;
      sim::addStats(total, mr.stats, ms.weight);
    } catch (const Error &e) {
      r["status"] = "failed";
      r["reason"] = fmt::format("{}: {}", ms.name, e.what());
      r["timing"] = {{"seconds", secondsSince(t0)}};
      return r;
    }
  }
  const double energyUj = sim::energyOf(t, total).total() / 1e6;
  const double peak = double(t.tensor.peakMacsPerCycle());
  const double latencyUs = double(total.totalCycles) / t.clockGhz / 1e3;
  r["status"] = cpuGroups > 0 && !s.allowCpuGroups ? "partial" : "ok";
  if (cpuGroups > 0)
    r["reason"] =
        fmt::format("{} group(s) run on the CPU (see models.*.cpu_group_reasons)", cpuGroups);
  r["metrics"] = {{"cycles", total.totalCycles},
                  {"latency_us", latencyUs},
                  {"energy_uj", energyUj},
                  {"area_mm2", isa::areaOf(t).total()},
                  {"dram_bytes", total.dramBytesRead + total.dramBytesWritten},
                  {"mac_utilization",
                   total.totalCycles > 0 ? double(total.macs) / (peak * total.totalCycles) : 0.0},
                  {"edp", energyUj * latencyUs}};
  r["models"] = models;
  r["breakdown"] = breakdowns(t, total);
  r["timing"] = {{"seconds", secondsSince(t0)}};
  return r;
}

} // namespace

json rejectedRecord(const SweepSpec &s, const Point &p, const std::string &constraint) {
  json r = baseRecord(s, p);
  r["status"] = "rejected";
  r["reason"] = "violates constraint: " + constraint;
  return r;
}

PreparedModels::PreparedModels(const SweepSpec &s) {
  for (const ModelSpec &ms : s.models) {
    try {
      graphs_.push_back(driver::prepareModelGraph(ms.path, ms.inputs));
      errors_.emplace_back();
    } catch (const Error &e) {
      graphs_.emplace_back();
      errors_.emplace_back(e.what());
    } catch (const std::exception &e) { // a compiler bug: each point fails with it, as before
      graphs_.emplace_back();
      errors_.emplace_back(fmt::format("internal error: {}", e.what()));
    }
  }
}

const graph::Graph &PreparedModels::graph(size_t i) const {
  NPUC_ASSERT(i < graphs_.size(), "a model of the sweep the models were prepared for");
  if (!errors_[i].empty())
    fail("{}", errors_[i]);
  return graphs_[i];
}

json evaluatePoint(const SweepSpec &s, const Point &p, const PreparedModels &models) {
  // A compiler bug in one point (an exception that is not a diagnostic) fails that point, not
  // the sweep (worker threads and MPI ranks have nowhere else to report it).
  try {
    return evaluateChecked(s, p, models);
  } catch (const std::exception &e) {
    json r = baseRecord(s, p);
    r["status"] = "failed";
    r["reason"] = fmt::format("internal error: {}", e.what());
    return r;
  }
}

std::optional<double> metricOf(const json &record, Metric m) {
  const std::string status = record.value("status", "");
  if ((status != "ok" && status != "partial") || !record.contains("metrics"))
    return std::nullopt;
  const json &v = record.at("metrics").value(metricName(m), json());
  if (!v.is_number())
    return std::nullopt;
  return v.get<double>();
}

} // namespace npuc::explore
