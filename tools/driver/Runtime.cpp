// Runtime.cpp - executing a CompiledModel segment by segment (contract in Runtime.h).
//
// All CPU groups are lowered and JIT-compiled once, before anything runs, so a model whose CPU
// code fails to compile fails before any simulation time is spent, and so the per-group timings
// measure execution only. The simulator always records a trace: the report derives per-group
// cycles from it, even when the caller did not ask for a trace file.
#include "tools/driver/Runtime.h"

#include "cpu_fallback/Jit.h"
#include "cpu_fallback/Lower.h"
#include "graph/Reference.h"
#include "graph/Rnn.h"
#include "lowering/LowerOps.h"
#include "support/Error.h"
#include "tools/driver/Report.h"

#include <chrono>
#include <cmath>
#include <cstring>

namespace npuc::driver {

namespace {

using graph::ValueId;

/// Host-side values of one run; constants are materialised on first use.
class ValueStore {
public:
  explicit ValueStore(const graph::Graph &g) : g_(g) {}
  const HostTensor &get(ValueId v) {
    auto it = vals_.find(v);
    if (it != vals_.end())
      return it->second;
    const graph::Value &val = g_.value(v);
    NPUC_ASSERT(val.isConstant(), "segments run in order, so every non-constant value read by a "
                                  "segment was produced earlier: " +
                                      val.name);
    return vals_[v] = graph::constantTensor(val);
  }
  void set(ValueId v, HostTensor t) { vals_[v] = std::move(t); }
  void erase(ValueId v) { vals_.erase(v); }

private:
  const graph::Graph &g_;
  std::map<ValueId, HostTensor> vals_;
};

void runNpuSegment(const CompiledModel &m, const npu::Segment &seg, ValueStore &vals,
                   SegmentRun &out) {
  sim::Memory mem(m.target, seg.dramBytes);
  std::vector<uint8_t> &dram = mem.dram();
  NPUC_ASSERT(int64_t(dram.size()) >= seg.dramBytes, "Memory allocates the requested DRAM");
  NPUC_ASSERT(seg.constBase + int64_t(seg.constImage.size()) <= seg.dramBytes,
              "compileSegment places the constant image inside the DRAM image");
  if (!seg.constImage.empty()) // data() of an empty image may be null
    std::memcpy(dram.data() + seg.constBase, seg.constImage.data(), seg.constImage.size());
  auto t0 = std::chrono::steady_clock::now();
  for (const npu::DramTensor &dt : seg.inputs) {
    const HostTensor &t = vals.get(dt.value);
    NPUC_ASSERT(t.shape == dt.shape, "segment input shapes are the graph's value shapes");
    NPUC_ASSERT(dt.addr >= 0 && dt.addr + dt.bytes() <= seg.dramBytes,
                "segment inputs fit the DRAM image");
    npu::packTensorInto(t, dt, dram.data() + dt.addr);
  }
  auto t1 = std::chrono::steady_clock::now();
  sim::SimOptions opt;
  opt.trace = true;
  opt.dramRegions = npu::dramRegionsOf(seg, m.graph);
  out.stats = sim::run(m.target, seg.program, mem, opt);
  auto t2 = std::chrono::steady_clock::now();
  for (const npu::DramTensor &dt : seg.outputs)
    vals.set(dt.value, npu::unpackTensor(dram.data() + dt.addr, dt));
  auto t3 = std::chrono::steady_clock::now();
  out.hostMs = std::chrono::duration<double, std::milli>((t1 - t0) + (t3 - t2)).count();
}

// The CPU kernels clamp an out-of-range index of a gather, a scatter, ReverseSequence, MaxUnpool,
// a loss's labels or a roi's batch index (graph::indexInput; their code has no error channel), so
// the indices are checked here, as
// the reference executor checks them; fusion keeps them at a group boundary for this
// (graph/Fusion.cpp). No NPU kernel indexes by data (the loop-nest kernel rejects it). A
// recurrent operator's sequence lengths are checked the same way (the kernel clamps them to the
// sequence; the operator is opaque, so they come from outside its group).
void checkGathers(const graph::Graph &g, const graph::FusedGroup &grp, ValueStore &vals) {
  for (graph::NodeId id : grp.nodes) {
    const graph::Node &n = g.node(id);
    if (graph::isRecurrentOp(n.kind) && n.inputs.size() > graph::kRnnSequenceLens &&
        n.inputs[graph::kRnnSequenceLens] != graph::kNoValue) {
      const graph::Value &x = g.value(n.inputs[graph::kRnnX]);
      int64_t seqLength = x.shape.at(n.attrInt("layout", 0) ? 1 : 0);
      graph::checkSequenceLens(n, seqLength, vals.get(n.inputs[graph::kRnnSequenceLens]));
    }
    const int k = graph::indexInput(n.kind);
    if (k < 0 || static_cast<size_t>(k) >= n.inputs.size() ||
        n.inputs[static_cast<size_t>(k)] == graph::kNoValue)
      continue;
    const ValueId idx = n.inputs[static_cast<size_t>(k)];
    NPUC_ASSERT(std::find(grp.nodes.begin(), grp.nodes.end(), g.value(idx).producer) ==
                    grp.nodes.end(),
                n.name + ": an operator's indices enter its group from outside");
    graph::checkIndexOperand(g, n, vals.get(idx));
  }
}

// A graph input in the compiled model's internal form, fp32: integers must be exact there.
HostTensor toInternal(const graph::Value &val, const HostTensor &t) {
  if (int64_t bad = firstInexactInFloat(t); bad >= 0)
    fail("input '{}' ({}): element {} is {}, beyond 2^24: the compiled model computes integers in "
         "fp32, which holds them exactly only up to 2^24 (npuc ref computes them exactly)",
         val.name, dtypeName(t.dtype), bad, t.ints[size_t(bad)]);
  HostTensor f = castTensor(t, DType::F32);
  return f;
}

// An integer or bool value a CPU kernel computed in fp32 must be an integer of its type's range
// below 2^24 in magnitude (above, fp32 may have rounded it); otherwise the fp32 result is not
// the ONNX result (a wrap-around, an overflow) and the run fails naming the value.
void checkIntegerValue(const graph::Value &val, const HostTensor &t) {
  if (!isIntStored(val.dtype))
    return;
  for (size_t i = 0; i < t.data.size(); ++i) {
    const float f = t.data[i];
    const bool exact = std::fabs(f) < 16777216.0f && f == std::trunc(f);
    if (!exact || wrapToType(val.dtype, static_cast<int64_t>(f)) != static_cast<int64_t>(f))
      fail("value '{}' ({}): element {} computed as {}, which is not a {} value below 2^24: the "
           "compiled model computes integers in fp32 without wrap-around (npuc ref computes them "
           "exactly)",
           val.name, dtypeName(val.dtype), i, f, dtypeName(val.dtype));
  }
}

struct CpuKernel {
  std::string symbol;
  std::vector<ValueId> params; // the graph value bound to each parameter (lowerGroup's order)
  std::map<size_t, std::vector<float>> packed; // parameters taken pre-packed, packed once here
  cpu::Jit::Fn fn = nullptr;
};

} // namespace

void validateInputs(const graph::Graph &g, const std::map<std::string, HostTensor> &inputs) {
  std::string names;
  for (ValueId v : g.inputs)
    names += (names.empty() ? std::string() : std::string(", ")) + g.value(v).name;
  for (const auto &[name, t] : inputs) {
    std::optional<ValueId> v = g.findValue(name);
    if (!v || std::find(g.inputs.begin(), g.inputs.end(), *v) == g.inputs.end())
      fail("unknown input '{}' (the model's inputs are: {})", name, names);
  }
  for (ValueId v : g.inputs) {
    const graph::Value &val = g.value(v);
    auto it = inputs.find(val.name);
    if (it == inputs.end())
      fail("missing input '{}' (expected shape {})", val.name, shapeToString(val.shape));
    if (it->second.shape != val.shape)
      fail("input '{}': expected shape {}, got {}", val.name, shapeToString(val.shape),
           shapeToString(it->second.shape));
    if (it->second.dtype != val.dtype)
      fail("input '{}': the model's input is {}, the given tensor is {}", val.name,
           dtypeName(val.dtype), dtypeName(it->second.dtype));
    NPUC_ASSERT(it->second.size() == numElements(it->second.shape),
                "HostTensor data matches its shape");
  }
}

std::map<std::string, HostTensor> runReferenceNamed(const graph::Graph &g,
                                                    std::map<std::string, HostTensor> inputs) {
  validateInputs(g, inputs);
  std::map<ValueId, HostTensor> byId;
  for (auto &[name, t] : inputs)
    byId[*g.findValue(name)] = std::move(t);
  std::map<ValueId, HostTensor> res = graph::runReference(g, byId);
  std::map<std::string, HostTensor> named;
  for (size_t i = 0; i < g.outputs.size(); ++i)
    named[g.outputName(i)] = res.at(g.outputs[i]);
  return named;
}

namespace {

// A constant packed from its fp32 data: the graph's own vector where it holds one (no copy of
// the weights), integers converted.
std::vector<float> packConstant(const cpu::PackedParam &p, const graph::Value &v) {
  return v.f32 ? p.pack(*v.f32) : p.pack(graph::constantTensor(v).data);
}

// The CPU groups' kernels in execution order (one module's functions) and, with `kernels`, how
// each group calls its kernel, with the weights it takes pre-packed packed here. The kernels are
// lowered alike either way, so that `npuc compile` and `npuc run` key them alike.
std::vector<tir::PrimFunc> lowerCpuGroups(const CompiledModel &m,
                                          std::map<int, CpuKernel> *kernels) {
  const graph::Graph &g = m.graph;
  std::vector<tir::PrimFunc> funcs;
  for (const Seg &s : m.segments) {
    if (s.npu)
      continue;
    for (int gid : s.groups) {
      const graph::FusedGroup &grp = g.groups.at(size_t(gid));
      // The CPU schedules (cpu_fallback/Lower.h) apply on NPU targets' fallback groups too.
      // Weights are packed once, before any run, not by the kernel on every call.
      cpu::CpuKernel ck = cpu::lowerGroupForCpu(g, grp, /*prepack=*/true);
      if (kernels) {
        CpuKernel k;
        k.symbol = ck.func.name;
        k.params = ck.params;
        for (const cpu::PackedParam &p : ck.packed)
          k.packed[p.param] = packConstant(p, g.value(ck.params[p.param]));
        (*kernels)[gid] = std::move(k);
      }
      funcs.push_back(std::move(ck.func));
    }
  }
  return funcs;
}

// For each step of the run (a CPU group or an NPU segment, in execution order), the values it is
// the last to read. The runtime frees them after it: later values then reuse their memory
// instead of fresh pages (a page fault costs microseconds on a VM: ResNet-50's first inference
// took 60% longer than the next ones in the same process), and the run holds less at once.
// Graph outputs are never freed.
std::vector<std::vector<ValueId>> lastReaders(const CompiledModel &m) {
  const graph::Graph &g = m.graph;
  std::map<ValueId, size_t> last;
  size_t step = 0;
  for (const Seg &s : m.segments) {
    if (s.npu) {
      for (const npu::DramTensor &dt : m.npuSegments.at(size_t(s.npuIndex)).inputs)
        last[dt.value] = step;
      ++step;
      continue;
    }
    for (int gid : s.groups) {
      const graph::FusedGroup &grp = g.groups.at(size_t(gid));
      for (ValueId v : grp.inputs)
        last[v] = step;
      for (graph::NodeId id : grp.nodes)
        for (ValueId v : g.node(id).inputs)
          if (v != graph::kNoValue)
            last[v] = step;
      ++step;
    }
  }
  for (ValueId v : g.outputs)
    last.erase(v);
  std::vector<std::vector<ValueId>> byStep(step);
  for (const auto &[v, at] : last)
    byStep[at].push_back(v);
  return byStep;
}

// Links the lowered kernels as one module (the package's machine code where it fits this CPU,
// else the code cache's, else LLVM's now, which the cache then keeps) and looks up each group's
// function; says which, and why not the package's.
CpuCodeUse linkCpuKernels(const CompiledModel &m, const RunOptions &options,
                          const std::vector<tir::PrimFunc> &funcs, cpu::Jit &jit,
                          std::map<int, CpuKernel> &kernels) {
  CpuCodeUse use;
  if (funcs.empty())
    return use;
  auto t0 = std::chrono::steady_clock::now();
  const bool stored = m.cpuCode && options.nativeCode;
  cpu::Jit::Added added = jit.add(funcs, stored ? &*m.cpuCode : nullptr, options.codeCache);
  for (auto &[gid, k] : kernels) {
    k.fn = jit.lookup(k.symbol);
    NPUC_ASSERT(k.fn != nullptr, "the JIT defines every function it was given: " + k.symbol);
  }
  use.any = true;
  use.fromPackage = added.reused;
  use.fromCache = added.fromCache;
  use.packageHadCode = m.cpuCode.has_value();
  use.whyNot = stored ? added.whyNot : "--no-native-code was given";
  if (!added.reused && !added.fromCache)
    use.cacheNote = options.codeCache
                        ? options.codeCache->store(added.key, jit.nativeCode(added).object)
                        : "no code cache";
  use.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return use;
}

} // namespace

std::optional<cpu::NativeCode> compileCpuCode(const CompiledModel &m) {
  std::vector<tir::PrimFunc> funcs = lowerCpuGroups(m, nullptr);
  if (funcs.empty())
    return std::nullopt;
  cpu::Jit jit;
  return jit.nativeCode(jit.add(funcs));
}

RunResult runModel(const CompiledModel &m, const std::map<std::string, HostTensor> &inputs,
                   const RunOptions &options) {
  const graph::Graph &g = m.graph;
  for (const npu::Segment &s : m.npuSegments)
    NPUC_ASSERT(!s.timingOnly, "a timing-only compile (constants not packed) never runs "
                               "functionally");
  validateInputs(g, inputs);

  // Lower every CPU group up front and link them as one module: the package's machine code
  // when it was compiled for this CPU from the same kernels, otherwise through LLVM now.
  std::map<int, CpuKernel> kernels;
  std::vector<tir::PrimFunc> funcs = lowerCpuGroups(m, &kernels);
  cpu::Jit jit;
  cpu::Jit::setThreads(m.threads);
  const CpuCodeUse codeUse = linkCpuKernels(m, options, funcs, jit, kernels);

  ValueStore vals(g);
  for (const auto &[name, t] : inputs) {
    const ValueId v = *g.findValue(name);
    vals.set(v, toInternal(g.value(v), t));
  }

  RunResult r;
  const std::vector<std::vector<ValueId>> lastRead = lastReaders(m);
  size_t step = 0;
  auto stepDone = [&] {
    for (ValueId v : lastRead.at(step))
      vals.erase(v);
    ++step;
  };
  for (const Seg &s : m.segments) {
    SegmentRun run;
    run.npu = s.npu;
    const int segIndex = static_cast<int>(r.segments.size());
    if (s.npu) {
      const npu::Segment &seg = m.npuSegments.at(size_t(s.npuIndex));
      runNpuSegment(m, seg, vals, run);
      if (options.keepValues)
        for (const npu::DramTensor &dt : seg.outputs)
          r.hostValues.push_back({dt.value, segIndex, vals.get(dt.value)});
      stepDone();
    } else {
      auto segStart = std::chrono::steady_clock::now();
      double kernelMs = 0;
      for (int gid : s.groups) {
        const CpuKernel &k = kernels.at(gid);
        const graph::FusedGroup &grp = g.groups.at(size_t(gid));
        std::vector<void *> args;
        std::vector<HostTensor> outs;
        outs.reserve(grp.outputs.size()); // args point into outs: no reallocation
        size_t firstOut = k.params.size() - grp.outputs.size();
        for (size_t i = 0; i < k.params.size(); ++i) {
          ValueId v = k.params[i];
          if (i >= firstOut) {
            outs.emplace_back(g.value(v).shape);
            args.push_back(outs.back().data.data());
          } else if (auto p = k.packed.find(i); p != k.packed.end()) {
            args.push_back(const_cast<float *>(p->second.data()));
          } else { // inputs and constants (int64 constants materialise as fp32)
            args.push_back(const_cast<float *>(vals.get(v).data.data()));
          }
        }
        checkGathers(g, grp, vals);
        auto t0 = std::chrono::steady_clock::now();
        k.fn(args.data());
        auto t1 = std::chrono::steady_clock::now();
        run.cpuMs[gid] = std::chrono::duration<double, std::milli>(t1 - t0).count();
        kernelMs += run.cpuMs[gid];
        for (size_t i = 0; i < grp.outputs.size(); ++i) {
          checkIntegerValue(g.value(grp.outputs[i]), outs[i]);
          if (options.keepValues)
            r.hostValues.push_back({grp.outputs[i], segIndex, outs[i]});
          vals.set(grp.outputs[i], std::move(outs[i]));
        }
        stepDone();
      }
      run.hostMs =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - segStart)
              .count() -
          kernelMs;
    }
    r.segments.push_back(std::move(run));
  }
  for (size_t i = 0; i < g.outputs.size(); ++i) // written in the model's declared types
    r.outputs[g.outputName(i)] = castTensor(vals.get(g.outputs[i]), g.value(g.outputs[i]).dtype);
  r.report = buildReport(m, r.segments, codeUse);
  r.cpuCode = codeUse;
  if (options.trace)
    r.traceJson = buildTrace(m, r.segments);
  return r;
}

} // namespace npuc::driver
