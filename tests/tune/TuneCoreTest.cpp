// TuneCoreTest.cpp - the auto-tuner's core (tune/): task extraction, records, resuming, the
// measurer's determinism across threads, tuned <= untuned, and a tuned compile against the
// reference executor.
//
// Expected values are derived here, not read from the code under test: the task counts from the
// graphs' structure, the best records from the records written, the cycles of a best point by
// measuring it again on its own.
#include "../common/GraphText.h"
#include "../e2e/E2eUtil.h"

#include "frontend/Onnx.h"
#include "graph/Passes.h"
#include "graph/Reference.h"
#include "support/Npy.h"
#include "tools/driver/Runtime.h"
#include "tune/Records.h"
#include "tune/Tuner.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace npuc::tune {
namespace {

namespace fs = std::filesystem;
using e2e::repoPath;

std::string tempPath(const std::string &name) {
  const fs::path dir = fs::temp_directory_path() / "npuc_tune_core_tests";
  fs::create_directories(dir);
  const fs::path p = dir / (name + "-" + std::to_string(::getpid()));
  fs::remove(p);
  return p.string();
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> lines(const std::string &text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string l; std::getline(ss, l);)
    out.push_back(l);
  return out;
}

// A graph through the back half of compileModel (fusion, placement, segments) for `target`.
driver::CompiledModel compileGraph(graph::Graph g, const std::string &target) {
  driver::CompiledModel m;
  m.target = isa::loadTarget(target);
  m.graph = std::move(g);
  graph::fuseOps(m.graph, driver::npuFusionFilter(m.target));
  graph::DeviceCosts costs = driver::deviceCosts(m.target);
  graph::place(m.graph, driver::npuReject(m.target), &costs);
  driver::compileWithRetry(m, driver::npuReject(m.target), m.options);
  return m;
}

// Three conv+relu blocks of one shape (different weights), then a wider conv: 4 groups, 2 keys.
const char *kRepeated = R"(graph "repeated"
  input %x: f32[1x8x8x8]
  const %w1: f32[8x8x3x3] = random(1)
  const %w2: f32[8x8x3x3] = random(2)
  const %w3: f32[8x8x3x3] = random(3)
  const %w4: f32[16x8x3x3] = random(4)
  %c1: f32[1x8x8x8] = Conv "c1"(%x, %w1) {pads = [1, 1, 1, 1]}
  %r1: f32[1x8x8x8] = Relu "r1"(%c1)
  %c2: f32[1x8x8x8] = Conv "c2"(%r1, %w2) {pads = [1, 1, 1, 1]}
  %r2: f32[1x8x8x8] = Relu "r2"(%c2)
  %c3: f32[1x8x8x8] = Conv "c3"(%r2, %w3) {pads = [1, 1, 1, 1]}
  %r3: f32[1x8x8x8] = Relu "r3"(%c3)
  %c4: f32[1x16x8x8] = Conv "c4"(%r3, %w4) {pads = [1, 1, 1, 1]}
  output %c4
)";

TEST(TuneTasks, RepeatedBlocksShareOneTask) {
  const std::string target = repoPath("configs/npu-base.yaml");
  NPUC_REQUIRE_FILE(target);
  driver::CompiledModel m = compileGraph(test::graphFromText(kRepeated), target);
  int npuGroups = 0;
  for (const graph::FusedGroup &g : m.graph.groups)
    npuGroups += g.placement == graph::Placement::Npu;
  ASSERT_EQ(npuGroups, 4); // each conv with its relu
  TaskSet ts = extractTasks(m);
  ASSERT_EQ(ts.tasks.size(), 2u);
  EXPECT_TRUE(ts.untunable.empty());
  EXPECT_EQ(ts.tasks[0].weight(), 3);
  EXPECT_EQ(ts.tasks[1].weight(), 1);
  EXPECT_EQ(ts.tasks[0].name, m.graph.groups[size_t(ts.tasks[0].groups[0])].name);
  EXPECT_EQ(ts.tasks[0].group, ts.tasks[0].groups[0]);
  // fp16: the tensor unit and the loop-nest kernel.
  EXPECT_EQ(ts.tasks[0].sketches,
            (std::vector<npu::Strategy>{npu::Strategy::TensorUnit, npu::Strategy::LoopNest}));
}

TEST(TuneTasks, ViewsAreNotTuned) {
  const std::string target = repoPath("configs/npu-base.yaml");
  const std::string onnx = repoPath("models/tinycnn.onnx");
  NPUC_REQUIRE_FILE(target);
  NPUC_REQUIRE_FILE(onnx);
  driver::CompiledModel m = driver::compileModel(onnx, target, {});
  TaskSet ts = extractTasks(m);
  int weights = 0, npuGroups = 0;
  for (const Task &t : ts.tasks)
    weights += t.weight();
  for (const Untunable &u : ts.untunable) {
    weights += u.weight;
    EXPECT_NE(u.why.find("view"), std::string::npos) << u.name << ": " << u.why;
  }
  for (const graph::FusedGroup &g : m.graph.groups)
    npuGroups += g.placement == graph::Placement::Npu;
  EXPECT_EQ(weights, npuGroups);
  EXPECT_EQ(ts.untunable.size(), 1u); // tinycnn's Flatten
}

Record record(uint64_t group, const std::string &name, int64_t toc, std::optional<int64_t> cycles,
              bool isDefault = false) {
  Record r;
  r.key = {group, 0xabcdef0123456789ull};
  r.group = name;
  r.schedule.strategy = npu::Strategy::TensorUnit;
  r.schedule.set("toc", toc).set("buffers", 2);
  r.cycles = cycles;
  r.error = cycles ? "" : "does not fit";
  r.isDefault = isDefault;
  r.seconds = 0.25;
  r.roofline = isDefault ? 100 : 0;
  r.macs = isDefault ? 4096 : 0;
  return r;
}

TEST(TuneRecords, RoundTripAndBestPerKey) {
  const std::string path = tempPath("roundtrip.jsonl");
  std::vector<Record> rs = {record(1, "a", 16, 500, true),    record(1, "a", 32, 400),
                            record(1, "a", 64, std::nullopt), record(2, "b", 16, 700, true),
                            record(1, "a", 8, 400),           record(2, "b", 32, 900)};
  {
    RecordWriter w(path, 0);
    for (const Record &r : rs)
      w.append(r);
  }
  RecordLog log = readRecords(path);
  ASSERT_EQ(log.records.size(), rs.size());
  EXPECT_TRUE(log.warnings.empty());
  EXPECT_EQ(log.validBytes, fs::file_size(path));
  for (size_t i = 0; i < rs.size(); ++i) {
    const Record &a = rs[i], &b = log.records[i];
    EXPECT_EQ(a.key, b.key);
    EXPECT_EQ(a.group, b.group);
    EXPECT_EQ(a.schedule, b.schedule);
    EXPECT_EQ(a.cycles, b.cycles);
    EXPECT_EQ(a.error, b.error);
    EXPECT_EQ(a.isDefault, b.isDefault);
    EXPECT_EQ(a.seconds, b.seconds);
    EXPECT_EQ(a.roofline, b.roofline);
    EXPECT_EQ(a.macs, b.macs);
    EXPECT_EQ(a.line(), b.line()); // the same record is the same bytes
  }
  // Key 1: 400 twice (toc 32 first, then toc 8): the first wins; the failed toc 64 never does.
  // Key 2: the default's 700 beats 900.
  npu::ScheduleFile best = bestSchedules(log.records);
  ASSERT_EQ(best.entries().size(), 2u);
  EXPECT_EQ(best.find(rs[0].key)->schedule.get("toc"), 32);
  EXPECT_EQ(best.find(rs[3].key)->schedule.get("toc"), 16);
  // The alternatives: the key's other lowered points, fastest first (toc 8 at 400, then toc 16
  // at 500; the failed toc 64 is none), at most as many as asked for.
  auto tocs = [](const std::vector<npu::Schedule> &ss) {
    std::vector<int64_t> v;
    for (const npu::Schedule &s : ss)
      v.push_back(s.get("toc"));
    return v;
  };
  EXPECT_EQ(tocs(best.find(rs[0].key)->alternatives), (std::vector<int64_t>{8, 16}));
  EXPECT_EQ(tocs(best.find(rs[3].key)->alternatives), (std::vector<int64_t>{32}));
  EXPECT_EQ(tocs(bestSchedules(log.records, 1).find(rs[0].key)->alternatives),
            (std::vector<int64_t>{8}));
  EXPECT_TRUE(bestSchedules(log.records, 0).find(rs[0].key)->alternatives.empty());
}

TEST(TuneRecords, MalformedLineNamesFileAndLine) {
  const std::string path = tempPath("malformed.jsonl");
  {
    RecordWriter w(path, 0);
    w.append(record(1, "a", 16, 500));
  }
  std::ofstream(path, std::ios::app) << "{\"version\": 1}\n"
                                     << record(1, "a", 32, 1).line() << "\n";
  try {
    readRecords(path);
    FAIL() << "a malformed line in the middle is an error";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find(path + ":2: malformed tuning record"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(readRecords(fs::temp_directory_path().string()), Error); // a directory
}

TEST(TuneRecords, TruncatedLastLineIsDroppedAndCutOff) {
  const std::string path = tempPath("truncated.jsonl");
  {
    RecordWriter w(path, 0);
    w.append(record(1, "a", 16, 500));
    w.append(record(1, "a", 32, 400));
  }
  const std::string whole = readFile(path);
  const std::string partial = record(1, "a", 64, 300).line();
  std::ofstream(path, std::ios::app) << partial.substr(0, partial.size() / 2); // killed mid-line
  RecordLog log = readRecords(path);
  ASSERT_EQ(log.records.size(), 2u);
  ASSERT_EQ(log.warnings.size(), 1u);
  EXPECT_NE(log.warnings[0].find(path + ":3: dropping a truncated last line"), std::string::npos)
      << log.warnings[0];
  EXPECT_EQ(log.validBytes, whole.size());
  {
    RecordWriter w(path, log.validBytes);
    w.append(record(1, "a", 8, 200));
  }
  EXPECT_EQ(readFile(path), whole + record(1, "a", 8, 200).line() + "\n");
}

TuneResult tuneModel(const driver::CompiledModel &m, const std::string &log, int trials,
                     int jobs = 2) {
  TuneOptions o;
  o.trials = trials;
  o.jobs = jobs;
  o.seed = 7;
  o.log = log;
  o.batch = 8;
  o.scheduler.warmup = 8;
  return tune(m, o);
}

// Every (key, schedule) of a log at most once.
void expectNoRepeats(const std::vector<Record> &rs) {
  std::set<std::string> seen;
  for (const Record &r : rs)
    EXPECT_TRUE(seen.insert(r.key.str() + " " + r.schedule.str()).second)
        << "measured twice: " << r.key.str() << " " << r.schedule.str();
}

// A bundled model compiled for npu-base: tinycnn (8 tasks and a view) by default; mlp (two
// Gemms, fast to search) for the tests of the log's bookkeeping.
class TunedModel : public ::testing::Test {
protected:
  void SetUp() override { load("tinycnn"); }
  void load(const std::string &model) {
    target_ = repoPath("configs/npu-base.yaml");
    onnx_ = repoPath("models/" + model + ".onnx");
    NPUC_REQUIRE_FILE(target_);
    NPUC_REQUIRE_FILE(onnx_);
    m_ = driver::compileModel(onnx_, target_, {});
  }
  std::string target_, onnx_;
  driver::CompiledModel m_;
};

class TunedMlp : public TunedModel {
protected:
  void SetUp() override { load("mlp"); }
};

TEST_F(TunedMlp, ResumeKeepsTheLogAndMeasuresNothingTwice) {
  const std::string path = tempPath("resume.jsonl");
  TuneResult first = tuneModel(m_, path, 40);
  EXPECT_EQ(first.trials, 40);
  const std::string before = readFile(path);
  ASSERT_EQ(lines(before).size(), 40u);
  TuneResult second = tuneModel(m_, path, 80);
  EXPECT_EQ(second.resumed, 40);
  EXPECT_EQ(second.trials, 80);
  const std::string after = readFile(path);
  EXPECT_EQ(after.substr(0, before.size()), before); // the first run's lines, byte for byte
  RecordLog log = readRecords(path);
  ASSERT_EQ(log.records.size(), 80u);
  expectNoRepeats(log.records);
  // A killed run: half a line at the end. The next run drops it, says so, and goes on.
  std::ofstream(path, std::ios::app) << log.records.back().line().substr(0, 20);
  TuneResult third = tuneModel(m_, path, 90);
  ASSERT_EQ(third.warnings.size(), 1u);
  EXPECT_NE(third.warnings[0].find(path + ":81: dropping a truncated last line"), std::string::npos)
      << third.warnings[0];
  EXPECT_EQ(readFile(path).substr(0, after.size()), after);
  RecordLog last = readRecords(path);
  EXPECT_TRUE(last.warnings.empty());
  EXPECT_EQ(last.records.size(), 90u);
  expectNoRepeats(last.records);
}

TEST_F(TunedMlp, OneAndTwoJobsRecordTheSame) {
  const std::string p1 = tempPath("jobs1.jsonl"), p2 = tempPath("jobs2.jsonl");
  tuneModel(m_, p1, 60, 1);
  tuneModel(m_, p2, 60, 2);
  std::vector<Record> a = readRecords(p1).records, b = readRecords(p2).records;
  ASSERT_EQ(a.size(), 60u);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    a[i].seconds = b[i].seconds = 0; // wall times differ
    EXPECT_EQ(a[i].line(), b[i].line()) << "record " << i;
  }
}

// Tuned <= untuned on every task, and each best point measures the same cycles again alone.
void expectTunedNoWorse(const driver::CompiledModel &m, const std::string &log, int trials) {
  TuneResult r = tuneModel(m, log, trials);
  std::vector<Record> rs = readRecords(log).records;
  TaskSet ts = extractTasks(m);
  Measurer measurer(m, ts, 1);
  ASSERT_EQ(r.tasks.size(), ts.tasks.size());
  for (size_t i = 0; i < ts.tasks.size(); ++i) {
    std::optional<int64_t> untuned, tuned;
    npu::Schedule best;
    for (const Record &rec : rs)
      if (rec.key == ts.tasks[i].key && rec.ok()) {
        if (rec.isDefault)
          untuned = rec.cycles;
        if (!tuned || *rec.cycles < *tuned) {
          tuned = rec.cycles;
          best = rec.schedule;
        }
      }
    ASSERT_TRUE(untuned) << ts.tasks[i].name << ": the default is always measured";
    EXPECT_LE(*tuned, *untuned) << ts.tasks[i].name;
    EXPECT_EQ(r.tasks[i].untuned, untuned) << ts.tasks[i].name;
    EXPECT_EQ(r.tasks[i].tuned, tuned) << ts.tasks[i].name;
    Measurement again = measurer.measure({static_cast<int>(i), best});
    EXPECT_EQ(again.cycles, tuned) << ts.tasks[i].name << " " << best.str();
  }
  EXPECT_LE(r.tunedTotal(), r.untunedTotal());
}

TEST_F(TunedModel, TunedNeverWorseThanUntunedTinyCnn) {
  expectTunedNoWorse(m_, tempPath("tiny.jsonl"), 120);
}

TEST(TuneModels, TunedNeverWorseThanUntunedDwnetAndInt8) {
  const std::string dwnet = repoPath("models/dwnet.onnx");
  const std::string base = repoPath("configs/npu-base.yaml");
  const std::string int8 = repoPath("configs/npu-int8.yaml");
  NPUC_REQUIRE_FILE(dwnet);
  NPUC_REQUIRE_FILE(int8);
  driver::CompiledModel d = driver::compileModel(dwnet, base, {});
  // The depthwise conv has both units as sketches (and the loop-nest kernel).
  bool twoUnits = false;
  for (const Task &t : extractTasks(d).tasks)
    twoUnits = twoUnits || std::count(t.sketches.begin(), t.sketches.end(),
                                      npu::Strategy::DepthwiseVector) == 1;
  EXPECT_TRUE(twoUnits);
  expectTunedNoWorse(d, tempPath("dwnet.jsonl"), 80);
  expectTunedNoWorse(driver::compileModel(repoPath("models/tinycnn.onnx"), int8, {}),
                     tempPath("tiny-int8.jsonl"), 80);
}

TEST_F(TunedModel, TunedCompileMatchesReference) {
  const std::string input = repoPath("models/tinycnn_input.npy");
  NPUC_REQUIRE_FILE(input);
  const std::string path = tempPath("reference.jsonl");
  TuneResult r = tuneModel(m_, path, 120);
  npu::CompileOptions opt;
  opt.tuned = std::make_shared<const npu::ScheduleFile>(bestSchedules(readRecords(path).records));
  driver::CompiledModel tuned = driver::compileModel(onnx_, target_, {}, opt);
  // The tuned points are used: every group whose task found a better point than its default
  // lowers that point (the one-group measuring context and the model's differ only by
  // residency, which tinycnn's groups fit beside).
  int better = 0, applied = 0;
  for (const TaskResult &t : r.tasks)
    if (t.tuned && t.untuned && *t.tuned < *t.untuned) {
      ++better;
      for (const npu::Segment &s : tuned.npuSegments)
        for (const npu::GroupInfo &gi : s.groupInfo)
          if (gi.scheduleKey == t.task.key && gi.schedule == *t.best) {
            ++applied;
            break;
          }
    }
  EXPECT_GT(better, 0);
  EXPECT_GT(applied, 0);
  HostTensor x = readNpy(input);
  const std::string in = tuned.graph.value(tuned.graph.inputs[0]).name;
  driver::RunResult run = driver::runModel(tuned, {{in, x}});
  graph::Graph ref = frontend::importOnnx(onnx_, {});
  std::map<graph::ValueId, HostTensor> refOut = graph::runReference(ref, {{ref.inputs.at(0), x}});
  for (graph::ValueId v : ref.outputs)
    e2e::expectClose(run.outputs.at(ref.value(v).name), refOut.at(v), ref.value(v).name);
}

} // namespace
} // namespace npuc::tune
