// SweepTest.cpp - sweep specs (explore/Sweep.h): axes, points, each point's description,
// constraints, sampling, and bad specs rejected with the axis or field and the value.
#include "SweepTestUtil.h"

#include "isa/Target.h"

#include <set>

using namespace npuc;
using namespace npuc::explore;
using namespace exploretest;

namespace {

const char *kAxes = R"(axes:
  - {name: array, params: [tensor_unit.rows, tensor_unit.cols], values: [[8, 8], [32, 32]]}
  - {param: memory.l1.size, values: [256 KiB, 512 KiB, 1 MiB]}
  - {param: dram.bytes_per_cycle, range: {from: 4, to: 16, times: 2}}
  - {name: exp, optional_ops: [exp, tanh]}
objectives: [cycles, area_mm2]
)";

} // namespace

TEST(ExploreSweep, AxesPointsAndDescriptions) {
  const std::string dir = testDir();
  const SweepSpec s = loadSweep(writeSpec(dir, kAxes));
  ASSERT_EQ(s.axes.size(), 4u);
  EXPECT_EQ(s.axes[1].name, "memory.l1.size");
  EXPECT_EQ(s.axes[2].values.size(), 3u); // 4, 8, 16
  EXPECT_EQ(s.axes[2].values[2][0], 16);
  EXPECT_EQ(gridSize(s), 2 * 3 * 3 * 2);
  EXPECT_EQ(s.objectives, (std::vector<Metric>{Metric::Cycles, Metric::AreaMm2}));
  EXPECT_EQ(s.models.at(0).name, "tinycnn");

  // Mixed radix, first axis most significant: 1*18 + 2*6 + 1*2 + 1 = 33.
  const Point p = pointAt(s, 33);
  EXPECT_EQ(p.choice, (std::vector<int>{1, 2, 1, 1}));
  EXPECT_EQ(pointJson(s, p).dump(), R"({"array":[32,32],"dram.bytes_per_cycle":8,)"
                                    R"("exp":true,"memory.l1.size":"1 MiB"})");
  const isa::Target t = isa::parseTarget(pointTargetText(s, p), "p");
  EXPECT_EQ(t.name, "npu-base-p33");
  EXPECT_EQ(t.tensor.rows, 32);
  EXPECT_EQ(t.tensor.cols, 32);
  EXPECT_EQ(t.level("l1").size, 1 << 20);
  EXPECT_EQ(t.dram.bytesPerCycle, 8);
  EXPECT_TRUE(t.vector.supports(isa::VecOp::Exp));
  EXPECT_TRUE(t.vector.supports(isa::VecOp::Tanh));
  // Everything the point does not set is the base's, instructions included.
  const isa::Target base = isa::loadTarget(src("configs/npu-base.yaml"));
  EXPECT_EQ(t.level("l0a").size, base.level("l0a").size);
  EXPECT_EQ(t.instrs.size(), base.instrs.size());
  const isa::Target t0 = isa::parseTarget(pointTargetText(s, pointAt(s, 0)), "p");
  EXPECT_FALSE(t0.vector.supports(isa::VecOp::Exp));
  EXPECT_EQ(t0.vector.ops.size(), base.vector.ops.size());
}

TEST(ExploreSweep, ConstraintsFilterPoints) {
  const std::string dir = testDir();
  const SweepSpec s = loadSweep(writeSpec(
      dir, std::string(kAxes) + "constraints:\n"
                                "  - memory.l1.size >= 512 KiB or dram.bytes_per_cycle >= 8\n"
                                "  - memory.l0a.size >= tensor_unit.rows * tensor_unit.cols * 128\n"
                                "  - not exp or memory.l1.size == 1 MiB\n"));
  // choice {array, l1, dram, exp}: index = a*18 + l*6 + d*2 + e.
  EXPECT_EQ(violatedConstraint(s, pointAt(s, 0)),
            "memory.l1.size >= 512 KiB or dram.bytes_per_cycle >= 8");
  EXPECT_EQ(violatedConstraint(s, pointAt(s, 2)), ""); // 8x8, 256 KiB, 8 B/cycle, no exp
  // 32x32 needs 128 KiB of l0a; npu-base has 64.
  EXPECT_EQ(violatedConstraint(s, pointAt(s, 18 + 2)),
            "memory.l0a.size >= tensor_unit.rows * tensor_unit.cols * 128");
  EXPECT_EQ(violatedConstraint(s, pointAt(s, 6 + 2 + 1)), "not exp or memory.l1.size == 1 MiB");
  EXPECT_EQ(violatedConstraint(s, pointAt(s, 12 + 2 + 1)), "");

  expectSpecError(dir, std::string(kAxes) + "constraints: [array > 8]\n",
                  {"names axis 'array', which sets several fields"});
  expectSpecError(dir, std::string(kAxes) + "constraints: [memory.l9.size > 8]\n",
                  {"constraints[0]: 'memory.l9.size' is neither an axis nor a numeric field"});
  expectSpecError(dir, std::string(kAxes) + "constraints: [memory.l1.size >]\n",
                  {"constraints[0]: expected a number, a name or '('"});
}

TEST(ExploreSweep, RandomSamplesAreDistinctAndSeeded) {
  const std::string dir = testDir();
  const SweepSpec a =
      loadSweep(writeSpec(dir, std::string(kAxes) + "search: {strategy: random, samples: 10}\n"));
  const std::vector<Point> p1 = pointsToVisit(a), p2 = pointsToVisit(a);
  ASSERT_EQ(p1.size(), 10u);
  std::set<int64_t> seen;
  for (size_t i = 0; i < p1.size(); ++i) {
    EXPECT_EQ(p1[i].index, p2[i].index);
    EXPECT_EQ(pointAt(a, p1[i].index).choice, p1[i].choice); // index and choice agree
    seen.insert(p1[i].index);
  }
  EXPECT_EQ(seen.size(), 10u);
  const SweepSpec b = loadSweep(
      writeSpec(dir, std::string(kAxes) + "search: {strategy: random, samples: 10, seed: 7}\n"));
  std::vector<int64_t> i1, i2;
  for (size_t i = 0; i < 10; ++i) {
    i1.push_back(p1[i].index);
    i2.push_back(pointsToVisit(b)[i].index);
  }
  EXPECT_NE(i1, i2);
  // More samples than points: every point once.
  const SweepSpec c =
      loadSweep(writeSpec(dir, std::string(kAxes) + "search: {strategy: random, samples: 1000}\n"));
  EXPECT_EQ(pointsToVisit(c).size(), size_t(gridSize(c)));
  // The strategy is not part of the sweep's identity (a grid may resume a sample); the axes are.
  EXPECT_EQ(a.id, b.id);
  const SweepSpec d = loadSweep(writeSpec(dir, std::string(kAxes) + "allow_cpu_groups: true\n"));
  EXPECT_NE(a.id, d.id);
}

TEST(ExploreSweep, BadSpecsNameTheAxisAndValue) {
  const std::string dir = testDir();
  const std::string obj = "objectives: [cycles]\n";
  expectSpecError(
      dir, "axes:\n  - {param: memory.l1.sise, values: [1]}\n" + obj,
      {"sweep.yaml: axes[0] (memory.l1.sise)", "the base target has no field 'memory.l1.sise'"});
  expectSpecError(dir, "axes:\n  - {param: memory.l3.size, values: [1]}\n" + obj,
                  {"no field 'memory.l3.size'"});
  expectSpecError(dir,
                  "axes:\n  - {name: a, params: [tensor_unit.rows, tensor_unit.cols], "
                  "values: [[8, 8], [16]]}\n" +
                      obj,
                  {"axes[0].values[1]", "a value of axis 'a' sets 2 fields"});
  expectSpecError(dir, "axes:\n  - {param: tensor_unit.rows, values: [8, 16, 8]}\n" + obj,
                  {"axes[0].values[2]", "lists the value [8] twice"});
  expectSpecError(dir, "axes:\n  - {param: tensor_unit.rows, values: []}\n" + obj,
                  {"axis 'tensor_unit.rows' has no values"});
  expectSpecError(dir,
                  "axes:\n  - {param: tensor_unit.rows, range: {from: 8, to: 4, step: 1}}\n" + obj,
                  {"axes[0].range", "to (4) is below from (8)"});
  expectSpecError(dir,
                  "axes:\n  - {param: tensor_unit.rows, range: {from: 8, to: 64, step: 1, "
                  "times: 2}}\n" +
                      obj,
                  {"exactly one of step"});
  expectSpecError(dir, "axes:\n  - {param: tensor_unit.rows, valuse: [8]}\n" + obj,
                  {"axes[0].valuse: unknown key"});
  expectSpecError(dir, "axes:\n  - {optional_ops: [exp, gelu]}\n" + obj,
                  {"axes[0].optional_ops[1]: unknown vector op 'gelu'"});
  expectSpecError(dir,
                  "axes:\n  - {param: tensor_unit.rows, values: [8]}\n"
                  "objectives: [speed]\n",
                  {"objectives[0]: unknown objective 'speed' (expected one of: cycles,"});
  expectSpecError(
      dir,
      "axes:\n  - {param: tensor_unit.rows, values: [8]}\n" + obj +
          "search: {strategy: annealing}\n",
      {"search.strategy: unknown strategy 'annealing' (expected grid, random or nsga2)"});
  expectSpecError(dir,
                  "axes:\n  - {param: tensor_unit.rows, values: [8]}\n" + obj +
                      "search: {strategy: grid, population: 8}\n",
                  {"search.population: only the nsga2 strategy breeds generations"});
  expectSpecError(dir,
                  "axes:\n  - {param: tensor_unit.rows, values: [8]}\n" + obj +
                      "search: {strategy: nsga2, population: 8}\n",
                  {"search.generations: missing required field"});
  expectSpecError(dir, "axes: []\n" + obj, {"axes: lists no axis"});
  expectSpecError(dir, "axes:\n  - {param: tensor_unit.rows, values: [8]}\n" + obj,
                  {"models[0]: model file", "nope.onnx' does not exist"}, "models: [nope.onnx]\n");
  expectSpecError(dir, "axes:\n  - {param: tensor_unit.rows, values: [8]}\n" + obj,
                  {"two models are named 'tinycnn'"},
                  "models: [" + src("models/tinycnn.onnx") + ", " + src("models/tinycnn.onnx") +
                      "]\n");
  expectSpecError(dir, "axes:\n  - {param: tensor_unit.rows, values: [8]}\n" + obj,
                  {"models[0].weight", "out of range"},
                  "models: [{path: " + src("models/tinycnn.onnx") + ", weight: 0}]\n");
}
