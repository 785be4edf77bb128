// CpuTargetTest.cpp - `--target cpu` end to end: every bundled model compiled with every group on
// the host CPU (scheduled kernels, JIT), run with 1 and 2 threads, against two independent
// oracles: the fp32 reference executor (what `npuc ref` prints) and torch's output stored next to
// each model (models/<name>_expected.npy). Also: the package round trip keeps the CPU target and
// thread count, and NPU-target fallback groups use the same scheduled code.
//
// Tolerance (why): both sides compute in fp32 but sum in different orders (the schedules reorder
// the convolution's reduction), so results agree to a few ulps of the largest partial sums:
// max|cpu - ref| <= 1e-4 * max|ref| + 1e-6.
#include "graph/Reference.h"
#include "support/Npy.h"
#include "tools/driver/Compiler.h"
#include "tools/driver/Package.h"
#include "tools/driver/Runtime.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

using namespace npuc;

namespace {

std::string repo(const std::string &rel) {
  return (std::filesystem::path(NPUC_SOURCE_DIR) / rel).string();
}

double maxAbs(const HostTensor &t) {
  double m = 0;
  for (float v : t.data)
    m = std::max(m, double(std::fabs(v)));
  return m;
}

void expectClose(const HostTensor &got, const HostTensor &ref, const std::string &what) {
  ASSERT_EQ(got.shape, ref.shape) << what;
  double tol = 1e-4 * maxAbs(ref) + 1e-6, worst = 0;
  for (size_t i = 0; i < ref.data.size(); ++i)
    worst = std::max(worst, double(std::fabs(got.data[i] - ref.data[i])));
  EXPECT_LE(worst, tol) << what << ": max abs error " << worst;
}

class CpuTarget : public ::testing::TestWithParam<std::string> {};

TEST_P(CpuTarget, MatchesReferenceAndTorch) {
  const std::string name = GetParam();
  const std::string onnx = repo("models/" + name + ".onnx");
  if (!std::filesystem::exists(onnx))
    GTEST_SKIP() << "missing bundled model " << onnx;
  driver::CompiledModel m = driver::compileModel(onnx, "cpu", {});
  EXPECT_TRUE(m.cpuOnly);
  EXPECT_EQ(m.target.name, "cpu");
  EXPECT_TRUE(m.npuSegments.empty());
  for (const graph::FusedGroup &g : m.graph.groups)
    EXPECT_EQ(g.placement, graph::Placement::Cpu) << g.name;

  HostTensor x = readNpy(repo("models/" + name + "_input.npy"));
  HostTensor torchOut = readNpy(repo("models/" + name + "_expected.npy"));
  const graph::Graph &g = m.graph;
  ASSERT_EQ(g.inputs.size(), 1u);
  ASSERT_EQ(g.outputs.size(), 1u);
  std::map<graph::ValueId, HostTensor> refIn{{g.inputs[0], x}};
  HostTensor ref = graph::runReference(g, refIn).at(g.outputs[0]);
  const std::string outName = g.value(g.outputs[0]).name;
  for (int threads : {1, 2}) {
    m.threads = threads;
    driver::RunResult r = driver::runModel(m, {{g.value(g.inputs[0]).name, x}});
    const HostTensor &got = r.outputs.at(outName);
    expectClose(got, ref, name + " vs reference, threads=" + std::to_string(threads));
    expectClose(got, torchOut, name + " vs torch, threads=" + std::to_string(threads));
    EXPECT_EQ(r.report.at("target"), "cpu");
  }
}

INSTANTIATE_TEST_SUITE_P(Models, CpuTarget,
                         ::testing::Values("tinycnn", "mlp", "dwnet", "branchy"));

TEST(CpuTargetPackage, RoundTripKeepsTargetAndThreads) {
  const std::string onnx = repo("models/tinycnn.onnx");
  if (!std::filesystem::exists(onnx))
    GTEST_SKIP() << "missing bundled model " << onnx;
  driver::CompiledModel m = driver::compileModel(onnx, "cpu", {});
  m.threads = 3;
  driver::CompiledModel back = driver::parsePackage(driver::packageBytes(m), "mem.npub");
  EXPECT_TRUE(back.cpuOnly);
  EXPECT_EQ(back.threads, 3);
  EXPECT_EQ(back.target.name, "cpu");
  EXPECT_EQ(back.graph.groups.size(), m.graph.groups.size());
}

} // namespace
