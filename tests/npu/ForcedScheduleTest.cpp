// ForcedScheduleTest.cpp - a whole model compiled with some groups forced to other points of
// their schedule spaces (CompileOptions::schedules, what `npuc compile --schedule` reads), or
// given tuned points (CompileOptions::tuned, the tuning records `npuc compile` applies): the
// bundled branchy model (models/branchy.onnx), whose Concat (its output kept resident in L1) and
// AveragePool groups run the Concat and pooling kernels.
//
// Expectation (derived): the forced points change only tiles and buffering. A Concat copies
// bytes, and a pooled output element is the same sequence of fp32 operations (its taps in
// order, then its divisor) whatever tile holds it, so the outputs are bit-identical to the
// default compile's, while each forced group reports the point it was given.
#include "NpuTestUtil.h"

#include "tools/driver/Compiler.h"
#include "tools/driver/Runtime.h"

#include <gtest/gtest.h>

namespace npuc::test {
namespace {

std::vector<const npu::GroupInfo *> npuGroups(const driver::CompiledModel &m) {
  std::vector<const npu::GroupInfo *> v;
  for (const npu::Segment &s : m.npuSegments)
    for (const npu::GroupInfo &gi : s.groupInfo)
      v.push_back(&gi);
  return v;
}

// A point other than the default: single buffers and the smallest tile the default implies
// (one output row for pooling, half the buffer for a Concat), each a candidate of its decision.
std::optional<npu::Schedule> smaller(const npu::Schedule &d) {
  npu::Schedule s = d;
  switch (d.strategy) {
  case npu::Strategy::Pool:
    s.set("toh", 1);
    break;
  case npu::Strategy::Concat:
    s.set("elems", std::max<int64_t>(1, d.get("elems") / 2));
    break;
  default:
    return std::nullopt;
  }
  s.set("buffers", 1);
  return s;
}

TEST(ForcedSchedule, BranchyWithOtherPointsMatchesTheDefault) {
  const std::string model = std::string(NPUC_SOURCE_DIR) + "/models/branchy.onnx";
  const isa::Target t = isa::loadTarget(configPath("npu-base.yaml"));
  driver::CompiledModel m0 = driver::compileModel(model, t, {});
  auto file = std::make_shared<npu::ScheduleFile>();
  std::map<std::string, npu::Schedule> forced;
  for (const npu::GroupInfo *gi : npuGroups(m0))
    if (std::optional<npu::Schedule> s = smaller(gi->schedule)) {
      ASSERT_NE(*s, gi->schedule);
      file->put(gi->scheduleKey, *s, gi->name);
      forced[gi->name] = *s;
    }
  ASSERT_EQ(forced.size(), 2u) << "branchy has one Concat and one AveragePool group";
  npu::CompileOptions opt;
  opt.schedules = file;
  driver::CompiledModel m1 = driver::compileModel(model, t, {}, opt);
  int seen = 0;
  for (const npu::GroupInfo *gi : npuGroups(m1))
    if (auto it = forced.find(gi->name); it != forced.end()) {
      EXPECT_EQ(gi->schedule.str(), it->second.str()) << gi->name << ": " << gi->tiling;
      EXPECT_NE(gi->tiling.find("single-buffered"), std::string::npos) << gi->tiling;
      ++seen;
    }
  EXPECT_EQ(seen, 2);
  const graph::Value &inV = m0.graph.value(m0.graph.inputs.at(0));
  HostTensor in(inV.shape, halves(randomData(static_cast<size_t>(numElements(inV.shape)), 7)));
  driver::RunResult r0 = driver::runModel(m0, {{inV.name, in}});
  driver::RunResult r1 = driver::runModel(m1, {{inV.name, in}});
  ASSERT_EQ(r0.outputs.size(), r1.outputs.size());
  for (const auto &[name, out] : r0.outputs) {
    const HostTensor &got = r1.outputs.at(name);
    ASSERT_EQ(got.shape, out.shape);
    for (size_t i = 0; i < out.data.size(); ++i)
      ASSERT_EQ(got.data[i], out.data[i]) << name << " element " << i;
  }
}

// Tuned records (CompileOptions::tuned) through the driver, as `npuc compile` applies them: the
// AveragePool group takes its legal tuned point; the Concat group's record names another kind of
// kernel, so it compiles as by default and its segment carries the warning the CLI prints. The
// outputs are bit-identical to the default compile's, as above.
TEST(TunedSchedule, RecordsReachTheCompiledModel) {
  const std::string model = std::string(NPUC_SOURCE_DIR) + "/models/branchy.onnx";
  const isa::Target t = isa::loadTarget(configPath("npu-base.yaml"));
  driver::CompiledModel m0 = driver::compileModel(model, t, {});
  auto file = std::make_shared<npu::ScheduleFile>();
  npu::Schedule pool, stale;
  std::string concatName;
  for (const npu::GroupInfo *gi : npuGroups(m0))
    if (gi->schedule.strategy == npu::Strategy::Pool) {
      pool = *smaller(gi->schedule);
      file->put(gi->scheduleKey, pool, gi->name);
    } else if (gi->schedule.strategy == npu::Strategy::Concat) {
      stale.strategy = npu::Strategy::Pool; // a record made for another model
      stale.set("buffers", 1).set("tc", 1).set("toh", 1);
      file->put(gi->scheduleKey, stale, gi->name);
      concatName = gi->name;
    }
  ASSERT_EQ(file->entries().size(), 2u) << "branchy has one Concat and one AveragePool group";
  npu::CompileOptions opt;
  opt.tuned = file;
  driver::CompiledModel m1 = driver::compileModel(model, t, {}, opt);
  std::vector<std::string> warnings;
  for (const npu::Segment &s : m1.npuSegments)
    warnings.insert(warnings.end(), s.warnings.begin(), s.warnings.end());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0], "group '" + concatName + "': tuning record " + stale.str() +
                             " ignored: strategy 'pool' is not one of this group's (concat)");
  int seen = 0;
  for (const npu::GroupInfo *gi : npuGroups(m1))
    if (gi->schedule.strategy == npu::Strategy::Pool) {
      EXPECT_EQ(gi->schedule, pool) << gi->schedule.str();
      EXPECT_NE(gi->tiling.find(" (tuned)"), std::string::npos) << gi->tiling;
      ++seen;
    }
  EXPECT_EQ(seen, 1);
  const graph::Value &inV = m0.graph.value(m0.graph.inputs.at(0));
  HostTensor in(inV.shape, halves(randomData(static_cast<size_t>(numElements(inV.shape)), 7)));
  driver::RunResult r0 = driver::runModel(m0, {{inV.name, in}});
  driver::RunResult r1 = driver::runModel(m1, {{inV.name, in}});
  for (const auto &[name, out] : r0.outputs) {
    const HostTensor &got = r1.outputs.at(name);
    ASSERT_EQ(got.shape, out.shape);
    for (size_t i = 0; i < out.data.size(); ++i)
      ASSERT_EQ(got.data[i], out.data[i]) << name << " element " << i;
  }
}

} // namespace
} // namespace npuc::test
