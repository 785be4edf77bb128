// Compiler.h - the compile driver: ONNX model + target description -> a CompiledModel.
//
// compileModel() runs the whole front half of npuc in a fixed order (import, graph
// simplification, batch-norm folding, fusion, placement against the loaded target) and then
// splits the fused groups, in execution order, into maximal runs with the same placement. Each
// NPU run becomes one npu::Segment (one instruction program, one DRAM image); CPU runs are kept
// as group lists, lowered by the runtime and linked from the package's machine code (cpuCode)
// or compiled by LLVM. A CompiledModel is everything `npuc run` needs, and it is what a .npub
// package stores (Package.h).
#pragma once

#include "cpu_fallback/Jit.h"
#include "frontend/Onnx.h"
#include "graph/Graph.h"
#include "graph/Passes.h"
#include "isa/Target.h"
#include "npu/pipeline/Compile.h"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace npuc::driver {

/// One execution segment: consecutive fused groups with the same placement.
struct Seg {
  bool npu = false;
  std::vector<int> groups; // group ids, in execution order
  int npuIndex = -1;       // index into CompiledModel::npuSegments, -1 for CPU segments
};

struct CompiledModel {
  isa::Target target;   // for --target cpu: a default Target named "cpu" (no NPU segments)
  bool cpuOnly = false; // --target cpu: every group on the host CPU
  int threads = 1;      // CPU thread pool size for parallel loops (--threads)
  graph::Graph graph;
  std::vector<Seg> segments;
  std::vector<npu::Segment> npuSegments;
  npu::CompileOptions options; // what the NPU segments were compiled with
  /// The CPU groups' machine code for the host that compiled the package (`npuc compile` adds
  /// it; Runtime.h compileCpuCode), absent with --no-native-code or without CPU groups.
  std::optional<cpu::NativeCode> cpuCode;
};

/// Reads a model: an ONNX file, or graph text (docs/GRAPH.md) when the path ends in `.graph`
/// (crash reproducers are written so; fused groups in the text are dropped, since compiling
/// fuses again). `inputs` pins and binds ONNX inputs (frontend/Onnx.h); graph text is static, so
/// pins and bindings are an error there.
graph::Graph loadModelGraph(const std::string &path, const frontend::ImportOptions &inputs);

/// Compiles an ONNX model for a target. `inputs` pins graph inputs by name (dynamic dims) and
/// binds inputs to constant data (--bind).
/// Throws npuc::Error naming the file, node or field on bad input.
CompiledModel compileModel(const std::string &onnxPath, const std::string &targetPath,
                           const frontend::ImportOptions &inputs,
                           const npu::CompileOptions &opt = {});

/// `--target` words naming built-in targets rather than YAML files: "cpu" (the host CPU, every
/// group through the LLVM CPU code generator) and "gpu" (NVPTX, see cpu_fallback/Gpu.h).
inline bool isCpuTarget(const std::string &t) {
  return t == "cpu";
}

/// Compiles for the host CPU: the same front half, then every group placed on the CPU.
CompiledModel compileModelForCpu(const std::string &onnxPath,
                                 const frontend::ImportOptions &inputs);

/// The same, from an already loaded target (tests reuse one parsed target).
CompiledModel compileModel(const std::string &onnxPath, const isa::Target &target,
                           const frontend::ImportOptions &inputs,
                           const npu::CompileOptions &opt = {});

/// compileModel's target-independent front half: the model read (loadModelGraph), simplified,
/// common subexpressions merged, BatchNorm folded, and rewritten into what the NPU kernels take
/// (1-D window ops as 2-D, activations as primitives, scales sunk past MatMul, channels-last
/// regions). A design-space sweep prepares each model once for all its design points.
graph::Graph prepareModelGraph(const std::string &path, const frontend::ImportOptions &inputs);

/// compileModel's back half on a prepared graph (taken by value: a sweep passes a copy, whose
/// constants share their data with the original): calibration on int8 targets, fusion, placement
/// and the segments. compileModel(path, t, inputs, opt) is
/// compilePrepared(prepareModelGraph(path, inputs), t, opt).
CompiledModel compilePrepared(graph::Graph prepared, const isa::Target &target,
                              const npu::CompileOptions &opt = {});

/// Whether `target` computes in int8; fails when `opt` sets calibration for a target that does
/// not (`--calibrate` and `--calibration-method` set int8 scales).
bool checkCalibrationOptions(const isa::Target &target, const npu::CompileOptions &opt);

/// Splits groups (in vector order, which is execution order) into maximal same-placement runs,
/// or with `perNpuGroup` each NPU group into a segment of its own. Every group must have been
/// placed; an Unassigned group is a compiler bug.
std::vector<Seg> splitSegments(const graph::Graph &g, bool perNpuGroup = false);

/// Why the target's NPU cannot run a group ("" when it can).
using RejectFn = std::function<std::string(const graph::Graph &, const graph::FusedGroup &)>;

/// The placement cost model's figures for a target (NPU peaks from its description), with each
/// NPU group costed by the backend from its kernel (npu::npuGroupCycles). The result refers to
/// `t`, which must outlive it.
graph::DeviceCosts deviceCosts(const isa::Target &t);

/// The NPU backend's reject callback for `t` (npu::npuRejectReason), which must outlive it.
RejectFn npuReject(const isa::Target &t);

/// The fusion filter compileModel uses for `t` (which must outlive it): a merge may not turn a
/// group a hand-written kernel runs into one it does not, nor a group any NPU kernel runs into
/// one the NPU cannot run (graph::preserveRunnable).
graph::FusionFilter npuFusionFilter(const isa::Target &t);
/// Whether attention's three groups merge into one (graph::fuseAttention): the fused kernel runs
/// the merged group and its estimate is no worse than the parts'.
graph::FusionFilter attentionFilter(const isa::Target &t);

/// Forms segments and compiles the NPU ones. When a segment's compilation is rejected (a
/// capacity, encoding or kernel limit: npu::Reject), the group the Reject names is split into
/// one group per node (each placed by `reject`, the split recorded in its note), or, when it is
/// a single node, moved to the CPU with the Reject's message as its reason; then the segments
/// are compiled again. A Reject no single group is to blame for (the segment's DRAM image) is an
/// npuc::Error with its message.
void compileWithRetry(CompiledModel &m, const RejectFn &reject, const npu::CompileOptions &opt);

} // namespace npuc::driver
