// npuc.cpp - the `npuc` command-line driver (CLI11): argument parsing and error reporting only.
//
// The subcommands live in tools/cli/ as plain functions. Every failure - npuc::Error from any
// component, a CLI parse error, or any other std::exception as a last resort - is printed as
// `npuc: error: <message>` on stderr with exit status 1; commands remove their own outputs on
// failure, so an error never leaves partial results behind.
#include "npu/pipeline/Phase.h"
#include "npuc/thread_pool.h"
#include "support/CrashContext.h"
#include "support/Error.h"
#include "tools/cli/Commands.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <functional>
#include <iostream>
#include <memory>
#include <string>

#ifndef NPUC_SOURCE_DIR
#define NPUC_SOURCE_DIR "."
#endif

namespace {

int reportError(const std::string &msg) {
  std::cerr << "npuc: error: " << msg << "\n";
  return 1;
}

using namespace npuc::cli;

// Every thread or job count option: the bound packages are checked against too.
CLI::Range threadRange() {
  return CLI::Range(1, npuc::rt::ThreadPool::kMaxThreads);
}

// One subcommand: its options, registered on the application, and what runs when the command
// line names it (the exit status; npuc::Error propagates to main's report).
struct Command {
  CLI::App *sub = nullptr;
  std::function<int()> run;
};

/// `npuc disasm`'s arguments (the other commands' live in tools/cli/Commands.h).
struct DisasmArgs {
  std::string package, target;
};

Command addCompile(CLI::App &app, const std::vector<std::string> &commandLine) {
  auto a = std::make_shared<CompileArgs>();
  a->commandLine = commandLine;
  auto *sub = app.add_subcommand("compile", "compile an ONNX model into a .npub package");
  sub->add_option("model", a->model, "ONNX model")->required();
  sub->add_option("--target", a->target,
                  "target description YAML, or 'cpu' (host CPU) or 'gpu' (NVPTX)")
      ->required();
  sub->add_option("-o,--output", a->output, "output package (.npub)")->required();
  sub->add_option("--input-shape", a->inputShapes, "pin an input's shape: NAME=1,3,224,224");
  sub->add_option("--bind", a->binds,
                  "make an input a constant before import: NAME=FILE.npy (its dtype and shape "
                  "must match the input; for operands that set shapes)");
  sub->add_flag("--no-double-buffer", a->noDoubleBuffer, "single-buffer every tile");
  sub->add_flag("--no-prefetch", a->noPrefetch,
                "every group's on-chip buffers at the bottom (no weight prefetch across groups)");
  sub->add_flag("--no-bank-aware", a->noBankAware,
                "keep the bump allocator's on-chip addresses (no bank-conflict-aware placement)");
  sub->add_flag("--no-residency", a->noResidency,
                "every intermediate tensor through DRAM (none stays in L1 between groups)");
  sub->add_flag("--no-batch-split", a->noBatchSplit,
                "batch > 1: every group runs on the whole batch (no run is executed sub-batch by "
                "sub-batch to keep its intermediates in L1)");
  sub->add_flag("--no-batch-weight-reuse", a->noBatchWeightReuse,
                "batch > 1: tensor-unit kernels reload every weight block per image (no image "
                "streams through a weight block kept on chip)");
  sub->add_flag("--no-depth-first", a->noDepthFirst,
                "every group runs on its whole tensors (no chain of convolutions, pooling "
                "and elementwise groups runs band by band of output rows to keep its "
                "intermediates in L1)");
  sub->add_flag("--no-fused-attention", a->noFusedAttention,
                "attention runs as three groups (the scores' product, Softmax, the second "
                "product) instead of one kernel that keeps the scores on chip");
  sub->add_option("--depth-first-rows", a->depthFirstRows,
                  "run every chain of row-local groups depth-first in bands of this many "
                  "output rows, whatever the simulation finds (0, the default: chosen by cost)")
      ->check(CLI::NonNegativeNumber);
  sub->add_flag("--batch-split-dram-first", a->batchSplitDramFirst,
                "batch > 1: split a run that saves DRAM traffic even when the simulation finds it "
                "slower (by default a split never costs cycles)");
  sub->add_flag("--no-native-code", a->noNativeCode,
                "leave the CPU groups' machine code out of the package (npuc run compiles them "
                "with LLVM, then keeps the code in its code cache; for packages meant for "
                "another kind of CPU)");
  sub->add_flag("--segment-per-group", a->segmentPerGroup,
                "every NPU group a segment of its own: every value crosses the host, so that "
                "`run --compare-ref` compares each NPU group (same numerics, more cycles)");
  sub->add_option("--emit", a->emit,
                  "package (default), obj or so (--target cpu: ahead-of-time), ptx (--target gpu)");
  sub->add_option("--threads", a->threads, "CPU threads for parallel loops (default 1)")
      ->check(threadRange());
  sub->add_option("--tiling", a->tiling, "tile choice: auto (cost model) or naive (ablation)");
  sub->add_option("--schedule", a->schedule,
                  "FILE.json: lower each NPU group whose key the file lists with that schedule "
                  "(npu/schedule/Schedule.h)");
  sub->add_option("--tuning-log", a->tuningLog,
                  "FILE.jsonl: `npuc tune` records; each NPU group whose key they list lowers the "
                  "key's best point where it fits (docs/TUNING.md)");
  sub->add_option("--emit-schedule", a->emitSchedule,
                  "FILE.json: write the schedule every NPU group was lowered with");
  sub->add_option("--calibrate", a->calibrate,
                  "int8 targets: the calibration set whose activations set the int8 scales, "
                  ".npy files (one sample, or a stack of N) or directories of them; a model of "
                  "several inputs takes a directory per sample with one INPUT.npy per input "
                  "(repeatable, or a comma list; default: one fixed-seed standard-normal input; "
                  "docs/QUANTISATION.md)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->delimiter(',');
  sub->add_option("--calibration-method", a->calibrationMethod,
                  "int8 targets: how each activation's clipping threshold is chosen: max (the "
                  "default), percentile[:Q] (99.99), entropy (least KL divergence) or mse "
                  "(least squared error)");
  sub->add_option("--int8-accuracy", a->int8Accuracy,
                  "int8 targets: keep the layers whose int8 error costs the output the most in "
                  "fp32 on the CPU until the output's cosine against fp32 reaches this on the "
                  "calibration set (e.g. 0.995; npuc inspect names them and why; "
                  "docs/QUANTISATION.md)");
  sub->add_option(
      "--print-after", a->printAfter,
      "print each NPU segment's plan after PHASE (repeatable, or a comma list; phases: " +
          npuc::npu::phaseNames() + ")");
  sub->add_flag("--print-after-all", a->printAfterAll,
                "print each NPU segment's plan after every phase");
  sub->add_option("--stop-after", a->stopAfter,
                  "stop each NPU segment's compilation after PHASE (prints, writes no package)");
  sub->add_flag("--time-phases", a->timePhases,
                "print the wall time of each segment-pipeline phase, summed over segments, to "
                "stderr");
  sub->add_flag("--no-verify-phases", a->noVerifyPhases,
                "skip the checks of the segment plan's invariants between the phases");
  // Tests of the crash reproducer only (as clang's `#pragma clang __debug crash`): not listed.
  sub->add_option("--debug-crash-at", a->debugCrashAt)->group("");
  return {sub, [a] {
            cmdCompile(*a, std::cout, std::cerr);
            return 0;
          }};
}

Command addTune(CLI::App &app) {
  auto a = std::make_shared<TuneArgs>();
  auto *sub = app.add_subcommand("tune", "auto-schedule a model's NPU kernels on the simulator "
                                         "(docs/TUNING.md)");
  sub->add_option("model", a->model, "ONNX model")->required();
  sub->add_option("--target", a->target, "target description YAML")->required();
  sub->add_option("--trials", a->trials,
                  "measured candidates in all (the log's included: a resumed run goes on to N)")
      ->required();
  sub->add_option("--log", a->log,
                  "tuning records (JSON lines), read to resume and appended to as measured")
      ->required();
  sub->add_option("--time-budget", a->timeBudget, "stop after this many seconds");
  sub->add_option("--jobs", a->jobs,
                  "candidates measured in parallel (default: the hardware's concurrency)")
      ->check(threadRange());
  sub->add_option("--seed", a->seed, "seed of the search's random choices (default 0)");
  sub->add_option("--plot", a->plot,
                  "FILE.png or FILE.svg: best estimated end-to-end cycles against trials");
  sub->add_option("--input-shape", a->inputShapes, "pin an input's shape: NAME=1,3,224,224");
  sub->add_option("--bind", a->binds,
                  "make an input a constant before import: NAME=FILE.npy (its dtype and shape "
                  "must match the input; for operands that set shapes)");
  return {sub, [a] {
            cmdTune(*a, std::cout, std::cerr);
            return 0;
          }};
}

Command addRun(CLI::App &app) {
  auto a = std::make_shared<RunArgs>();
  auto *sub = app.add_subcommand("run", "run a compiled package");
  sub->add_option("package", a->package, ".npub package")->required();
  sub->add_option("--input", a->inputs, "an input: NAME=FILE.npy");
  sub->add_option("--output-dir", a->outputDir, "where <output>.npy files go")->required();
  sub->add_option("--report", a->report, "write the JSON report here");
  sub->add_option("--trace", a->trace, "write a Chrome trace here");
  sub->add_option("--threads", a->threads, "CPU threads (default: the package's)")
      ->check(threadRange());
  sub->add_option("--compare-ref", a->compareRef,
                  "the ONNX model the package was compiled from: print (and add to --report) "
                  "each value held on the host against npuc ref's");
  sub->add_flag("--no-native-code", a->noNativeCode,
                "do not run the package's (or the code cache's) machine code for its CPU groups: "
                "compile them with LLVM (a package from a source you do not trust, or to "
                "compare)");
  return {sub, [a] {
            cmdRun(*a, std::cout);
            return 0;
          }};
}

Command addRef(CLI::App &app) {
  auto a = std::make_shared<RefArgs>();
  auto *sub = app.add_subcommand("ref", "run the fp32 reference executor on an ONNX model");
  sub->add_option("model", a->model, "ONNX model")->required();
  sub->add_option("--input", a->inputs, "an input: NAME=FILE.npy");
  sub->add_option("--output-dir", a->outputDir, "where <output>.npy files go")->required();
  sub->add_option("--input-shape", a->inputShapes, "pin an input's shape: NAME=1,3,224,224");
  sub->add_option("--bind", a->binds,
                  "make an input a constant before import: NAME=FILE.npy (its dtype and shape "
                  "must match the input; for operands that set shapes)");
  return {sub, [a] {
            cmdRef(*a, std::cout);
            return 0;
          }};
}

Command addDisasm(CLI::App &app) {
  auto a = std::make_shared<DisasmArgs>();
  auto *sub = app.add_subcommand("disasm", "disassemble a package's NPU programs");
  sub->add_option("package", a->package, ".npub package, or a program binary (.bin) with --target")
      ->required();
  sub->add_option("--target", a->target, "target YAML: disassemble a program binary");
  return {sub, [a] {
            a->target.empty() ? cmdDisasm(a->package, std::cout)
                              : cmdDisasmProgram(a->package, a->target, std::cout);
            return 0;
          }};
}

Command addInspect(CLI::App &app) {
  auto a = std::make_shared<InspectArgs>();
  auto *sub = app.add_subcommand("inspect", "show a package's partition, tiling and instructions");
  sub->add_option("package", a->package, ".npub package")->required();
  sub->add_flag("--tir", a->tir, "print each NPU group's tiled TIR");
  sub->add_flag("--loops", a->loops,
                "per group: instructions emitted from loop analysis of its loop nest, and what "
                "stays scalar");
  return {sub, [a] {
            cmdInspect(*a, std::cout);
            return 0;
          }};
}

Command addAsm(CLI::App &app) {
  auto a = std::make_shared<AsmArgs>();
  auto *sub = app.add_subcommand("asm", "assemble a hand-written NPU program");
  sub->add_option("program", a->program, "assembly source (.s)")->required();
  sub->add_option("--target", a->target, "target description YAML")->required();
  sub->add_option("-o,--output", a->output, "binary output")->required();
  return {sub, [a] {
            cmdAsm(*a, std::cout);
            return 0;
          }};
}

Command addSim(CLI::App &app) {
  auto a = std::make_shared<SimArgs>();
  auto *sub = app.add_subcommand("sim", "simulate a hand-written program (.s or .bin)");
  sub->add_option("program", a->program, "assembly (.s) or binary (.bin)")->required();
  sub->add_option("--target", a->target, "target description YAML")->required();
  sub->add_option("--report", a->report, "write the JSON report here");
  sub->add_option("--trace", a->trace, "write a Chrome trace here");
  sub->add_option("--dram-init", a->dramInit, "load FILE at DRAM byte address: FILE@ADDR");
  sub->add_option("--dump", a->dumps,
                  "after the run, write REGION=FILE.npy (a .region) or DRAM bytes ADDR:BYTES=FILE");
  sub->add_flag("--no-check", a->noCheck, "skip hazard checking (speed measurements only)");
  sub->add_flag("--timing-only", a->timingOnly, "no data: cycles only (same count as functional)");
  sub->add_option("--dram-bytes", a->dramBytes, "DRAM image size (default: target's, <= 64 MiB)");
  sub->add_option("--max-work", a->maxWork,
                  "functional runs: the most element operations (DMA/vector elements, matmul "
                  "MACs) the program may take in all (default 2^40)")
      ->check(CLI::PositiveNumber);
  return {sub, [a] {
            cmdSim(*a, std::cout);
            return 0;
          }};
}

Command addDemo(CLI::App &app) {
  auto a = std::make_shared<DemoArgs>();
  a->root = NPUC_SOURCE_DIR;
  auto *sub = app.add_subcommand("demo", "compile, run and check the bundled TinyCNN");
  sub->add_option("--root", a->root, "repository root holding models/ and configs/");
  return {sub, [a] {
            return cmdDemo(*a, std::cout) ? 0
                                          : reportError("demo: results differ from the reference");
          }};
}

Command addOpt(CLI::App &app) {
  auto a = std::make_shared<OptArgs>();
  auto *sub = app.add_subcommand("opt", "run TIR passes on a .tir file and print the result");
  sub->add_option("file", a->file, "TIR text (.tir)");
  sub->add_option("--passes", a->passes, "pipeline: a,b{option=value},c (see --list-passes)");
  sub->add_flag("--print-after-all", a->printAfterAll, "print the IR after every pass");
  sub->add_option("--stop-after", a->stopAfter, "stop after the named pass");
  sub->add_flag("--time-passes", a->timePasses, "report each pass's time on stderr");
  sub->add_flag("--split-input-file", a->splitInputFile, "handle `// -----` chunks separately");
  sub->add_flag("--list-passes", a->listPasses, "list the passes and their options");
  return {sub, [a] { return cmdOpt(*a, std::cout, std::cerr) ? 0 : 1; }};
}

Command addGraphOpt(CLI::App &app) {
  auto a = std::make_shared<GraphOptArgs>();
  auto *sub = app.add_subcommand(
      "graph-opt", "run graph passes on graph text (.graph) or an ONNX model and print the graph");
  sub->add_option("file", a->file, "graph text (.graph), or an ONNX model (.onnx) to import");
  sub->add_option("--passes", a->passes, "pipeline: a,b{option=value},c (see --list-passes)");
  sub->add_option("--target", a->target,
                  "target YAML: fusion keeps what its NPU runs; placement asks its backend");
  sub->add_option("--input-shape", a->inputShapes, "ONNX: pin an input's shape: NAME=1,3,8,8");
  sub->add_option(
      "--bind", a->binds,
      "ONNX: make an input a constant before import: NAME=FILE.npy (its dtype and shape "
      "must match the input; for operands that set shapes)");
  sub->add_option("--inline-limit", a->inlineLimit,
                  "print f32 constants with more elements as random(HASH) (default: all data for "
                  ".graph, 16 for .onnx; -1: all)");
  sub->add_flag("--print-after-all", a->printAfterAll, "print the graph after every pass");
  sub->add_option("--stop-after", a->stopAfter, "stop after the named pass");
  sub->add_flag("--split-input-file", a->splitInputFile, "handle `// -----` chunks separately");
  sub->add_flag("--list-passes", a->listPasses, "list the graph passes and their options");
  return {sub, [a] { return cmdGraphOpt(*a, std::cout, std::cerr) ? 0 : 1; }};
}

Command addExplore(CLI::App &app) {
  auto a = std::make_shared<ExploreArgs>();
  auto *sub = app.add_subcommand(
      "explore", "sweep hardware design points: compile and simulate each, report cycles, "
                 "energy, area and the Pareto front (docs/EXPLORE.md)");
  sub->add_option("sweep", a->sweep, "sweep spec (YAML)");
  sub->add_option("-o,--output", a->outDir,
                  "output directory (default: SWEEP's stem + .explore beside it); a rerun "
                  "resumes its results.jsonl");
  sub->add_option("--jobs", a->jobs, "design points compiled and simulated at once (default 1)")
      ->check(threadRange());
  sub->add_option("--tune-trials", a->tuneTrials,
                  "tune every model at every point for N trials with npuc tune's machinery "
                  "before measuring it (instead of the spec's tune_trials; 0: no tuning)")
      ->check(CLI::Range(0, 1000000));
  sub->add_flag("--dry-run", a->dryRun,
                "list the points the sweep visits and the constraints' verdicts; compile nothing");
  sub->add_flag("--no-plots", a->noPlots, "tables only (gnuplot is not run)");
  auto *rep = sub->add_subcommand(
      "report", "redraw the tables, Pareto front and plots from a results.jsonl (no simulation)");
  rep->add_option("results", a->results, "results.jsonl of a sweep")->required();
  rep->add_option("-o,--output", a->outDir, "where the tables and plots go (default: beside it)");
  rep->add_option("--objectives", a->objectives,
                  "objectives of the front, instead of the sweep's (a comma list)")
      ->delimiter(',');
  rep->add_flag("--no-plots", a->noPlots, "tables only (gnuplot is not run)");
  rep->add_option("--roofline", a->roofline,
                  "INDEX: also chart that point's layers against its roofline "
                  "(roofline-pINDEX.png/.svg; compiles and simulates that point again; "
                  "repeatable)");
  return {sub, [a, rep] {
            if (rep->parsed()) {
              cmdExploreReport(*a, std::cout);
              return 0;
            }
            if (a->sweep.empty())
              throw npuc::Error("explore: give a sweep spec (npuc explore SWEEP.yaml) or "
                                "`npuc explore report RESULTS.jsonl`");
            cmdExplore(*a, std::cout, std::cerr);
            return 0;
          }};
}

Command addCosim(CLI::App &app) {
  auto a = std::make_shared<CosimArgs>();
  auto *sub = app.add_subcommand("cosim", "run a program or package on the simulator and the RTL "
                                          "core and compare data and cycles");
  sub->add_option("input", a->input, "program (.s/.bin) or package (.npub)")->required();
  sub->add_option("--target", a->target, "target YAML (the one the RTL was built for)");
  sub->add_option("--wave", a->wave, "write the RTL waveform (VCD) here");
  sub->add_option("--dram-init", a->dramInit, "load FILE at DRAM byte address: FILE@ADDR");
  sub->add_option("--dram-bytes", a->dramBytes, "DRAM image size (default 1 MiB)");
  sub->add_option("--max-cycles", a->maxCycles, "stop the RTL after this many cycles");
  sub->add_option("--dram-fault", a->dramFaults,
                  "inject a fault: the RTL reads DRAM byte ADDR XOR MASK (ADDR:MASK), to check "
                  "that the comparison catches it");
  sub->add_option("--cycle-tolerance", a->cycleTolerance,
                  "allowed relative total-cycle error (default 0.02)");
  return {sub, [a] {
            return cmdCosim(*a, std::cout) ? 0 : reportError("cosim: RTL and simulator disagree");
          }};
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"npuc - compiler, runtime and simulator for deep-learning accelerators"};
  app.require_subcommand(1);
  npuc::installFatalSignalHandlers();
  const std::vector<std::string> commandLine(argv, argv + argc);
  const Command commands[] = {addCompile(app, commandLine),
                              addTune(app),
                              addRun(app),
                              addRef(app),
                              addDisasm(app),
                              addInspect(app),
                              addAsm(app),
                              addSim(app),
                              addDemo(app),
                              addOpt(app),
                              addGraphOpt(app),
                              addCosim(app),
                              addExplore(app)};

  // CLI11 reports a word that names no subcommand as "A subcommand is required"; say which word.
  std::string names;
  bool known = false;
  for (const Command &c : commands) {
    names += (names.empty() ? "" : ", ") + c.sub->get_name();
    known = known || (argc >= 2 && c.sub->get_name() == argv[1]);
  }
  if (argc < 2)
    return reportError("a subcommand is required: " + names + " (npuc --help)");
  if (!known && argv[1][0] != '-')
    return reportError(fmt::format("unknown subcommand '{}'; the subcommands are: {} (npuc --help)",
                                   argv[1], names));

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp &e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp &e) {
    return app.exit(e);
  } catch (const CLI::ParseError &e) {
    return reportError(e.what());
  }

  try {
    for (const Command &c : commands)
      if (*c.sub)
        return c.run();
  } catch (const npuc::Error &e) {
    return reportError(e.what());
  } catch (const std::exception &e) {
    // Scopes that caught it first have printed where it happened (support/CrashContext.h).
    return reportError(std::string("internal error: ") + e.what());
  }
  return 0;
}
