// Compiler.cpp - the compile pipeline behind `npuc compile` (see Compiler.h for the contract).
//
// The pass order matters: simplification first so that folding sees canonical patterns, batch
// norm folding before fusion so that conv+bn+relu fuse into one group, and placement last because
// the NPU's ability to run a group depends on the fused group, not on single nodes.
#include "tools/driver/Compiler.h"

#include "frontend/Onnx.h"
#include "graph/ChannelsLast.h"
#include "graph/Extract.h"
#include "graph/LowerActivations.h"
#include "graph/Passes.h"
#include "graph/Quant.h"
#include "graph/SinkScale.h"
#include "graph/Text.h"
#include "graph/WindowTo2d.h"
#include "npu/hw/MixedPrecision.h"
#include "support/CrashContext.h"
#include "support/Error.h"
#include "support/Npy.h"
#include "tools/driver/CalibrationSet.h"

#include <fmt/ranges.h>

#include <map>
#include <memory>

namespace npuc::driver {

std::vector<Seg> splitSegments(const graph::Graph &g, bool perNpuGroup) {
  std::vector<Seg> segs;
  for (const graph::FusedGroup &grp : g.groups) {
    NPUC_ASSERT(grp.placement != graph::Placement::Unassigned,
                "place() assigns every fused group before segments are formed");
    bool npu = grp.placement == graph::Placement::Npu;
    if (segs.empty() || segs.back().npu != npu || (npu && perNpuGroup))
      segs.push_back(Seg{npu, {}, -1});
    segs.back().groups.push_back(grp.id);
  }
  return segs;
}

graph::DeviceCosts deviceCosts(const isa::Target &t) {
  graph::DeviceCosts c;
  const double hz = t.clockGhz * 1e9;
  c.npuMacsPerSecond = static_cast<double>(t.tensor.peakMacsPerCycle()) * hz;
  c.npuVectorElemsPerSecond = t.vector.lanes * hz;
  c.npuDramBytesPerSecond = t.dram.bytesPerCycle * hz;
  // The host reaches the NPU's tensors through the same DRAM; the CPU figures are the JIT'd
  // fallback's measured single-thread rates (docs/PERFORMANCE.md: ~4.7 GMAC/s on ResNet-18).
  c.transferBytesPerSecond = c.npuDramBytesPerSecond;
  // Activations and weights in DRAM have the tensor unit's operand dtype (int8 on quantised
  // targets); targets whose tensor unit the backend does not compile for keep the default.
  if (t.tensor.operandType == isa::ElemType::F16 || t.tensor.operandType == isa::ElemType::I8)
    c.npuElemBytes = isa::elemBytes(t.tensor.operandType);
  // Each NPU group costed from the kernel that will run it (npu::npuGroupCycles), memoised by
  // the group's nodes: placement re-examines the same runs while it moves others.
  auto memo = std::make_shared<std::map<std::vector<graph::NodeId>, double>>();
  c.npuGroupSeconds = [&t, hz, memo](const graph::Graph &g, const graph::FusedGroup &grp) {
    auto [it, fresh] = memo->try_emplace(grp.nodes, 0.0);
    if (fresh) {
      double cycles = npu::npuGroupCycles(g, grp, t);
      it->second = cycles < 0 ? -1.0 : cycles / hz;
    }
    return it->second;
  };
  return c;
}

// The NPU keeps tensors in fp16, exact on integers only up to 2048: a group with an integer or
// bool runtime tensor runs on the CPU, whose fp32 the runtime checks (Runtime.cpp). Empty when
// every runtime tensor of the group is a float.
std::string integerTensorReason(const graph::Graph &g, const graph::FusedGroup &grp) {
  for (graph::NodeId id : grp.nodes) {
    const graph::Node &n = g.node(id);
    for (const std::vector<graph::ValueId> *vs : {&n.inputs, &n.outputs})
      for (graph::ValueId v : *vs)
        if (v != graph::kNoValue && !g.value(v).isConstant() && isIntStored(g.value(v).dtype))
          return fmt::format("{} ({}): tensor '{}' is {}, and the NPU keeps tensors in fp16, "
                             "which would round integers",
                             n.name, n.kind, g.value(v).name, dtypeName(g.value(v).dtype));
  }
  return "";
}

RejectFn npuReject(const isa::Target &t) {
  // The reject callback sees the final fused groups, so a reason names the op the target lacks.
  return [&t](const graph::Graph &g, const graph::FusedGroup &grp) {
    if (std::string why = integerTensorReason(g, grp); !why.empty())
      return why;
    CrashScope scope(
        [&grp] {
          return fmt::format("trying group {} '{}' on the NPU (placement)", grp.id, grp.name);
        },
        graph::reproduceGroups(g, {grp.id}));
    try {
      return npu::npuRejectReason(g, grp, t);
    } catch (const std::exception &e) {
      reportIfInternal(e); // while the scope still names the group
      throw;
    }
  };
}

graph::FusionFilter npuFusionFilter(const isa::Target &t) {
  // Fusion keeps what the NPU runs: no merge may turn a group a hand-written kernel runs into one
  // it does not (the loop-nest kernel's vector arithmetic would replace the tensor unit), nor a
  // group any kernel runs into one the NPU cannot run at all.
  graph::FusionFilter hand =
      graph::preserveRunnable([&t](const graph::Graph &g, const graph::FusedGroup &grp) {
        return npu::npuRejectReason(g, grp, t, /*loopNest=*/false);
      });
  graph::FusionFilter any = graph::preserveRunnable(npuReject(t));
  return [hand, any](const graph::Graph &g, const graph::FusedGroup &merged,
                     const std::vector<graph::FusedGroup> &parts) {
    return hand(g, merged, parts) && any(g, merged, parts);
  };
}

bool checkCalibrationOptions(const isa::Target &target, const npu::CompileOptions &opt) {
  const bool int8 = target.tensor.operandType == isa::ElemType::I8;
  if (!int8 &&
      (!opt.calibrationPaths.empty() || opt.calibration.method != npu::CalibrationMethod::Max))
    fail("--calibrate and --calibration-method set int8 scales; target '{}' has {} operands",
         target.name, isa::elemTypeName(target.tensor.operandType));
  if (!int8 && opt.int8Accuracy > 0)
    fail("--int8-accuracy keeps layers of an int8 model wide; target '{}' has {} operands",
         target.name, isa::elemTypeName(target.tensor.operandType));
  if (opt.int8Accuracy < 0 || opt.int8Accuracy > 1)
    fail("--int8-accuracy {}: a cosine similarity target, in (0, 1]", opt.int8Accuracy);
  return int8;
}

graph::FusionFilter attentionFilter(const isa::Target &t) {
  // The fused kernel must run the merged group, and its estimate (the larger of its tiling cost
  // and its roofline) be no worse than the three groups' (each with every tensor in DRAM, as the
  // unfused groups run whenever residency cannot keep the scores: at long sequences).
  return [&t](const graph::Graph &g, const graph::FusedGroup &merged,
              const std::vector<graph::FusedGroup> &parts) {
    if (!npu::npuRejectReason(g, merged, t, /*loopNest=*/false).empty())
      return false;
    double apart = 0;
    for (const graph::FusedGroup &p : parts) {
      const double c = npu::npuGroupCycles(g, p, t);
      if (c < 0)
        return true; // a part the NPU cannot run alone: the merge takes it onto the NPU
      apart += c;
    }
    return npu::npuGroupCycles(g, merged, t) <= apart;
  };
}

void compileWithRetry(CompiledModel &m, const RejectFn &reject, const npu::CompileOptions &opt) {
  graph::Graph &g = m.graph;
  while (true) {
    m.segments = splitSegments(g, opt.segmentPerGroup);
    m.npuSegments.clear();
    int failed = -1;
    std::string why;
    for (Seg &s : m.segments) {
      if (!s.npu)
        continue;
      s.npuIndex = static_cast<int>(m.npuSegments.size());
      CrashScope scope(
          [&s] {
            return fmt::format("compiling NPU segment {} (groups {})", s.npuIndex,
                               fmt::join(s.groups, ", "));
          },
          graph::reproduceGroups(g, s.groups));
      Expected<npu::Segment, npu::Reject> seg = npu::compileSegment(g, s.groups, m.target, opt);
      if (!seg) {
        const npu::Reject &r = seg.error();
        if (r.group < 0) // not one group's limit (the segment's DRAM image): nothing to retry
          fail("{}", r.message);
        failed = r.group;
        why = r.message;
        break;
      }
      m.npuSegments.push_back(std::move(*seg));
    }
    if (failed < 0)
      return;
    // The Reject names the group to blame. Each round either splits a group into single nodes
    // or moves one to the CPU, so the loop ends.
    graph::FusedGroup &grp = g.groups[static_cast<size_t>(failed)];
    if (grp.nodes.size() > 1) {
      std::string name = grp.name;
      for (int id : graph::splitGroup(g, failed)) {
        graph::FusedGroup &part = g.groups[static_cast<size_t>(id)];
        part.cpuReason = reject(g, part);
        part.placement = part.cpuReason.empty() ? graph::Placement::Npu : graph::Placement::Cpu;
        part.note =
            "split from fused group '" + name + "', which failed to compile for the NPU: " + why;
      }
    } else {
      grp.placement = graph::Placement::Cpu;
      grp.cpuReason = "NPU compilation failed: " + why;
    }
  }
}

namespace {

// int8 targets: the calibration set (--calibrate, CalibrationSet.h; else one fixed-seed
// standard-normal input), and what it is in `source`.
std::vector<CalibrationSample>
calibrationSet(const graph::Graph &g, const std::vector<std::string> &paths, std::string &source) {
  std::vector<CalibrationSample> set;
  if (paths.empty()) {
    set.push_back(npu::defaultCalibrationInputs(g));
    source = "a fixed-seed standard-normal input (no --calibrate given)";
  } else {
    set = loadCalibrationSet(g, paths);
    std::string names;
    for (const std::string &p : paths)
      names += (names.empty() ? "" : ", ") + p;
    source = fmt::format("{} sample{} from {}", set.size(), set.size() == 1 ? "" : "s", names);
  }
  return set;
}

// The samples --int8-accuracy measures on: the calibration set's first few (each costs a
// reference run per evaluation of the search).
constexpr size_t kAccuracySamples = 4;

// --int8-accuracy: the NPU groups kept wide (npu/hw/MixedPrecision.h) go to the CPU, each with
// the reason; the choice is recorded for inspect and the report.
void keepWide(CompiledModel &m, const std::vector<CalibrationSample> &set, double target) {
  std::vector<npu::Sample> samples(set.begin(),
                                   set.begin() + std::min(set.size(), kAccuracySamples));
  const npu::WideChoice c = npu::chooseWideGroups(m.graph, *m.options.quant, samples, target);
  for (size_t k = 0; k < c.groups.size(); ++k) {
    graph::FusedGroup &grp = m.graph.groups.at(static_cast<size_t>(c.groups[k]));
    grp.placement = graph::Placement::Cpu;
    grp.cpuReason = fmt::format(
        "kept wide (fp32 on the CPU) for --int8-accuracy {}: alone in int8 it takes the output's "
        "cosine against fp32 to {:.8f} (the {}{} most sensitive of {} int8 groups)",
        target, c.sensitivity.at(c.groups[k]), k + 1,
        k == 0 ? "st" : (k == 1 ? "nd" : (k == 2 ? "rd" : "th")), c.sensitivity.size());
  }
  for (int id : npu::viewsKeptWide(m.graph, c.groups)) {
    graph::FusedGroup &grp = m.graph.groups.at(static_cast<size_t>(id));
    grp.placement = graph::Placement::Cpu;
    grp.cpuReason = fmt::format("views between groups kept wide for --int8-accuracy {} (they "
                                "follow their neighbours)",
                                target);
  }
  m.options.int8AccuracyResult = fmt::format(
      "--int8-accuracy {}: cosine against fp32 {:.8f} with every NPU group in int8, {:.8f} with "
      "{} group(s) kept wide{} (worst of {} calibration sample(s), quantised reference)",
      target, c.before, c.after, c.groups.size(), c.met ? "" : ", short of the target",
      samples.size());
}

// Whether the fp32 CPU lowering of `k` gives ONNX's integer result when its integer operands and
// result are exact in fp32 (the runtime checks that they are: Runtime.cpp). Data movement,
// comparisons, logic, exact arithmetic (Div truncates in the lowering; Pow on integers is pow in
// fp64 truncated, BitShift a scaling by a power of two), selections, the order-based reductions
// and MaxPool's positions do; the rest (Mean, MatMul, ... on integers) do not.
bool lowersIntegersExactly(graph::OpKind k) {
  using graph::OpKind;
  if (graph::isViewOp(k) || graph::hasTrait(k, graph::optrait::kBoolResult))
    return true;
  switch (k) {
  case OpKind::Transpose:
  case OpKind::Concat:
  case OpKind::Split:
  case OpKind::Pad:
  case OpKind::Slice:
  case OpKind::Expand:
  case OpKind::Tile:
  case OpKind::DepthToSpace:
  case OpKind::SpaceToDepth:
  case OpKind::Gather:
  case OpKind::GatherElements:
  case OpKind::GatherND:
  case OpKind::ScatterElements:
  case OpKind::ScatterND:
  case OpKind::OneHot:
  case OpKind::ReverseSequence:
  case OpKind::Trilu:
  case OpKind::EyeLike:
  case OpKind::Cast:
  case OpKind::Where:
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::Mul:
  case OpKind::Div:
  case OpKind::Pow:
  case OpKind::BitShift:
  case OpKind::Mod:
  case OpKind::Max:
  case OpKind::Min:
  case OpKind::Sum:
  case OpKind::Neg:
  case OpKind::Abs:
  case OpKind::Sign:
  case OpKind::Relu:
  case OpKind::Clip:
  case OpKind::ReduceSum:
  case OpKind::ReduceMax:
  case OpKind::ReduceMin:
  case OpKind::ReduceProd:
  case OpKind::ArgMax:
  case OpKind::ArgMin:
  case OpKind::TopK:
  case OpKind::CumSum:
  case OpKind::MaxPool: // its Indices output: flat positions, exact integers in fp32
  case OpKind::MaxUnpool:
  case OpKind::ConvInteger: // while checkExactAccumulation's bound holds
  case OpKind::MatMulInteger:
    return true;
  default:
    return false;
  }
}

// Compiled targets hold every runtime tensor in fp32 (integers exactly up to 2^24, checked at
// run time); an operator whose fp32 lowering would give a different integer result is refused
// here, naming the node, the value and its type, rather than run to a wrong answer.
void checkRuntimeTypes(const graph::Graph &g) {
  for (graph::NodeId id : g.topoOrder()) {
    const graph::Node &n = g.node(id);
    if (n.kind == graph::OpKind::ConvInteger || n.kind == graph::OpKind::MatMulInteger)
      graph::checkExactAccumulation(g, n);
    for (graph::ValueId o : n.outputs) {
      const graph::Value &v = g.value(o);
      if (isIntStored(v.dtype) && !v.isConstant() && !lowersIntegersExactly(n.kind))
        fail("node '{}' ({}): its output '{}' is {}, and compiled targets compute {} on integers "
             "in fp32, which differs from ONNX's integer result; `npuc ref` runs it exactly",
             n.name, n.kind, v.name, dtypeName(v.dtype), n.kind);
    }
  }
}

} // namespace

graph::Graph loadModelGraph(const std::string &path, const frontend::ImportOptions &inputs) {
  const std::string ext = ".graph";
  if (path.size() < ext.size() || path.compare(path.size() - ext.size(), ext.size(), ext) != 0)
    return frontend::importOnnx(path, inputs);
  if (!inputs.inputShapes.empty())
    fail("{}: --input-shape pins ONNX inputs; graph text gives every shape", path);
  if (!inputs.bound.empty())
    fail("{}: --bind binds ONNX inputs; graph text has its constants in the text", path);
  graph::Graph g = graph::parseGraphText(readFile(path), {path, 1});
  g.groups.clear();
  return g;
}

graph::Graph prepareModelGraph(const std::string &path, const frontend::ImportOptions &inputs) {
  graph::Graph g = loadModelGraph(path, inputs);
  graph::simplify(g);
  checkRuntimeTypes(g);
  graph::eliminateCommonSubexpressions(g);
  graph::foldBatchNorm(g);
  // 1-D conv/pool on the NPU's 2-D kernels; a Squeeze -> Unsqueeze between two of them cancels.
  if (graph::windowOpsTo2d(g) > 0)
    graph::simplifyLayoutOps(g);
  graph::lowerActivations(g);     // HardSwish etc. as primitives the NPU runs
  graph::sinkScalesPastMatMul(g); // attention's Q scale becomes the scores' epilogue
  // ConvNeXt-style [N,H,W,C] LayerNorm and Linear layers over [N,H*W,C]: the tensor unit's
  // MatMul, and Permutes that cancel into views.
  if (graph::channelsLastTo3d(g) > 0)
    graph::simplifyLayoutOps(g);
  return g;
}

CompiledModel compileModel(const std::string &onnxPath, const isa::Target &target,
                           const frontend::ImportOptions &inputs, const npu::CompileOptions &opt) {
  CrashScope scope(
      [&] { return fmt::format("compiling '{}' for target '{}'", onnxPath, target.name); });
  checkCalibrationOptions(target, opt); // before the (slower) import
  return compilePrepared(prepareModelGraph(onnxPath, inputs), target, opt);
}

CompiledModel compilePrepared(graph::Graph prepared, const isa::Target &target,
                              const npu::CompileOptions &opt) {
  // A sweep's points come here without compileModel's scope: a crash still names the model.
  CrashScope scope([name = prepared.name, &target] {
    return fmt::format("compiling model '{}' for target '{}'", name, target.name);
  });
  const bool int8 = checkCalibrationOptions(target, opt);
  CompiledModel m;
  m.target = target;
  m.options = opt;
  m.graph = std::move(prepared);
  // Scales are per value, so they are taken on the final graph, before fusion and placement.
  std::vector<CalibrationSample> calibration;
  if (int8) {
    std::string source;
    calibration = calibrationSet(m.graph, opt.calibrationPaths, source);
    source += fmt::format(", method {}", opt.calibration.name());
    m.options.quant = std::make_shared<const npu::QuantTable>(
        npu::calibrate(m.graph, calibration, opt.calibration, source));
  }
  const isa::Target &t = m.target;
  RejectFn reject = npuReject(t);
  graph::fuseOps(m.graph, npuFusionFilter(t));
  if (opt.fusedAttention)
    graph::fuseAttention(m.graph, attentionFilter(t));
  graph::DeviceCosts costs = deviceCosts(t);
  graph::place(m.graph, reject, &costs);
  if (int8 && opt.int8Accuracy > 0)
    keepWide(m, calibration, opt.int8Accuracy);
  compileWithRetry(m, reject, m.options);
  return m;
}

CompiledModel compileModelForCpu(const std::string &onnxPath,
                                 const frontend::ImportOptions &inputs) {
  CompiledModel m;
  m.cpuOnly = true;
  m.target.name = "cpu";
  CrashScope scope([&] { return fmt::format("compiling '{}' for the CPU", onnxPath); });
  m.graph = loadModelGraph(onnxPath, inputs);
  graph::simplify(m.graph);
  checkRuntimeTypes(m.graph);
  graph::eliminateCommonSubexpressions(m.graph);
  graph::foldBatchNorm(m.graph);
  graph::fuseOps(m.graph);
  graph::place(m.graph, [](const graph::Graph &, const graph::FusedGroup &) {
    return std::string("--target cpu");
  });
  m.segments = splitSegments(m.graph);
  return m;
}

CompiledModel compileModel(const std::string &onnxPath, const std::string &targetPath,
                           const frontend::ImportOptions &inputs, const npu::CompileOptions &opt) {
  if (isCpuTarget(targetPath))
    return compileModelForCpu(onnxPath, inputs);
  // Load the target first: a bad target is reported before the (slower) model import.
  isa::Target t = isa::loadTarget(targetPath);
  return compileModel(onnxPath, t, inputs, opt);
}

} // namespace npuc::driver
