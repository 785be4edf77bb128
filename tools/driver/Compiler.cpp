// Compiler.cpp - the compile pipeline behind `npuc compile` (see Compiler.h for the contract).
//
// The pass order matters: simplification first so that folding sees canonical patterns, batch
// norm folding before fusion so that conv+bn+relu fuse into one group, and placement last because
// the NPU's ability to run a group depends on the fused group, not on single nodes.
#include "tools/driver/Compiler.h"

#include "frontend/Onnx.h"
#include "graph/LowerActivations.h"
#include "graph/Passes.h"
#include "support/Error.h"

namespace npuc::driver {

std::vector<Seg> splitSegments(const graph::Graph &g) {
  std::vector<Seg> segs;
  for (const graph::FusedGroup &grp : g.groups) {
    NPUC_ASSERT(grp.placement != graph::Placement::Unassigned,
                "place() assigns every fused group before segments are formed");
    bool npu = grp.placement == graph::Placement::Npu;
    if (segs.empty() || segs.back().npu != npu)
      segs.push_back(Seg{npu, {}, -1});
    segs.back().groups.push_back(grp.id);
  }
  return segs;
}

CompiledModel compileModel(const std::string &onnxPath, const isa::Target &target,
                           const std::map<std::string, Shape> &inputShapes,
                           const npu::CompileOptions &opt) {
  CompiledModel m;
  m.target = target;
  m.options = opt;
  m.graph = frontend::importOnnx(onnxPath, inputShapes);
  graph::simplify(m.graph);
  graph::foldBatchNorm(m.graph);
  graph::lowerActivations(m.graph); // HardSwish etc. as primitives the NPU runs
  graph::fuseOps(m.graph);
  // The reject callback sees the final fused groups, so a reason names the op the target lacks.
  const isa::Target &t = m.target;
  graph::place(m.graph, [&t](const graph::Graph &g, const graph::FusedGroup &grp) {
    return npu::npuRejectReason(g, grp, t);
  });
  m.segments = splitSegments(m.graph);
  for (Seg &s : m.segments) {
    if (!s.npu)
      continue;
    s.npuIndex = static_cast<int>(m.npuSegments.size());
    m.npuSegments.push_back(npu::compileSegment(m.graph, s.groups, m.target, opt));
  }
  return m;
}

CompiledModel compileModelForCpu(const std::string &onnxPath,
                                 const std::map<std::string, Shape> &inputShapes) {
  CompiledModel m;
  m.cpuOnly = true;
  m.target.name = "cpu";
  m.graph = frontend::importOnnx(onnxPath, inputShapes);
  graph::simplify(m.graph);
  graph::foldBatchNorm(m.graph);
  graph::fuseOps(m.graph);
  graph::place(m.graph, [](const graph::Graph &, const graph::FusedGroup &) {
    return std::string("--target cpu");
  });
  m.segments = splitSegments(m.graph);
  return m;
}

CompiledModel compileModel(const std::string &onnxPath, const std::string &targetPath,
                           const std::map<std::string, Shape> &inputShapes,
                           const npu::CompileOptions &opt) {
  if (isCpuTarget(targetPath))
    return compileModelForCpu(onnxPath, inputShapes);
  // Load the target first: a bad target is reported before the (slower) model import.
  isa::Target t = isa::loadTarget(targetPath);
  return compileModel(onnxPath, t, inputShapes, opt);
}

} // namespace npuc::driver
