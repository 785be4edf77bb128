// Commands.h - the `npuc` subcommands as plain functions (the CLI in tools/npuc.cpp only parses
// arguments into these option structs). Each command throws npuc::Error on bad input and leaves
// no output file behind when it fails (OutputSet).
#pragma once

#include "frontend/Onnx.h"
#include "support/CrashContext.h"
#include "support/Tensor.h"

#include <cstdint>
#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace npuc::cli {

/// Files (and directories) a command has created; unless commit() is called, the destructor
/// removes them, so a failing command leaves none of its outputs. `inputs` are the files the
/// command read: an output that names one of them is refused (support/File.h).
class OutputSet {
public:
  explicit OutputSet(std::vector<std::string> inputs) : inputs_(std::move(inputs)) {}
  OutputSet(const OutputSet &) = delete;
  OutputSet &operator=(const OutputSet &) = delete;
  ~OutputSet();
  void writeFile(const std::string &path, const std::string &bytes);
  void writeNpy(const std::string &path, const HostTensor &t);
  /// Creates `dir` and missing parents; the ones created here are removed again on failure.
  void createDirs(const std::string &dir);
  void commit() { committed_ = true; }

private:
  std::vector<std::string> inputs_;
  std::vector<std::string> written_;
  std::vector<std::string> createdDirs_; // outermost first
  bool committed_ = false;
};

/// "NAME=1,3,224,224" -> (NAME, shape); errors name the offending argument.
std::pair<std::string, Shape> parseInputShape(const std::string &arg);
/// "NAME=FILE.npy" -> (NAME, tensor read from FILE.npy).
std::pair<std::string, HostTensor> parseInputFile(const std::string &arg);
/// The files of "NAME=FILE.npy" arguments (the inputs an output must not overwrite).
std::vector<std::string> inputPaths(const std::vector<std::string> &args);
/// --input-shape arguments as a map; an input named twice is an error.
std::map<std::string, Shape> shapeMap(const std::vector<std::string> &args);
/// --input-shape and --bind (NAME=FILE.npy, any numeric dtype) arguments for the importer; an
/// input pinned or bound twice is an error.
frontend::ImportOptions importOptions(const std::vector<std::string> &inputShapes,
                                      const std::vector<std::string> &binds);

/// A piece of a --split-input-file text: cut at lines starting `// -----`; firstLine keeps the
/// whole file's line numbers in messages. Without `split`, the whole text.
struct TextChunk {
  std::string text;
  int firstLine;
};
std::vector<TextChunk> splitChunks(const std::string &text, bool split);

/// Runs `each` on every chunk of `text`, printing `// -----` between their outputs. With `split`,
/// a chunk's npuc::Error is reported on `err` and the next chunk still runs (the result is then
/// false); without it the error propagates, as for any single input.
bool forEachChunk(const std::string &text, bool split, std::ostream &out, std::ostream &err,
                  const std::function<void(const TextChunk &)> &each);

struct CompileArgs {
  std::string model, target, output;
  std::vector<std::string> inputShapes;
  std::vector<std::string> binds; // --bind NAME=FILE.npy: the input becomes a constant
  bool noDoubleBuffer = false;
  bool noPrefetch = false;          // ablation: every group's on-chip buffers from the bottom
  bool noBankAware = false;         // ablation: keep the bump allocator's on-chip addresses
  bool segmentPerGroup = false;     // every NPU group its own segment (accuracy per group)
  bool noNativeCode = false;        // the package without the CPU groups' machine code
  bool noResidency = false;         // ablation: every intermediate tensor through DRAM
  bool noBatchSplit = false;        // ablation: batch > 1, every group on the whole batch
  bool batchSplitDramFirst = false; // batch > 1: split runs that save DRAM even if slower
  bool noDepthFirst = false;
  bool noFusedAttention = false; // ablation: attention as three groups        // ablation: batch 1,
                                 // every group on whole tensors
  int64_t depthFirstRows = 0;       // batch 1: forced band height (0: by cost)
  bool noBatchWeightReuse = false;  // ablation: batch > 1, weights reloaded per image
  std::string tiling = "auto";      // "auto" (cost model) or "naive" (ablation)
  std::string emit = "package";     // package | obj | so (--target cpu) | ptx (--target gpu)
  int threads = 1;                  // CPU thread pool size stored in the package / plan
  // int8 targets: the calibration set's files and directories (default: seeded N(0,1)), and
  // how thresholds are chosen: max, percentile[:Q], entropy or mse.
  std::vector<std::string> calibrate;
  std::string calibrationMethod = "max";
  double int8Accuracy = 0; // --int8-accuracy; 0: off
  /// The segment pipeline (npu/pipeline/Phases.def): print the plan after these phases (names,
  /// or comma lists of names), after every phase, stop after one (no package written), time
  /// each phase (to `err`), or skip the verifier between the phases.
  std::vector<std::string> printAfter;
  bool printAfterAll = false;
  std::string stopAfter;
  bool timePhases = false;
  bool noVerifyPhases = false;
  std::string schedule;     // JSON schedule file: force these groups' kernel schedules
  std::string emitSchedule; // write the schedules the compile chose (every NPU group)
  std::string tuningLog;    // `npuc tune` records: each key's best point, used where it fits
  std::string debugCrashAt; // testing the crash path: an internal error at this phase (hidden)
  /// The whole command line as given (argv), for the crash reproducer's rerun command.
  std::vector<std::string> commandLine;
};
struct RunArgs {
  std::string package;
  std::vector<std::string> inputs;
  std::string outputDir, report, trace;
  std::string compareRef; // an ONNX model: report each host value's error against npuc ref's
  int threads = 0;        // > 0: overrides the package's CPU thread count
  bool noNativeCode = false; // compile the CPU groups with LLVM even if the package has code
};
struct RefArgs {
  std::string model;
  std::vector<std::string> inputs, inputShapes, binds;
  std::string outputDir;
};
struct InspectArgs {
  std::string package;
  bool tir = false;
  bool loops = false; // per group: emission from loop analysis on its reference loop nest
};
struct AsmArgs {
  std::string program, target, output;
};
struct SimArgs {
  std::string program, target, report, trace;
  std::vector<std::string> dramInit; // FILE@ADDR
  std::vector<std::string> dumps;    // REGION=FILE.npy or ADDR:BYTES=FILE
  bool noCheck = false, timingOnly = false;
  int64_t dramBytes = 0; // 0: the target's DRAM size, capped (see ProgramCommands)
  int64_t maxWork = 0;   // > 0: the functional budget (default sim::SimOptions::maxWork)
};
struct OptArgs {
  std::string file, passes, stopAfter;
  bool printAfterAll = false, timePasses = false, splitInputFile = false, listPasses = false;
};
struct GraphOptArgs {
  std::string file; // graph text (.graph) or an ONNX model (.onnx: imported, then the passes)
  std::string passes, stopAfter, target;
  std::vector<std::string> inputShapes; // .onnx: pin dynamic dims
  std::vector<std::string> binds;       // .onnx: inputs made constants
  int64_t inlineLimit = -2;             // -2: all data for .graph, 16 elements for .onnx
  bool printAfterAll = false, splitInputFile = false, listPasses = false;
};
struct DemoArgs {
  std::string root; // the repository root (models/, configs/)
};

struct TuneArgs { // `npuc tune` (tools/cli/Tune.cpp, tune/Tuner.h)
  std::string model, target, log, plot;
  std::vector<std::string> inputShapes, binds;
  int trials = 0;
  double timeBudget = 0; // seconds; 0: none
  int jobs = 0;          // 0: the hardware's concurrency
  uint64_t seed = 0;
};
/// Tunes a model's NPU kernels; records go to (and resume from) a.log; prints the per-task table
/// and a whole-model check on `out`, progress and warnings on `err`.
void cmdTune(const TuneArgs &a, std::ostream &out, std::ostream &err);

struct ExploreArgs {   // `npuc explore` (tools/cli/Explore.cpp, explore/Explore.h)
  std::string sweep;   // the sweep spec (YAML)
  std::string results; // `npuc explore report RESULTS.jsonl`
  std::string outDir;  // default: SPEC's stem + ".explore" beside it; report: the file's dir
  std::vector<std::string> objectives; // report: instead of the header's
  std::vector<int64_t> roofline;       // report: points to chart per layer (simulated again)
  int jobs = 1;
  int tuneTrials = -1; // >= 0: instead of the spec's tune_trials
  bool dryRun = false, noPlots = false;
};
/// Runs a sweep (resuming its results file) and writes its report; prints progress on `err` and
/// the summary on `out`.
void cmdExplore(const ExploreArgs &a, std::ostream &out, std::ostream &err);
/// `npuc explore report`: the tables and plots again from a results file, simulating nothing.
void cmdExploreReport(const ExploreArgs &a, std::ostream &out);

struct CosimArgs { // `npuc cosim` (tools/cli/Cosim.cpp): simulator vs RTL core
  std::string input, target, wave;
  std::vector<std::string> dramInit;   // FILE@ADDR
  std::vector<std::string> dramFaults; // ADDR:MASK, flips bits of the RTL's DRAM reads
  int64_t dramBytes = 0, maxCycles = 0;
  double cycleTolerance = 0.02;
};
/// Returns false when RTL and simulator disagree (data, or cycles beyond the tolerance).
bool cmdCosim(const CosimArgs &a, std::ostream &out);

void cmdCompile(const CompileArgs &a, std::ostream &out, std::ostream &err);
/// On an internal error during `npuc compile`: writes the failing group (or segment; without
/// one, refers to the whole model) as graph text, a copy of the target and rerun.sh into a new
/// directory under $TMPDIR or /tmp, and prints the command (CrashRepro.cpp).
CrashHandler compileCrashHandler(const CompileArgs &a);
/// --target gpu: lowers every group to NVPTX and writes one PTX module (cpu_fallback/Gpu.h).
void cmdCompileGpu(const CompileArgs &a, std::ostream &out);
void cmdRun(const RunArgs &a, std::ostream &out);
void cmdRef(const RefArgs &a, std::ostream &out);
void cmdDisasm(const std::string &package, std::ostream &out);
void cmdInspect(const InspectArgs &a, std::ostream &out);
void cmdAsm(const AsmArgs &a, std::ostream &out);
void cmdSim(const SimArgs &a, std::ostream &out);
/// Disassembles a program binary (`npuc asm` output) against a target: `npuc asm` of the text
/// gives the same bytes back.
void cmdDisasmProgram(const std::string &binary, const std::string &target, std::ostream &out);
/// `npuc opt`: runs a TIR pass pipeline on a .tir file and prints the result (tools/cli/Opt.cpp).
/// Returns false when a chunk of a --split-input-file run failed (its error went to `err`).
bool cmdOpt(const OptArgs &a, std::ostream &out, std::ostream &err);
/// `npuc graph-opt`: runs graph passes on graph text or an imported ONNX model and prints the
/// graph text (tools/cli/GraphOpt.cpp). Returns false when a chunk of a --split-input-file run
/// failed (its error went to `err`).
bool cmdGraphOpt(const GraphOptArgs &a, std::ostream &out, std::ostream &err);
/// Returns false when the NPU result disagrees with the reference beyond tolerance.
bool cmdDemo(const DemoArgs &a, std::ostream &out);

} // namespace npuc::cli
