// RetryTest.cpp - a group that fails to compile for the NPU does not fail the compile: the
// driver splits it or moves it to the CPU with the reason, and the model still matches the
// reference executor. Also: fusion and placement keep every bundled model's NPU work on the NPU.
#include "E2eUtil.h"

#include "frontend/Onnx.h"
#include "graph/Passes.h"
#include "graph/Reference.h"
#include "graph/ShapeInference.h"
#include "npu/pipeline/Compile.h"
#include "support/Error.h"
#include "support/Npy.h"
#include "tools/driver/Compiler.h"
#include "tools/driver/Runtime.h"

#include <fstream>
#include <sstream>

namespace npuc::e2e {
namespace {

std::string readText(const std::string &path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// npu-base whose DRAM loads can only address the first 64 KiB: the tiling dry run at placement
// does not see addresses, so groups pass placement and then fail in instruction encoding when
// their tensors or weights lie above 64 KiB.
isa::Target narrowLoads() {
  std::string y = readText(repoPath("configs/npu-base.yaml"));
  size_t ld = y.find("mnemonic: ld ");
  const std::string field = "{name: src_addr, width: 32}";
  size_t at = y.find(field, ld);
  EXPECT_NE(at, std::string::npos) << "npu-base's ld src_addr field changed";
  y.replace(at, field.size(), "{name: src_addr, width: 16}");
  return isa::parseTarget(y, "npu-base with 16-bit ld src_addr");
}

TEST(Retry, FailingGroupsMoveToTheCpuAndTheModelStillMatches) {
  const std::string onnx = repoPath("models/tinycnn.onnx");
  const std::string input = repoPath("models/tinycnn_input.npy");
  NPUC_REQUIRE_FILE(onnx);
  NPUC_REQUIRE_FILE(input);
  isa::Target t = narrowLoads();
  // Every intermediate in DRAM: kept in L1 (CompileOptions::residency), tinycnn's tensors would
  // take no DRAM addresses and none would lie above 64 KiB.
  npu::CompileOptions opt;
  opt.residency = false;

  // Without the retry, compiling the fused groups as placed fails in encoding: a Reject that
  // names the group whose instruction cannot hold the address (a group of that segment).
  {
    driver::CompiledModel m;
    m.target = t;
    m.graph = frontend::importOnnx(onnx, {});
    graph::simplify(m.graph);
    graph::foldBatchNorm(m.graph);
    graph::fuseOps(m.graph);
    graph::place(m.graph, [&t](const graph::Graph &g, const graph::FusedGroup &grp) {
      return npu::npuRejectReason(g, grp, t);
    });
    bool failed = false;
    for (const driver::Seg &s : driver::splitSegments(m.graph))
      if (s.npu) {
        Expected<npu::Segment, npu::Reject> seg = npu::compileSegment(m.graph, s.groups, t, opt);
        if (seg)
          continue;
        failed = true;
        const npu::Reject &r = seg.error();
        EXPECT_NE(r.message.find("src_addr"), std::string::npos) << r.message;
        EXPECT_EQ(r.kind, npu::RejectKind::Encoding) << r.message;
        EXPECT_EQ(r.phase, npu::RejectPhase::Emit) << r.message;
        ASSERT_NE(std::find(s.groups.begin(), s.groups.end(), r.group), s.groups.end())
            << "the Reject names a group of the segment: " << r.group;
        // The message names that group (emission names the group it encodes).
        EXPECT_EQ(r.message.rfind(m.graph.groups.at(size_t(r.group)).name + ": ", 0), 0u)
            << r.message;
      }
    ASSERT_TRUE(failed) << "the narrowed target must make some group fail";
  }

  driver::CompiledModel m = driver::compileModel(onnx, t, {}, opt);
  int moved = 0, npu = 0, split = 0;
  for (const graph::FusedGroup &grp : m.graph.groups) {
    // A fused group that failed is first split into its nodes, which are retried one by one.
    split += grp.note.rfind("split from fused group '", 0) == 0;
    if (grp.placement == graph::Placement::Npu) {
      ++npu;
      continue;
    }
    if (grp.cpuReason.rfind("NPU compilation failed: ", 0) == 0) {
      ++moved;
      EXPECT_NE(grp.cpuReason.find("src_addr"), std::string::npos) << grp.cpuReason;
    }
  }
  EXPECT_GT(moved, 0);
  EXPECT_GT(split, 0);
  EXPECT_GT(npu, 0) << "groups whose addresses fit still run on the NPU";

  HostTensor x = readNpy(input);
  driver::RunResult r = driver::runModel(m, {{m.graph.value(m.graph.inputs[0]).name, x}});
  graph::Graph ref = frontend::importOnnx(onnx, {});
  auto refOut = graph::runReference(ref, {{ref.inputs.at(0), x}});
  for (graph::ValueId v : ref.outputs)
    expectClose(r.outputs.at(ref.value(v).name), refOut.at(v), "tinycnn after retries");
}

// A Reject no single group is to blame for (the segment's DRAM image does not fit the target's
// DRAM) is not retried: the compile fails with its message, as a user error.
TEST(Retry, ASegmentTooLargeForDramIsAUserError) {
  const std::string onnx = repoPath("models/tinycnn.onnx");
  NPUC_REQUIRE_FILE(onnx);
  isa::Target t = isa::loadTarget(repoPath("configs/npu-base.yaml"));
  for (isa::MemoryLevel &l : t.levels)
    if (l.name == "dram")
      l.size = 16384; // below tinycnn's weights alone (its convs' 3x3 kernels)
  try {
    driver::compileModel(onnx, t, {});
    FAIL() << "tinycnn's constants do not fit 16 KiB of DRAM";
  } catch (const Error &e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("target 'npu-base': the model needs ", 0), 0u) << msg;
    EXPECT_NE(msg.find(" bytes of DRAM, the target has 16384"), std::string::npos) << msg;
  }
}

TEST(Retry, BundledModelsKeepTheirNpuGroups) {
  // Post-dominator fusion must not merge NPU work into CPU groups, and placement must not move
  // anything by cost (nothing in these models sits between CPU groups): every node of a CPU
  // group is one the NPU rejects on its own (shape-only views follow their neighbours).
  isa::Target t = isa::loadTarget(repoPath("configs/npu-base.yaml"));
  for (const char *name : {"tinycnn", "mlp", "dwnet", "branchy"}) {
    const std::string onnx = repoPath(std::string("models/") + name + ".onnx");
    NPUC_REQUIRE_FILE(onnx);
    driver::CompiledModel m = driver::compileModel(onnx, t, {});
    int npu = 0;
    for (const graph::FusedGroup &grp : m.graph.groups) {
      if (grp.placement == graph::Placement::Npu) {
        ++npu;
        continue;
      }
      EXPECT_EQ(grp.cpuReason.find("by cost"), std::string::npos) << name << ": " << grp.name;
      for (graph::NodeId n : grp.nodes) {
        if (graph::isViewOp(m.graph.node(n).kind))
          continue;
        graph::FusedGroup alone;
        alone.nodes = {n};
        alone.anchor = n;
        alone.name = m.graph.node(n).name;
        graph::computeGroupBoundary(m.graph, alone);
        EXPECT_FALSE(npu::npuRejectReason(m.graph, alone, t).empty())
            << name << ": node " << alone.name << " could run on the NPU but its group '"
            << grp.name << "' is on the CPU: " << grp.cpuReason;
      }
    }
    EXPECT_GT(npu, 0) << name;
  }
}

} // namespace
} // namespace npuc::e2e
