// SweepRunTest.cpp - small sweeps compiled and simulated for real: each point's record, invalid
// points, results.jsonl (resume after a kill, another sweep's file refused), and threads giving
// what one thread gives.
#include "SweepTestUtil.h"

#include "explore/Evaluate.h"
#include "explore/Explore.h"
#include "explore/Report.h"
#include "explore/Results.h"
#include "isa/Costs.h"
#include "isa/Program.h"
#include "tools/driver/Compiler.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include <fstream>
#include <sstream>

using namespace npuc;
using namespace npuc::explore;
using namespace exploretest;
using nlohmann::json;

namespace {

const char *kSpec = R"(axes:
  - {name: array, params: [tensor_unit.rows, tensor_unit.cols], values: [[8, 8], [16, 16]]}
  - {param: memory.l1.size, values: [512 KiB, 1000, 1 MiB]}
  - {param: dram.bytes_per_cycle, values: [8, 16]}
constraints: [dram.bytes_per_cycle >= 16 or memory.l1.size >= 1 MiB]
objectives: [cycles, area_mm2]
allow_cpu_groups: true
)";

std::string models() {
  return "models: [" + src("models/tinycnn.onnx") + ", " + src("models/mlp.onnx") + "]\n";
}

/// The records of a results file by index, without their wall times.
std::map<int64_t, json> byIndex(const std::string &path) {
  std::map<int64_t, json> m;
  for (json r : readResults(path).records) {
    r.erase("timing");
    if (r.contains("models"))
      for (auto &[name, mr] : r.at("models").items())
        mr.erase("timing");
    m[r.at("index").get<int64_t>()] = r;
  }
  return m;
}

ExploreOptions options(const std::string &dir, int jobs) {
  ExploreOptions o;
  o.outDir = dir;
  o.jobs = jobs;
  o.plots = false; // plots are the CLI test's
  return o;
}

} // namespace

TEST(ExploreRun, PointRecords) {
  const std::string dir = testDir();
  const SweepSpec s = loadSweep(writeSpec(dir, kSpec, models()));
  // 16x16, 1 MiB, 16 B/cycle: npu-base itself.
  const PreparedModels prepared(s);
  json r = evaluatePoint(s, pointAt(s, 6 + 2 * 2 + 1), prepared);
  ASSERT_EQ(r.at("status"), "ok") << r.dump(1);
  EXPECT_EQ(r.at("point").dump(),
            R"({"array":[16,16],"dram.bytes_per_cycle":16,"memory.l1.size":"1 MiB"})");
  const json &m = r.at("metrics");
  const json &tiny = r.at("models").at("tinycnn"), &mlp = r.at("models").at("mlp");
  EXPECT_EQ(m.at("cycles").get<int64_t>(),
            tiny.at("cycles").get<int64_t>() + mlp.at("cycles").get<int64_t>());
  EXPECT_NEAR(m.at("latency_us").get<double>(), m.at("cycles").get<double>() / 1e3, 1e-9);
  EXPECT_NEAR(m.at("edp").get<double>(),
              m.at("energy_uj").get<double>() * m.at("latency_us").get<double>(), 1e-6);
  // Softmax has no exp on npu-base: a CPU group, recorded with its reason.
  EXPECT_GE(tiny.at("cpu_groups").get<int>(), 1);
  EXPECT_NE(tiny.at("cpu_group_reasons").dump().find("Softmax"), std::string::npos);
  // The breakdowns sum to the totals.
  double e = 0, a = 0;
  for (auto &[k, v] : r.at("breakdown").at("energy_uj").items())
    e += v.get<double>();
  for (auto &[k, v] : r.at("breakdown").at("area_mm2").items())
    a += v.get<double>();
  EXPECT_NEAR(e, m.at("energy_uj").get<double>(), 1e-9 * e);
  EXPECT_NEAR(a, m.at("area_mm2").get<double>(), 1e-9 * a);
  // The point's area is the preset's (the same description).
  EXPECT_NEAR(m.at("area_mm2").get<double>(),
              isa::areaOf(isa::loadTarget(src("configs/npu-base.yaml"))).total(), 1e-9);

  // A description the loader rejects: invalid, with the loader's message.
  json bad = evaluatePoint(s, pointAt(s, 2 + 1), prepared);
  EXPECT_EQ(bad.at("status"), "invalid");
  EXPECT_NE(bad.at("reason").get<std::string>().find("size 1000 is not a multiple of"),
            std::string::npos)
      << bad.dump();
  EXPECT_FALSE(metricOf(bad, Metric::Cycles));

  // Without allow_cpu_groups the same point is partial (and off the front).
  const SweepSpec strict = loadSweep(writeSpec(
      dir, std::string(kSpec).replace(std::string(kSpec).find("allow_cpu_groups: true"), 22, ""),
      models()));
  EXPECT_EQ(evaluatePoint(strict, pointAt(strict, 11), PreparedModels(strict)).at("status"),
            "partial");
}

// A point's compile starts from the model prepared once for the sweep and packs no constants
// (CompileOptions::timingOnly); its program is a fresh full compile's, instruction for
// instruction, with as many (zero) constant bytes.
TEST(ExploreRun, PreparedTimingOnlyCompileIsTheFreshCompile) {
  const std::string dir = testDir();
  const SweepSpec s = loadSweep(writeSpec(dir, kSpec, models()));
  const PreparedModels prepared(s);
  for (int64_t index : {0, 11}) {
    const isa::Target t =
        isa::parseTarget(pointTargetText(s, pointAt(s, index)), fmt::format("point {}", index));
    for (size_t i = 0; i < s.models.size(); ++i) {
      SCOPED_TRACE(fmt::format("point {}, {}", index, s.models[i].name));
      const driver::CompiledModel fresh = driver::compileModel(s.models[i].path, t, {});
      npu::CompileOptions o;
      o.timingOnly = true;
      const driver::CompiledModel quick = driver::compilePrepared(prepared.graph(i), t, o);
      ASSERT_EQ(quick.npuSegments.size(), fresh.npuSegments.size());
      ASSERT_FALSE(fresh.npuSegments.empty());
      for (size_t k = 0; k < fresh.npuSegments.size(); ++k) {
        const npu::Segment &a = fresh.npuSegments[k], &b = quick.npuSegments[k];
        EXPECT_EQ(isa::disassemble(t, b.program), isa::disassemble(t, a.program));
        EXPECT_EQ(b.dramBytes, a.dramBytes);
        EXPECT_EQ(b.constImage.size(), a.constImage.size());
        EXPECT_TRUE(b.timingOnly);
        EXPECT_FALSE(a.timingOnly);
        EXPECT_TRUE(std::all_of(b.constImage.begin(), b.constImage.end(),
                                [](uint8_t x) { return x == 0; }));
        EXPECT_TRUE(std::any_of(a.constImage.begin(), a.constImage.end(),
                                [](uint8_t x) { return x != 0; }));
      }
    }
  }
}

// A model's weight (runs per workload) multiplies its share of the point's metrics and of the
// energy breakdown; the per-model figures stay one run's, and the weight is part of the sweep.
TEST(ExploreRun, ModelWeightsScaleTheirShare) {
  const std::string dir = testDir();
  const std::string body = "axes:\n  - {param: dram.bytes_per_cycle, values: [16]}\n"
                           "objectives: [cycles]\nallow_cpu_groups: true\n";
  const std::string tiny = src("models/tinycnn.onnx"), mlp = src("models/mlp.onnx");
  const SweepSpec plain = loadSweep(writeSpec(dir, body, models()));
  const SweepSpec weighted =
      loadSweep(writeSpec(dir, body, "models: [" + tiny + ", {path: " + mlp + ", weight: 3}]\n"));
  EXPECT_NE(plain.id, weighted.id);
  const json a = evaluatePoint(plain, pointAt(plain, 0), PreparedModels(plain));
  const json b = evaluatePoint(weighted, pointAt(weighted, 0), PreparedModels(weighted));
  ASSERT_EQ(b.at("status"), "ok") << b.dump(1);
  const json &ma = a.at("models"), &mb = b.at("models");
  EXPECT_EQ(mb.at("mlp").at("cycles"), ma.at("mlp").at("cycles"));
  EXPECT_EQ(mb.at("mlp").at("weight"), 3);
  EXPECT_FALSE(mb.at("tinycnn").contains("weight"));
  const int64_t tc = ma.at("tinycnn").at("cycles").get<int64_t>();
  const int64_t mc = ma.at("mlp").at("cycles").get<int64_t>();
  EXPECT_EQ(b.at("metrics").at("cycles").get<int64_t>(), tc + 3 * mc);
  const double te = ma.at("tinycnn").at("energy_uj").get<double>();
  const double me = ma.at("mlp").at("energy_uj").get<double>();
  EXPECT_NEAR(b.at("metrics").at("energy_uj").get<double>(), te + 3 * me, 1e-9 * (te + 3 * me));
  // The breakdown is the weighted workload's: it sums to the weighted energy.
  double parts = 0;
  for (auto &[k, v] : b.at("breakdown").at("energy_uj").items())
    parts += v.get<double>();
  EXPECT_NEAR(parts, te + 3 * me, 1e-9 * (te + 3 * me));
}

TEST(ExploreRun, ThreadsResumeAndReport) {
  const std::string dir = testDir();
  const SweepSpec s = loadSweep(writeSpec(dir, kSpec, models()));
  std::ostringstream log;
  const ExploreSummary one = runSweep(s, options(dir + "/one", 1), log);
  EXPECT_EQ(one.planned, 12u);
  EXPECT_EQ(one.rejected, 4u); // 8 B/cycle below 1 MiB, both arrays
  EXPECT_EQ(one.evaluated, 8u);
  const std::map<int64_t, json> serial = byIndex(dir + "/one/results.jsonl");
  ASSERT_EQ(serial.size(), 12u);
  EXPECT_EQ(serial.at(0).at("status"), "rejected");
  EXPECT_EQ(serial.at(3).at("status"), "invalid");

  // Two threads: the same records.
  (void)runSweep(s, options(dir + "/two", 2), log);
  EXPECT_EQ(byIndex(dir + "/two/results.jsonl"), serial);

  // A sweep killed after the header and three records, mid-way through the fourth: the rerun
  // drops the cut line, keeps the three, evaluates the rest, and ends with the same set.
  std::ifstream in(dir + "/one/results.jsonl");
  std::string line, cut;
  for (int i = 0; i < 4 && std::getline(in, line); ++i)
    cut += line + "\n";
  std::getline(in, line);
  cut += line.substr(0, line.size() / 2);
  std::filesystem::create_directories(dir + "/killed");
  std::ofstream(dir + "/killed/results.jsonl") << cut;
  std::ostringstream log2;
  const ExploreSummary resumed = runSweep(s, options(dir + "/killed", 1), log2);
  EXPECT_EQ(resumed.resumed, 3u);
  EXPECT_NE(log2.str().find("dropped a last line cut short"), std::string::npos) << log2.str();
  EXPECT_EQ(byIndex(dir + "/killed/results.jsonl"), serial);
  // Nothing left to do on a third run.
  EXPECT_EQ(runSweep(s, options(dir + "/killed", 1), log2).evaluated, 0u);

  // The front: ok records no other ok record beats in cycles and area.
  const Results r = readResults(dir + "/one/results.jsonl");
  const std::vector<size_t> front = paretoRecords(r, s.objectives);
  ASSERT_FALSE(front.empty());
  for (size_t i = 0; i < r.records.size(); ++i) {
    if (r.records[i].at("status") != "ok")
      continue;
    const double c = *metricOf(r.records[i], Metric::Cycles),
                 a = *metricOf(r.records[i], Metric::AreaMm2);
    bool dominated = false;
    for (const json &o : r.records)
      if (o.at("status") == "ok") {
        const double oc = *metricOf(o, Metric::Cycles), oa = *metricOf(o, Metric::AreaMm2);
        dominated = dominated || (oc <= c && oa <= a && (oc < c || oa < a));
      }
    const bool onFront = std::find(front.begin(), front.end(), i) != front.end();
    EXPECT_EQ(onFront, !dominated) << r.records[i].dump();
  }
  std::ifstream csv(dir + "/one/pareto.csv");
  std::string header;
  std::getline(csv, header);
  EXPECT_EQ(header.rfind("index,status,array,memory.l1.size,dram.bytes_per_cycle,cycles,", 0), 0u)
      << header;
}

TEST(ExploreRun, ResultsFilesOfAnotherSweepAreRefused) {
  const std::string dir = testDir();
  const SweepSpec s = loadSweep(writeSpec(dir, kSpec, models()));
  std::filesystem::create_directories(dir + "/out");
  std::ofstream(dir + "/out/results.jsonl")
      << R"({"npuc_explore":1,"sweep":"0123456789abcdef","spec":"other.yaml"})"
      << "\n";
  try {
    ResultsWriter w(dir + "/out/results.jsonl", s);
    FAIL();
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("holds the results of another sweep (0123456789abcdef, "
                                         "from other.yaml)"),
              std::string::npos)
        << e.what();
  }
  std::ofstream(dir + "/bad.jsonl") << R"({"npuc_explore":1,"sweep":"x"})"
                                    << "\n{oops\n{}\n";
  try {
    readResults(dir + "/bad.jsonl");
    FAIL();
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("bad.jsonl:2: not a JSON record"), std::string::npos)
        << e.what();
  }
}

TEST(ExploreRun, TunedPoints) {
  const std::string dir = testDir();
  const std::string body = R"(axes:
  - {param: dram.bytes_per_cycle, values: [16]}
objectives: [cycles]
allow_cpu_groups: true
)";
  const SweepSpec plain = loadSweep(writeSpec(dir, body));
  const SweepSpec s = loadSweep(writeSpec(dir, body + "tune_trials: 6\n"));
  EXPECT_NE(plain.id, s.id); // tuning changes the records: another sweep
  const json r = evaluatePoint(s, pointAt(s, 0), PreparedModels(s));
  ASSERT_EQ(r.at("status"), "ok") << r.dump(1);
  const json &m = r.at("models").at("tinycnn");
  ASSERT_TRUE(m.contains("tuning")) << m.dump(1);
  const json &t = m.at("tuning");
  EXPECT_GE(t.at("trials").get<int>(), 1);
  // The untuned compile is what the sweep without tuning measures.
  const json u = evaluatePoint(plain, pointAt(plain, 0), PreparedModels(plain));
  EXPECT_EQ(t.at("untuned_cycles"), u.at("models").at("tinycnn").at("cycles"));
  EXPECT_FALSE(u.at("models").at("tinycnn").contains("tuning"));
  EXPECT_GT(m.at("cycles").get<int64_t>(), 0);
  expectSpecError(dir, body + "tune_trials: -1\n", {"tune_trials", "out of range"});
}
