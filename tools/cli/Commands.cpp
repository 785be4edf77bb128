// Commands.cpp - the model-level subcommands: compile, run, ref, disasm, inspect, and the
// argument helpers and output bookkeeping they share.
//
// Every command computes everything first and writes files last, through OutputSet, so an error
// (bad input, simulator fault, unwritable directory) leaves no partial set of outputs behind.
#include "tools/cli/Commands.h"

#include "cpu_fallback/Aot.h"
#include "cpu_fallback/Gpu.h"
#include "frontend/Onnx.h"
#include "graph/Passes.h"
#include "graph/Reference.h"
#include "isa/Program.h"
#include "lowering/LowerOps.h"
#include "npu/hw/Hw.h"
#include "npu/isel/Coverage.h"
#include "npu/pipeline/Phase.h"
#include "npuc/thread_pool.h"
#include "support/Error.h"
#include "support/File.h"
#include "support/Npy.h"
#include "tools/driver/Accuracy.h"
#include "tools/driver/Package.h"
#include "tools/driver/Report.h"
#include "tools/driver/Runtime.h"
#include "tune/Records.h"
#include <iostream>

#include <fmt/ranges.h>

#include <charconv>
#include <filesystem>

namespace npuc::cli {

namespace {

// `inspect --loops`: instruction selection on the group's reference nest, or why there is none.
tir::GroupCoverage loopCoverage(const graph::Graph &g, const graph::FusedGroup &grp,
                                const isa::Target &t) {
  tir::PrimFunc reference;
  try {
    reference = tir::lowerGroup(g, grp);
  } catch (const npuc::Error &e) {
    tir::GroupCoverage out;
    out.error = e.what();
    return out;
  }
  return tir::analyseNest(reference, t);
}

// L1 residency of one NPU segment: the tensors the analysis (graph/Residency.cpp) proposed to
// keep on chip between groups, and what the code generator did with each (npu/pipeline/Resident.h).
void printResidency(std::ostream &out, const driver::CompiledModel &m, const npu::Segment &ns) {
  npu::Hw hw;
  if (!npu::Hw::derive(m.target, hw).empty())
    return;
  const isa::MemoryLevel &l1 = m.target.levels.at(size_t(hw.l1));
  if (!m.options.residency) {
    out << fmt::format("  L1 residency: off (--no-residency): every tensor goes through DRAM\n");
    return;
  }
  int64_t saved = 0, kept = 0;
  for (const npu::ResidencyEntry &e : ns.residency)
    if (e.dropped.empty()) {
      saved += e.dramBytesSaved;
      ++kept;
    }
  out << fmt::format("  L1 residency ({} {} bytes): {} of {} proposed tensor(s) kept on chip "
                     "between groups, {} compulsory DRAM bytes not transferred\n",
                     l1.name, l1.size, kept, ns.residency.size(), saved);
  for (const npu::ResidencyEntry &e : ns.residency) {
    std::string to;
    for (int c : e.consumers)
      to += fmt::format("{}{}", to.empty() ? "" : ",", c);
    std::string what = e.dropped.empty() ? fmt::format("kept at {} {:#x}, saves {} bytes", l1.name,
                                                       e.l1Addr, e.dramBytesSaved)
                                         : "in DRAM: " + e.dropped;
    out << fmt::format("    {} ({} bytes): group {} -> group(s) {}: {}\n", e.name, e.bytes,
                       e.producer, to, what);
  }
}

// Batch splitting of one NPU segment (npu/pipeline/BatchSplit.h): the runs executed sub-batch by
// sub-batch, with the cost model's figures, and the runs considered and not split.
void printBatchSplit(std::ostream &out, const driver::CompiledModel &m, const npu::Segment &ns) {
  if (!m.options.batchSplit) {
    out << "  batch split: off (--no-batch-split): every group runs on the whole batch\n";
    return;
  }
  if (ns.batchSplit.empty() && ns.batchSplitNotes.empty())
    return; // batch 1
  int64_t saved = 0, extra = 0;
  for (const npu::BatchSplitEntry &e : ns.batchSplit) {
    saved += e.dramBytesSaved;
    extra += e.extraDramBytes;
  }
  out << fmt::format("  batch split: {} run(s) executed sub-batch by sub-batch, {} DRAM bytes of "
                     "intermediates kept in L1, {:+} DRAM bytes more moved by their kernels at "
                     "sub-batch size (weights reloaded)\n",
                     ns.batchSplit.size(), saved, extra);
  for (const npu::BatchSplitEntry &e : ns.batchSplit) {
    std::string gs;
    for (int gid : e.groups)
      gs += fmt::format("{}{}", gs.empty() ? "" : ",", gid);
    out << fmt::format("    groups {}: batch {} split into sub-batches of {}: {}\n", gs, e.batch,
                       e.subBatch, e.reason);
  }
  for (const std::string &note : ns.batchSplitNotes)
    out << "    " << note << "\n";
}

// Depth-first runs of one NPU segment (npu/pipeline/DepthFirst.h): the chains executed band by
// band with their band heights and simulated figures, and the chains considered and not.
void printDepthFirst(std::ostream &out, const driver::CompiledModel &m, const npu::Segment &ns) {
  if (!m.options.depthFirst) {
    out << "  depth-first: off (--no-depth-first): every group runs on its whole tensors\n";
    return;
  }
  if (ns.depthFirst.empty() && ns.depthFirstNotes.empty())
    return; // no chain considered
  out << fmt::format("  depth-first: {} chain(s) executed band by band of output rows\n",
                     ns.depthFirst.size());
  for (const npu::DepthFirstEntry &e : ns.depthFirst) {
    std::string gs;
    for (int gid : e.groups)
      gs += fmt::format("{}{}", gs.empty() ? "" : ",", gid);
    out << fmt::format("    groups {}: {}\n", gs, e.reason);
  }
  for (const std::string &note : ns.depthFirstNotes)
    out << "    " << note << "\n";
}

// One line on a group's bank-aware placement (npu/pipeline/BankAlloc.h).
std::string formatBankReport(const npu::BankReport &b, bool enabled) {
  if (!enabled)
    return "banks: bank-aware placement off (--no-bank-aware): bump-allocated addresses";
  if (!b.ran)
    return "banks: nothing to place";
  std::string s = fmt::format("banks (group simulated alone): {} stall cycles of {} -> {} of {}",
                              b.stallsBefore, b.cyclesBefore, b.stallsAfter, b.cyclesAfter);
  if (b.stallsBefore > 0 && b.candidates == 0)
    s += ", no placement tried (stalls under 1% of the group's cycles, or no room to move)";
  else if (b.stallsBefore > 0)
    s += fmt::format(", {} placement(s) tried, {}", b.candidates,
                     b.change.empty() ? "default kept" : "moved " + b.change);
  return s;
}

} // namespace

namespace fs = std::filesystem;

OutputSet::~OutputSet() {
  if (committed_)
    return;
  for (const std::string &p : written_) {
    std::error_code ec; // best effort: we are already unwinding from an error
    fs::remove(p, ec);
  }
  for (auto it = createdDirs_.rbegin(); it != createdDirs_.rend(); ++it) {
    std::error_code ec;
    fs::remove(*it, ec); // only succeeds when empty: never deletes anything not ours
  }
}

void OutputSet::createDirs(const std::string &dir) {
  std::vector<fs::path> missing;
  for (fs::path p = fs::path(dir).lexically_normal(); !p.empty() && !fs::exists(p);
       p = p.parent_path()) {
    missing.push_back(p);
    if (p == p.parent_path())
      break;
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    fail("{}: cannot create output directory: {}", dir, ec.message());
  for (auto it = missing.rbegin(); it != missing.rend(); ++it)
    createdDirs_.push_back(it->string());
}

void OutputSet::writeFile(const std::string &path, const std::string &bytes) {
  writeFileAtomic(path, bytes, inputs_);
  written_.push_back(path);
}

void OutputSet::writeNpy(const std::string &path, const HostTensor &t) {
  npuc::writeNpy(path, t, inputs_);
  written_.push_back(path);
}

static int64_t parseInt(const std::string &s, const std::string &what) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size())
    fail("{}: '{}' is not an integer", what, s);
  return v;
}

std::pair<std::string, Shape> parseInputShape(const std::string &arg) {
  size_t eq = arg.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == arg.size())
    fail("--input-shape '{}': expected NAME=D0,D1,...", arg);
  Shape s;
  std::string dims = arg.substr(eq + 1);
  size_t pos = 0;
  while (pos <= dims.size()) {
    size_t comma = dims.find(',', pos);
    std::string d = dims.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    int64_t v = parseInt(d, "--input-shape '" + arg + "'");
    if (v <= 0)
      fail("--input-shape '{}': dimension {} must be positive", arg, v);
    s.push_back(v);
    if (comma == std::string::npos)
      break;
    pos = comma + 1;
  }
  return {arg.substr(0, eq), s};
}

std::pair<std::string, HostTensor> parseInputFile(const std::string &arg) {
  size_t eq = arg.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == arg.size())
    fail("--input '{}': expected NAME=FILE.npy", arg);
  return {arg.substr(0, eq), readNpy(arg.substr(eq + 1))};
}

std::map<std::string, Shape> shapeMap(const std::vector<std::string> &args) {
  std::map<std::string, Shape> m;
  for (const std::string &a : args) {
    auto [name, s] = parseInputShape(a);
    if (!m.emplace(name, s).second)
      fail("--input-shape: input '{}' given twice", name);
  }
  return m;
}

frontend::ImportOptions importOptions(const std::vector<std::string> &inputShapes,
                                      const std::vector<std::string> &binds) {
  frontend::ImportOptions o(shapeMap(inputShapes));
  for (const std::string &arg : binds) {
    size_t eq = arg.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == arg.size())
      fail("--bind '{}': expected NAME=FILE.npy", arg);
    std::string name = arg.substr(0, eq);
    if (o.bound.count(name))
      fail("--bind: input '{}' bound twice", name);
    o.bound.emplace(name, readNpyArray(arg.substr(eq + 1)));
  }
  return o;
}

std::vector<std::string> inputPaths(const std::vector<std::string> &args) {
  std::vector<std::string> paths;
  for (const std::string &a : args)
    if (size_t eq = a.find('='); eq != std::string::npos)
      paths.push_back(a.substr(eq + 1));
  return paths;
}

/// The --input files by input name; a file whose dtype is not the model's input type is an error
/// naming the input, the file and both types (unknown names are validateInputs' to report).
static std::map<std::string, HostTensor> inputMap(const std::vector<std::string> &args,
                                                  const graph::Graph &g) {
  std::map<std::string, HostTensor> m;
  for (const std::string &a : args) {
    auto [name, t] = parseInputFile(a);
    std::optional<graph::ValueId> v = g.findValue(name);
    if (v && t.dtype != g.value(*v).dtype)
      fail("--input {}: {} holds {} values but the model's input '{}' is {}", name,
           a.substr(a.find('=') + 1), dtypeName(t.dtype), name, dtypeName(g.value(*v).dtype));
    if (!m.emplace(name, std::move(t)).second)
      fail("--input: input '{}' given twice", name);
  }
  return m;
}

/// Writes each output as DIR/<sanitized name>.npy; two outputs mapping to one file is an error.
static void writeOutputs(OutputSet &outs, const std::string &dir,
                         const std::map<std::string, HostTensor> &tensors) {
  std::map<std::string, std::string> files;
  for (const auto &[name, t] : tensors) {
    std::string file = sanitizeName(name) + ".npy";
    auto [it, fresh] = files.emplace(file, name);
    if (!fresh)
      fail("outputs '{}' and '{}' would both be written to {}", it->second, name, file);
  }
  outs.createDirs(dir);
  for (const auto &[name, t] : tensors)
    outs.writeNpy((fs::path(dir) / (sanitizeName(name) + ".npy")).string(), t);
}

namespace {

npu::Phase phaseArg(const std::string &option, const std::string &name) {
  std::optional<npu::Phase> p = npu::phaseNamed(name);
  if (!p)
    fail("{} {}: no such phase of the segment pipeline; the phases are: {}", option, name,
         npu::phaseNames());
  return *p;
}

// The segment pipeline's controls from --print-after, --print-after-all, --stop-after and
// --time-phases; null when none is given.
std::shared_ptr<npu::PhaseControl> phaseControl(const CompileArgs &a, std::ostream &out) {
  if (a.printAfter.empty() && !a.printAfterAll && a.stopAfter.empty() && !a.timePhases)
    return nullptr;
  auto c = std::make_shared<npu::PhaseControl>();
  c->out = &out;
  c->time = a.timePhases;
  for (const std::string &list : a.printAfter)
    for (size_t at = 0; at <= list.size();) {
      const size_t comma = std::min(list.find(',', at), list.size());
      c->printAfter.insert(phaseArg("--print-after", list.substr(at, comma - at)));
      at = comma + 1;
    }
  if (a.printAfterAll)
    for (size_t i = 0; i < npu::kNumPhases; ++i)
      c->printAfter.insert(static_cast<npu::Phase>(i));
  if (!a.stopAfter.empty())
    c->stopAfter = phaseArg("--stop-after", a.stopAfter);
  return c;
}

// --emit-schedule: the schedule of every NPU group, by key (the first group of a key wins; equal
// structures in one model normally choose equal points). --schedule: a warning per key that
// matched no group, which usually means the file was made for another model or target.
void reportSchedules(const driver::CompiledModel &m, const CompileArgs &a, std::ostream &warn,
                     OutputSet &outs) {
  npu::ScheduleFile chosen;
  for (const npu::Segment &s : m.npuSegments)
    for (const npu::GroupInfo &gi : s.groupInfo)
      if (!chosen.find(gi.scheduleKey))
        chosen.put(gi.scheduleKey, gi.schedule, gi.name);
  if (!a.emitSchedule.empty())
    outs.writeFile(a.emitSchedule, chosen.toJson().dump(2) + "\n");
  if (m.options.schedules)
    for (const auto &[key, e] : m.options.schedules->entries())
      if (!chosen.find(key))
        warn << fmt::format("warning: {}: key {}{} matches no NPU group of this compile\n",
                            a.schedule, key.str(), e.group.empty() ? "" : " (" + e.group + ")");
}

// --tuning-log: the best lowered record of each key (tune/Records.h); a truncated last line
// (a killed `npuc tune`) is dropped with a warning.
std::shared_ptr<const npu::ScheduleFile> tuningLogSchedules(const std::string &path,
                                                            std::ostream &warn) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    fail("--tuning-log {}: no such file", path);
  tune::RecordLog log = tune::readRecords(path);
  for (const std::string &w : log.warnings)
    warn << "warning: " << w << "\n";
  return std::make_shared<const npu::ScheduleFile>(tune::bestSchedules(log.records));
}

} // namespace

void cmdCompile(const CompileArgs &a, std::ostream &out, std::ostream &err) {
  if (a.threads < 1 || a.threads > rt::ThreadPool::kMaxThreads)
    fail("--threads {}: must be in [1, {}]", a.threads, rt::ThreadPool::kMaxThreads);
  if (a.target == "gpu" || a.emit == "ptx") {
    if (a.target != "gpu" || (a.emit != "ptx" && a.emit != "package"))
      fail("--emit ptx goes with --target gpu (got --target {} --emit {})", a.target, a.emit);
    return cmdCompileGpu(a, out);
  }
  bool aot = a.emit == "obj" || a.emit == "so";
  if (!aot && a.emit != "package")
    fail("--emit {}: expected package, obj, so or ptx", a.emit);
  if (aot && !driver::isCpuTarget(a.target))
    fail("--emit {} needs --target cpu (got --target {})", a.emit, a.target);
  npu::CompileOptions opt;
  opt.doubleBuffer = !a.noDoubleBuffer;
  opt.crossGroupPrefetch = !a.noPrefetch;
  opt.bankAware = !a.noBankAware;
  opt.residency = !a.noResidency;
  opt.batchSplit = !a.noBatchSplit;
  opt.batchWeightReuse = !a.noBatchWeightReuse;
  opt.batchSplitEvenIfSlower = a.batchSplitDramFirst;
  opt.depthFirst = !a.noDepthFirst;
  opt.fusedAttention = !a.noFusedAttention;
  opt.depthFirstRows = a.depthFirstRows;
  if (a.noDepthFirst && a.depthFirstRows > 0)
    fail("--depth-first-rows {} contradicts --no-depth-first", a.depthFirstRows);
  opt.segmentPerGroup = a.segmentPerGroup;
  if (a.tiling != "auto" && a.tiling != "naive")
    fail("--tiling: expected 'auto' or 'naive', got '{}'", a.tiling);
  opt.naiveTiling = a.tiling == "naive";
  opt.calibrationPaths = a.calibrate;
  opt.calibration = npu::parseCalibrationMethod(a.calibrationMethod, "--calibration-method");
  opt.int8Accuracy = a.int8Accuracy;
  if ((aot || driver::isCpuTarget(a.target)) &&
      (!a.calibrate.empty() || a.calibrationMethod != "max" || a.int8Accuracy != 0))
    fail("--calibrate, --calibration-method and --int8-accuracy set int8 scales and layers; "
         "--target {} has no int8 operands",
         a.target);
  opt.verifyPhases = !a.noVerifyPhases;
  if (!a.debugCrashAt.empty()) {
    opt.debugCrashAt = npu::phaseNamed(a.debugCrashAt);
    if (!opt.debugCrashAt)
      fail("--debug-crash-at {}: expected a phase ({})", a.debugCrashAt, npu::phaseNames());
  }
  opt.phases = phaseControl(a, out);
  if (opt.phases && (aot || driver::isCpuTarget(a.target)))
    fail("--print-after, --stop-after and --time-phases show the NPU's segment pipeline; "
         "--target {} compiles no NPU segment",
         a.target);
  if (!a.schedule.empty())
    opt.schedules = std::make_shared<const npu::ScheduleFile>(npu::ScheduleFile::load(a.schedule));
  if (!a.tuningLog.empty())
    opt.tuned = tuningLogSchedules(a.tuningLog, err);
  // Bad destinations fail before the compile (the write checks them again).
  std::vector<std::string> read = {a.model, a.target, a.schedule, a.tuningLog};
  read.insert(read.end(), a.calibrate.begin(), a.calibrate.end());
  for (const std::string &p : inputPaths(a.binds))
    read.push_back(p);
  checkOutputPath(a.output, read);
  if (!a.emitSchedule.empty())
    checkOutputPath(a.emitSchedule, read);
  CrashHandlerScope reproducer(compileCrashHandler(a));
  driver::CompiledModel m;
  try {
    m = driver::compileModel(a.model, a.target, importOptions(a.inputShapes, a.binds), opt);
  } catch (const std::exception &e) {
    reportIfInternal(e); // not caught inside: the reproducer is the whole model
    throw;
  }
  m.threads = a.threads;
  if (opt.phases && opt.phases->time)
    err << npu::formatPhaseTimes(*opt.phases);
  if (opt.phases && opt.phases->stopped) {
    out << fmt::format("stopped after phase '{}': no package written\n",
                       npu::phaseName(*opt.phases->stopAfter));
    return;
  }
  OutputSet outs(read);
  reportSchedules(m, a, err, outs);
  for (const npu::Segment &s : m.npuSegments)
    for (const std::string &w : s.warnings)
      err << "npuc: warning: " << w << "\n";
  if (aot) {
    cpu::AotArtifacts art = cpu::buildAot(m.graph, a.emit == "so", a.threads);
    outs.writeFile(a.output, art.library);
    outs.writeFile(a.output + ".graph", art.graph);
    outs.writeFile(a.output + ".params", art.params);
    outs.commit();
    out << fmt::format("compiled {} for the host CPU: {} kernels -> {} (+ .graph, .params)\n",
                       a.model, m.graph.groups.size(), a.output);
    return;
  }
  // The CPU groups' machine code for this host goes into the package, so that npuc run does not
  // run LLVM (on another CPU it does, and says so in its report).
  if (!a.noNativeCode)
    m.cpuCode = driver::compileCpuCode(m);
  outs.writeFile(a.output, driver::packageBytes(m));
  outs.commit();
  size_t npuGroups = 0;
  for (const graph::FusedGroup &g : m.graph.groups)
    npuGroups += g.placement == graph::Placement::Npu;
  out << fmt::format("compiled {} for {}: {} groups ({} on the NPU, {} on the CPU), {} segments "
                     "-> {}\n",
                     a.model, m.target.name, m.graph.groups.size(), npuGroups,
                     m.graph.groups.size() - npuGroups, m.segments.size(), a.output);
}

void cmdCompileGpu(const CompileArgs &a, std::ostream &out) {
  // Placement does not matter for the GPU: every group is lowered; running is not supported.
  driver::CompiledModel m =
      driver::compileModelForCpu(a.model, importOptions(a.inputShapes, a.binds));
  cpu::GpuArtifacts art = cpu::buildGpu(m.graph);
  OutputSet outs({a.model});
  outs.writeFile(a.output, art.ptx);
  outs.writeFile(a.output + ".launch", art.plan);
  outs.commit();
  out << fmt::format("compiled {} for the GPU (NVPTX sm_80): {} groups -> {} (PTX, + .launch)\n",
                     a.model, m.graph.groups.size(), a.output);
}

// --compare-ref: the reference executor on the model the package was compiled from, with the
// package's input shapes pinned (a model of dynamic dims compiled with --input-shape), every
// value kept, compared with the run's host values.
static driver::AccuracyReport compareRun(const std::string &model, const driver::CompiledModel &m,
                                         const driver::RunResult &r,
                                         const std::map<std::string, HostTensor> &inputs) {
  frontend::ImportOptions io;
  io.pinnedBy = "the package's input shape";
  for (graph::ValueId v : m.graph.inputs)
    io.inputShapes[m.graph.value(v).name] = m.graph.value(v).shape;
  try {
    graph::Graph g = driver::loadModelGraph(model, io);
    driver::validateInputs(g, inputs);
    std::map<graph::ValueId, HostTensor> byId;
    for (const auto &[name, t] : inputs)
      byId[*g.findValue(name)] = t;
    return driver::compareWithReference(m, r, g, graph::runReferenceAll(g, byId));
  } catch (const Error &e) { // which of the two models a message is about
    fail("--compare-ref {}: {}", model, e.what());
  }
}

void cmdRun(const RunArgs &a, std::ostream &out) {
  driver::CompiledModel m = driver::loadPackage(a.package);
  if (a.threads < 0 || a.threads > rt::ThreadPool::kMaxThreads)
    fail("--threads {}: must be in [1, {}]", a.threads, rt::ThreadPool::kMaxThreads);
  if (a.threads > 0)
    m.threads = a.threads;
  std::map<std::string, HostTensor> inputs = inputMap(a.inputs, m.graph);
  driver::RunOptions ro;
  ro.trace = !a.trace.empty();
  ro.keepValues = !a.compareRef.empty();
  ro.nativeCode = !a.noNativeCode;
  // Code LLVM compiles for a package without native code for this CPU is kept for later runs.
  cpu::CodeCache cache;
  if (!a.noNativeCode) {
    cache = cpu::CodeCache::fromEnvironment();
    ro.codeCache = &cache;
  }
  driver::RunResult r = driver::runModel(m, inputs, ro);
  std::string accuracy;
  if (!a.compareRef.empty()) {
    driver::AccuracyReport acc = compareRun(a.compareRef, m, r, inputs);
    r.report["accuracy"] = driver::accuracyJson(acc);
    accuracy = driver::formatAccuracy(acc);
  }
  std::vector<std::string> read = inputPaths(a.inputs);
  read.push_back(a.package);
  if (!a.compareRef.empty())
    read.push_back(a.compareRef);
  OutputSet outs(read);
  writeOutputs(outs, a.outputDir, r.outputs);
  if (!a.report.empty())
    outs.writeFile(a.report, r.report.dump(2) + "\n");
  if (!a.trace.empty())
    outs.writeFile(a.trace, r.traceJson);
  outs.commit();
  out << driver::formatReport(r.report) << accuracy;
}

void cmdRef(const RefArgs &a, std::ostream &out) {
  frontend::ImportOptions io = importOptions(a.inputShapes, a.binds);
  for (const std::string &arg : a.inputs) // before the --input files are read
    if (auto b = io.bound.find(arg.substr(0, arg.find('='))); b != io.bound.end())
      fail("input '{}' is given with --input and bound with --bind {}={}; give it once", b->first,
           b->first, b->second.path);
  graph::Graph g = driver::loadModelGraph(a.model, io);
  const std::map<std::string, HostTensor> named =
      driver::runReferenceNamed(g, inputMap(a.inputs, g));
  std::vector<std::string> read = inputPaths(a.inputs);
  read.push_back(a.model);
  for (const std::string &p : inputPaths(a.binds))
    read.push_back(p);
  OutputSet outs(read);
  writeOutputs(outs, a.outputDir, named);
  outs.commit();
  for (const auto &[name, t] : named)
    out << fmt::format("{}: {} -> {}\n", name, shapeToString(t.shape),
                       (fs::path(a.outputDir) / (sanitizeName(name) + ".npy")).string());
}

/// Disassembles program indices [begin, end) (instructions carry no cross-references).
static std::string disasmRange(const isa::Target &t, const isa::Program &p, int64_t begin,
                               int64_t end) {
  isa::Program part;
  part.instrs.assign(p.instrs.begin() + begin, p.instrs.begin() + end);
  return isa::disassemble(t, part);
}

void cmdDisasm(const std::string &package, std::ostream &out) {
  driver::CompiledModel m = driver::loadPackage(package);
  out << fmt::format("# {} for target {}: {} NPU segment(s)\n", package, m.target.name,
                     m.npuSegments.size());
  for (size_t si = 0; si < m.npuSegments.size(); ++si) {
    const npu::Segment &s = m.npuSegments[si];
    const int64_t n = int64_t(s.program.instrs.size());
    out << fmt::format("\n# ===== segment {}: {} instructions, DRAM image {} bytes, constants at "
                       "{:#x} ({} bytes)\n",
                       si, n, s.dramBytes, s.constBase, s.constImage.size());
    for (const npu::DramTensor &t : s.inputs)
      out << fmt::format("#   input  {} {} @ {:#x}\n", t.name, shapeToString(t.shape), t.addr);
    for (const npu::DramTensor &t : s.outputs)
      out << fmt::format("#   output {} {} @ {:#x}\n", t.name, shapeToString(t.shape), t.addr);
    int64_t pos = 0;
    std::vector<const npu::GroupInfo *> infos;
    for (const npu::GroupInfo &gi : s.groupInfo)
      infos.push_back(&gi);
    // By start, then end: a group without instructions (a view) is listed before the group that
    // starts where it sits, and no range is listed twice.
    std::sort(infos.begin(), infos.end(), [](auto *x, auto *y) {
      return std::pair(x->instrBegin, x->instrEnd) < std::pair(y->instrBegin, y->instrEnd);
    });
    for (const npu::GroupInfo *gi : infos) {
      if (gi->instrBegin > pos)
        out << disasmRange(m.target, s.program, pos, gi->instrBegin);
      std::string ops;
      for (const std::string &o : gi->ops)
        ops += (ops.empty() ? std::string() : std::string("+")) + o;
      out << fmt::format("# --- group {} '{}' ({}): instructions [{}, {})\n", gi->groupId, gi->name,
                         ops, gi->instrBegin, gi->instrEnd);
      if (const int64_t from = std::max(pos, gi->instrBegin); gi->instrEnd > from)
        out << disasmRange(m.target, s.program, from, gi->instrEnd);
      pos = std::max(pos, gi->instrEnd);
    }
    if (pos < n) {
      out << "# --- segment epilogue\n";
      out << disasmRange(m.target, s.program, pos, n);
    }
  }
}

// "l1 96.0 of 1024.0 KiB (9%), acc 8.0 of 128.0 KiB (6%)": bytes per level against its size.
static std::string formatOnChip(const isa::Target &t, const std::map<std::string, int64_t> &bytes) {
  std::string s;
  for (const auto &[level, b] : bytes) {
    const int64_t size = t.levels.at(size_t(*t.findLevel(level))).size;
    s += fmt::format("{}{} {:.1f} of {:.1f} KiB ({:.0f}%)", s.empty() ? "" : ", ", level,
                     double(b) / 1024, double(size) / 1024, 100.0 * double(b) / double(size));
  }
  return s;
}

void cmdInspect(const InspectArgs &a, std::ostream &out) {
  driver::CompiledModel m = driver::loadPackage(a.package);
  const graph::Graph &g = m.graph;
  std::map<int, std::pair<int, const npu::GroupInfo *>> info; // group -> (segment, info)
  for (size_t si = 0; si < m.npuSegments.size(); ++si)
    for (const npu::GroupInfo &gi : m.npuSegments[si].groupInfo)
      info.try_emplace(gi.groupId, int(si), &gi); // a split group: its first sub-batch
  out << fmt::format("model '{}' compiled for target '{}' (double buffering {}, cross-group "
                     "prefetch {}, bank-aware placement {}, L1 residency {}, batch split {})\n",
                     g.name, m.target.name, m.options.doubleBuffer ? "on" : "off",
                     m.options.crossGroupPrefetch ? "on" : "off",
                     m.options.bankAware ? "on" : "off", m.options.residency ? "on" : "off",
                     !m.options.batchSplit              ? "off"
                     : m.options.batchSplitEvenIfSlower ? "on, DRAM first"
                                                        : "on");
  if (m.options.segmentPerGroup)
    out << "every NPU group is a segment of its own (--segment-per-group)\n";
  if (!m.options.batchWeightReuse)
    out << "batch weight reuse off (--no-batch-weight-reuse): weights reloaded per image\n";
  if (!m.options.depthFirst)
    out << "depth-first off (--no-depth-first): every group runs on its whole tensors\n";
  if (!m.options.fusedAttention)
    out << "fused attention off (--no-fused-attention): attention runs as three groups\n";
  if (m.cpuCode)
    out << fmt::format("CPU groups' machine code: {} bytes for {} (key {})\n",
                       m.cpuCode->object.size(), m.cpuCode->host, m.cpuCode->key.substr(0, 16));
  else if (std::any_of(m.segments.begin(), m.segments.end(),
                       [](const driver::Seg &s) { return !s.npu; }))
    out << "CPU groups' machine code: none stored (npuc run compiles them with LLVM)\n";
  if (m.options.quant)
    out << fmt::format("int8 quantisation: per-tensor symmetric activations (scales in each "
                       "segment's DRAM tensors), per-channel weights; calibrated on {}\n",
                       m.options.quant->source);
  if (!m.options.int8AccuracyResult.empty())
    out << "mixed precision: " << m.options.int8AccuracyResult
        << " (each kept-wide group's reason is its CPU placement's)\n";
  for (size_t si = 0; si < m.segments.size(); ++si) {
    const driver::Seg &s = m.segments[si];
    out << fmt::format("\nsegment {} ({}): {} group(s)\n", si, s.npu ? "npu" : "cpu",
                       s.groups.size());
    if (s.npu) {
      const npu::Segment &ns = m.npuSegments.at(size_t(s.npuIndex));
      out << fmt::format("  DRAM: activations peak {} bytes (planned by liveness; {} without "
                         "reuse), constants {} bytes\n",
                         ns.activationBytes, ns.activationBytesNoReuse, ns.constImage.size());
      std::map<std::string, int64_t> peak; // per level, over the segment's groups
      for (const npu::GroupInfo &gi : ns.groupInfo)
        for (const auto &[level, bytes] : gi.onChipBytes)
          peak[level] = std::max(peak[level], bytes);
      if (!peak.empty())
        out << "  on-chip peak (largest group): " << formatOnChip(m.target, peak) << "\n";
      printResidency(out, m, ns);
      printBatchSplit(out, m, ns);
      printDepthFirst(out, m, ns);
      int cancelled = 0, views = 0, layoutGroups = 0;
      int64_t notMoved = 0;
      for (const npu::GroupInfo &gi : ns.groupInfo) {
        cancelled += gi.layoutOpsCancelled;
        notMoved += gi.layoutBytesNotMoved;
        views += gi.layoutOpsCancelled > 0;
        layoutGroups += !gi.layout.empty();
      }
      if (layoutGroups > 0) // segments without layout ops say nothing
        out << fmt::format("  layout: {} of {} layout-op group(s) are zero-copy views ({} layout "
                           "op(s) cancelled), {} DRAM bytes not moved (a copy's read and write)\n",
                           views, layoutGroups, cancelled, notMoved);
    }
    for (int gid : s.groups) {
      const graph::FusedGroup &grp = g.groups.at(size_t(gid));
      out << fmt::format("  group {} '{}': {} on {}\n", gid, grp.name,
                         fmt::join(driver::groupOps(g, grp), "+"), s.npu ? "npu" : "cpu");
      if (a.loops)
        out << "    " << tir::describe(loopCoverage(g, grp, m.target)) << "\n";
      if (!grp.note.empty())
        out << fmt::format("    note: {}\n", grp.note);
      if (!s.npu) {
        out << fmt::format("    reason: {}\n", grp.cpuReason);
        continue;
      }
      auto it = info.find(gid);
      if (it == info.end())
        continue;
      const npu::GroupInfo &gi = *it->second.second;
      out << fmt::format("    tiling: {}\n", gi.tiling);
      if (!gi.layout.empty())
        out << fmt::format("    layout: {}\n", gi.layout);
      std::string counts;
      int64_t total = 0;
      for (const auto &[mn, c] : gi.instrCounts) {
        counts += fmt::format(" {}={}", mn, c);
        total += c;
      }
      out << fmt::format("    instructions: {} [{}, {}):{}\n", total, gi.instrBegin, gi.instrEnd,
                         counts);
      if (gi.band >= 0 || gi.subBatch >= 0) { // a part of a split run: one entry per part
        int64_t parts = 0;
        for (const npu::GroupInfo &x : m.npuSegments[size_t(it->second.first)].groupInfo)
          parts += x.groupId == gid;
        out << fmt::format("    {}: {} {}, each its own instructions (the figures here are the "
                           "first's)\n",
                           gi.band >= 0 ? "depth-first" : "batch split", parts,
                           gi.band >= 0 ? "bands" : "sub-batches");
      }
      out << fmt::format("    macs: {}, roofline cycles: {} ({}-bound)\n", gi.macs,
                         gi.rooflineCycles, gi.bound);
      if (!gi.onChipBytes.empty())
        out << "    on-chip peak: " << formatOnChip(m.target, gi.onChipBytes) << "\n";
      out << "    " << formatBankReport(gi.bank, m.options.bankAware) << "\n";
      if (a.tir) {
        out << "    tir:\n";
        size_t pos = 0;
        while (pos < gi.tir.size()) {
          size_t nl = gi.tir.find('\n', pos);
          out << "      " << gi.tir.substr(pos, nl == std::string::npos ? nl : nl - pos) << "\n";
          pos = nl == std::string::npos ? gi.tir.size() : nl + 1;
        }
      }
    }
  }
}

} // namespace npuc::cli
