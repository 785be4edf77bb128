// npuc.cpp - the `npuc` command-line driver (CLI11): argument parsing and error reporting only.
//
// The subcommands live in tools/cli/ as plain functions. Every failure - npuc::Error from any
// component, a CLI parse error, or any other std::exception as a last resort - is printed as
// `npuc: error: <message>` on stderr with exit status 1; commands remove their own outputs on
// failure, so an error never leaves partial results behind.
#include "npu/pipeline/Phase.h"
#include "support/Error.h"
#include "tools/cli/Commands.h"

#include <CLI/CLI.hpp>

#include <iostream>

#ifndef NPUC_SOURCE_DIR
#define NPUC_SOURCE_DIR "."
#endif

namespace {

int reportError(const std::string &msg) {
  std::cerr << "npuc: error: " << msg << "\n";
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  using namespace npuc::cli;
  CLI::App app{"npuc - compiler, runtime and simulator for deep-learning accelerators"};
  app.require_subcommand(1);

  CompileArgs compile;
  auto *c = app.add_subcommand("compile", "compile an ONNX model into a .npub package");
  c->add_option("model", compile.model, "ONNX model")->required();
  c->add_option("--target", compile.target,
                "target description YAML, or 'cpu' (host CPU) or 'gpu' (NVPTX)")
      ->required();
  c->add_option("-o,--output", compile.output, "output package (.npub)")->required();
  c->add_option("--input-shape", compile.inputShapes, "pin an input's shape: NAME=1,3,224,224");
  c->add_flag("--no-double-buffer", compile.noDoubleBuffer, "single-buffer every tile");
  c->add_flag("--no-prefetch", compile.noPrefetch,
              "every group's on-chip buffers at the bottom (no weight prefetch across groups)");
  c->add_flag("--no-bank-aware", compile.noBankAware,
              "keep the bump allocator's on-chip addresses (no bank-conflict-aware placement)");
  c->add_flag("--no-residency", compile.noResidency,
              "every intermediate tensor through DRAM (none stays in L1 between groups)");
  c->add_flag("--no-batch-split", compile.noBatchSplit,
              "batch > 1: every group runs on the whole batch (no run is executed sub-batch by "
              "sub-batch to keep its intermediates in L1)");
  c->add_flag("--batch-split-dram-first", compile.batchSplitDramFirst,
              "batch > 1: split a run that saves DRAM traffic even when the simulation finds it "
              "slower (by default a split never costs cycles)");
  c->add_option("--emit", compile.emit,
                "package (default), obj or so (--target cpu: ahead-of-time), ptx (--target gpu)");
  c->add_option("--threads", compile.threads, "CPU threads for parallel loops (default 1)");
  c->add_option("--tiling", compile.tiling, "tile choice: auto (cost model) or naive (ablation)");
  c->add_option("--schedule", compile.schedule,
                "FILE.json: lower each NPU group whose key the file lists with that schedule "
                "(npu/schedule/Schedule.h)");
  c->add_option("--tuning-log", compile.tuningLog,
                "FILE.jsonl: `npuc tune` records; each NPU group whose key they list lowers the "
                "key's best point where it fits (docs/TUNING.md)");
  c->add_option("--emit-schedule", compile.emitSchedule,
                "FILE.json: write the schedule every NPU group was lowered with");
  c->add_option("--calibrate", compile.calibrate,
                "int8 targets: FILE.npy input whose activation ranges set the int8 scales "
                "(default: a fixed-seed standard-normal input)");
  c->add_option("--print-after", compile.printAfter,
                "print each NPU segment's plan after PHASE (repeatable, or a comma list; phases: " +
                    npuc::npu::phaseNames() + ")");
  c->add_flag("--print-after-all", compile.printAfterAll,
              "print each NPU segment's plan after every phase");
  c->add_option("--stop-after", compile.stopAfter,
                "stop each NPU segment's compilation after PHASE (prints, writes no package)");
  c->add_flag("--time-phases", compile.timePhases,
              "print the wall time of each segment-pipeline phase, summed over segments, to "
              "stderr");
  c->add_flag("--no-verify-phases", compile.noVerifyPhases,
              "skip the checks of the segment plan's invariants between the phases");

  TuneArgs tuneArgs;
  auto *tu = app.add_subcommand("tune", "auto-schedule a model's NPU kernels on the simulator "
                                        "(docs/TUNING.md)");
  tu->add_option("model", tuneArgs.model, "ONNX model")->required();
  tu->add_option("--target", tuneArgs.target, "target description YAML")->required();
  tu->add_option("--trials", tuneArgs.trials,
                 "measured candidates in all (the log's included: a resumed run goes on to N)")
      ->required();
  tu->add_option("--log", tuneArgs.log,
                 "tuning records (JSON lines), read to resume and appended to as measured")
      ->required();
  tu->add_option("--time-budget", tuneArgs.timeBudget, "stop after this many seconds");
  tu->add_option("--jobs", tuneArgs.jobs,
                 "candidates measured in parallel (default: the hardware's concurrency)");
  tu->add_option("--seed", tuneArgs.seed, "seed of the search's random choices (default 0)");
  tu->add_option("--plot", tuneArgs.plot,
                 "FILE.png or FILE.svg: best estimated end-to-end cycles against trials");
  tu->add_option("--input-shape", tuneArgs.inputShapes, "pin an input's shape: NAME=1,3,224,224");

  RunArgs run;
  auto *r = app.add_subcommand("run", "run a compiled package");
  r->add_option("package", run.package, ".npub package")->required();
  r->add_option("--input", run.inputs, "an input: NAME=FILE.npy");
  r->add_option("--output-dir", run.outputDir, "where <output>.npy files go")->required();
  r->add_option("--report", run.report, "write the JSON report here");
  r->add_option("--trace", run.trace, "write a Chrome trace here");
  r->add_option("--threads", run.threads, "CPU threads (default: the package's)");

  RefArgs ref;
  auto *f = app.add_subcommand("ref", "run the fp32 reference executor on an ONNX model");
  f->add_option("model", ref.model, "ONNX model")->required();
  f->add_option("--input", ref.inputs, "an input: NAME=FILE.npy");
  f->add_option("--output-dir", ref.outputDir, "where <output>.npy files go")->required();
  f->add_option("--input-shape", ref.inputShapes, "pin an input's shape: NAME=1,3,224,224");

  std::string disasmPkg;
  auto *d = app.add_subcommand("disasm", "disassemble a package's NPU programs");
  d->add_option("package", disasmPkg, ".npub package, or a program binary (.bin) with --target")
      ->required();
  std::string disasmTarget;
  d->add_option("--target", disasmTarget, "target YAML: disassemble a program binary");

  InspectArgs inspect;
  auto *i = app.add_subcommand("inspect", "show a package's partition, tiling and instructions");
  i->add_option("package", inspect.package, ".npub package")->required();
  i->add_flag("--tir", inspect.tir, "print each NPU group's tiled TIR");
  i->add_flag("--loops", inspect.loops,
              "per group: instructions emitted from loop analysis of its loop nest, and what "
              "stays scalar");

  AsmArgs asmArgs;
  auto *as = app.add_subcommand("asm", "assemble a hand-written NPU program");
  as->add_option("program", asmArgs.program, "assembly source (.s)")->required();
  as->add_option("--target", asmArgs.target, "target description YAML")->required();
  as->add_option("-o,--output", asmArgs.output, "binary output")->required();

  SimArgs sim;
  auto *s = app.add_subcommand("sim", "simulate a hand-written program (.s or .bin)");
  s->add_option("program", sim.program, "assembly (.s) or binary (.bin)")->required();
  s->add_option("--target", sim.target, "target description YAML")->required();
  s->add_option("--report", sim.report, "write the JSON report here");
  s->add_option("--trace", sim.trace, "write a Chrome trace here");
  s->add_option("--dram-init", sim.dramInit, "load FILE at DRAM byte address: FILE@ADDR");
  s->add_option("--dump", sim.dumps,
                "after the run, write REGION=FILE.npy (a .region) or DRAM bytes ADDR:BYTES=FILE");
  s->add_flag("--no-check", sim.noCheck, "skip hazard checking (speed measurements only)");
  s->add_flag("--timing-only", sim.timingOnly, "no data: cycles only (same count as functional)");
  s->add_option("--dram-bytes", sim.dramBytes, "DRAM image size (default: target's, <= 64 MiB)");

  DemoArgs demo;
  demo.root = NPUC_SOURCE_DIR;
  auto *dm = app.add_subcommand("demo", "compile, run and check the bundled TinyCNN");
  dm->add_option("--root", demo.root, "repository root holding models/ and configs/");

  OptArgs opt;
  auto *o = app.add_subcommand("opt", "run TIR passes on a .tir file and print the result");
  o->add_option("file", opt.file, "TIR text (.tir)");
  o->add_option("--passes", opt.passes, "pipeline: a,b{option=value},c (see --list-passes)");
  o->add_flag("--print-after-all", opt.printAfterAll, "print the IR after every pass");
  o->add_option("--stop-after", opt.stopAfter, "stop after the named pass");
  o->add_flag("--time-passes", opt.timePasses, "report each pass's time on stderr");
  o->add_flag("--split-input-file", opt.splitInputFile, "handle `// -----` chunks separately");
  o->add_flag("--list-passes", opt.listPasses, "list the passes and their options");

  GraphOptArgs gopt;
  auto *go = app.add_subcommand(
      "graph-opt", "run graph passes on graph text (.graph) or an ONNX model and print the graph");
  go->add_option("file", gopt.file, "graph text (.graph), or an ONNX model (.onnx) to import");
  go->add_option("--passes", gopt.passes, "pipeline: a,b{option=value},c (see --list-passes)");
  go->add_option("--target", gopt.target,
                 "target YAML: fusion keeps what its NPU runs; placement asks its backend");
  go->add_option("--input-shape", gopt.inputShapes, "ONNX: pin an input's shape: NAME=1,3,8,8");
  go->add_option("--inline-limit", gopt.inlineLimit,
                 "print f32 constants with more elements as random(HASH) (default: all data for "
                 ".graph, 16 for .onnx; -1: all)");
  go->add_flag("--print-after-all", gopt.printAfterAll, "print the graph after every pass");
  go->add_option("--stop-after", gopt.stopAfter, "stop after the named pass");
  go->add_flag("--split-input-file", gopt.splitInputFile, "handle `// -----` chunks separately");
  go->add_flag("--list-passes", gopt.listPasses, "list the graph passes and their options");

  CosimArgs cosimArgs;
  auto *cs = app.add_subcommand("cosim", "run a program or package on the simulator and the RTL "
                                         "core and compare data and cycles");
  cs->add_option("input", cosimArgs.input, "program (.s/.bin) or package (.npub)")->required();
  cs->add_option("--target", cosimArgs.target, "target YAML (the one the RTL was built for)");
  cs->add_option("--wave", cosimArgs.wave, "write the RTL waveform (VCD) here");
  cs->add_option("--dram-init", cosimArgs.dramInit, "load FILE at DRAM byte address: FILE@ADDR");
  cs->add_option("--dram-bytes", cosimArgs.dramBytes, "DRAM image size (default 1 MiB)");
  cs->add_option("--max-cycles", cosimArgs.maxCycles, "stop the RTL after this many cycles");
  cs->add_option("--dram-fault", cosimArgs.dramFaults,
                 "inject a fault: the RTL reads DRAM byte ADDR XOR MASK (ADDR:MASK), to check "
                 "that the comparison catches it");
  cs->add_option("--cycle-tolerance", cosimArgs.cycleTolerance,
                 "allowed relative total-cycle error (default 0.02)");

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
    if (*c)
      cmdCompile(compile, std::cout, std::cerr);
    else if (*tu)
      cmdTune(tuneArgs, std::cout, std::cerr);
    else if (*r)
      cmdRun(run, std::cout);
    else if (*f)
      cmdRef(ref, std::cout);
    else if (*d)
      disasmTarget.empty() ? cmdDisasm(disasmPkg, std::cout)
                           : cmdDisasmProgram(disasmPkg, disasmTarget, std::cout);
    else if (*i)
      cmdInspect(inspect, std::cout);
    else if (*as)
      cmdAsm(asmArgs, std::cout);
    else if (*s)
      cmdSim(sim, std::cout);
    else if (*o)
      return cmdOpt(opt, std::cout, std::cerr) ? 0 : 1;
    else if (*go)
      return cmdGraphOpt(gopt, std::cout, std::cerr) ? 0 : 1;
    else if (*cs)
      return cmdCosim(cosimArgs, std::cout) ? 0 : reportError("cosim: RTL and simulator disagree");
    else if (*dm)
      return cmdDemo(demo, std::cout) ? 0 : reportError("demo: results differ from the reference");
  } catch (const npuc::Error &e) {
    return reportError(e.what());
  } catch (const std::exception &e) {
    return reportError(std::string("internal error: ") + e.what());
  }
  return 0;
}
