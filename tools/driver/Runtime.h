// Runtime.h - the graph runtime: executes a CompiledModel on host inputs.
//
// NPU segments run on the cycle-approximate simulator (one fresh DRAM image per segment, the
// constant image copied in, inputs packed to fp16 - or quantised to int8 with each tensor's
// scale on int8 targets - in the NPU layout); CPU segments run the
// LLVM-JIT-compiled TIR of their groups on fp32 host buffers. Values cross segments as fp32 NCHW
// host tensors, so an NPU->CPU->NPU model converts at each boundary exactly like real hardware
// with a host in the loop would. The result carries the outputs, the report (Report.h) and
// optionally a merged Chrome trace.
#pragma once

#include "simulator/Simulator.h"
#include "support/Tensor.h"
#include "tools/driver/Compiler.h"

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace npuc::driver {

/// Measurements of one segment's execution (inputs to the report and the trace).
struct SegmentRun {
  bool npu = false;
  sim::SimStats stats;         // NPU segments (the simulator always runs with trace on)
  std::map<int, double> cpuMs; // CPU segments: wall time per group id
  /// Host wall time the segment costs beyond its kernels: for an NPU segment, packing its inputs
  /// into the NPU layout and unpacking its outputs (the device crossings; the simulation itself
  /// is not counted); for a CPU segment, everything around the kernel calls (output buffers,
  /// argument setup, storing results).
  double hostMs = 0;
};

/// A value the run held on the host: an NPU segment's output or a CPU group's output, in the
/// compiled model's internal form (fp32). Its producer in CompiledModel::graph says which group.
struct HostValue {
  graph::ValueId value = graph::kNoValue; // in CompiledModel::graph
  int segment = -1;                       // index into CompiledModel::segments
  HostTensor tensor;
};

/// Where a run's CPU kernels got their machine code (the report's `cpu_code`).
struct CpuCodeUse {
  bool any = false;            // the model has CPU groups
  bool fromPackage = false;    // linked from the package's native code: LLVM did not run
  bool fromCache = false;      // linked from the code cache (cpu_fallback/CodeCache.h), likewise
  std::string cacheNote;       // compiled by LLVM and not cached: why (no cache, a failed write)
  bool packageHadCode = false; // the package carries native code (used or not)
  std::string whyNot;          // the package's code was not used: why
  double ms = 0;               // wall time from the lowered kernels to callable functions
};

struct RunResult {
  std::map<std::string, HostTensor> outputs; // by graph output name
  std::vector<SegmentRun> segments;          // parallel to CompiledModel::segments
  nlohmann::json report;                     // schema: docs/REPORT.md
  std::string traceJson;                     // Chrome trace; empty unless requested
  std::vector<HostValue> hostValues;         // in execution order; empty unless requested
  CpuCodeUse cpuCode;
};

struct RunOptions {
  bool trace = false;      // build RunResult::traceJson
  bool keepValues = false; // fill RunResult::hostValues (the accuracy report's input)
  bool nativeCode = true;  // link CompiledModel::cpuCode where it fits this CPU (else: LLVM)
  const cpu::CodeCache *codeCache = nullptr; // where code LLVM compiles is kept for later runs
};

/// The machine code of `m`'s CPU groups for this host, as `npuc compile` stores it in a package
/// (none when no group runs on the CPU). runModel links it instead of running LLVM when the
/// package runs on a CPU like this one (cpu_fallback/Jit.h says when exactly).
std::optional<cpu::NativeCode> compileCpuCode(const CompiledModel &m);
/// Checks `inputs` against the graph's inputs: every input present, no unknown names, shapes
/// equal. Errors name the input and the expected and given shapes.
void validateInputs(const graph::Graph &g, const std::map<std::string, HostTensor> &inputs);

/// The reference executor (graph::runReference, `npuc ref`) on named inputs, checked as
/// validateInputs checks them; the outputs by graph output name.
std::map<std::string, HostTensor> runReferenceNamed(const graph::Graph &g,
                                                    std::map<std::string, HostTensor> inputs);

RunResult runModel(const CompiledModel &m, const std::map<std::string, HostTensor> &inputs,
                   const RunOptions &options);
inline RunResult runModel(const CompiledModel &m, const std::map<std::string, HostTensor> &inputs,
                          bool trace = false) {
  RunOptions o;
  o.trace = trace;
  return runModel(m, inputs, o);
}

} // namespace npuc::driver
