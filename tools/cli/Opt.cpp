// Opt.cpp - `npuc opt FILE.tir --passes=a,b,c`: runs a TIR pass pipeline on a text file and
// prints the result, the way `opt`/`mlir-opt` drive LLVM's and MLIR's passes in lit tests.
//
// With --split-input-file the file is cut at lines `// -----` and each chunk is handled on its
// own (line numbers in messages stay those of the whole file); the outputs are joined by the
// same marker. A chunk that fails prints `npuc: error: MESSAGE` on stderr and the others still
// run, so one file can hold several expected-error cases; the command then fails.
#include "npu/isel/Passes.h"
#include "support/Error.h"
#include "tir/Parser.h"
#include "tir/PassManager.h"
#include "tir/Printer.h"
#include "tir/Verify.h"
#include "tools/cli/Commands.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

namespace npuc::cli {
namespace {

// Every pass `--passes` can name: the core's, then instruction selection's.
tir::PassRegistry allPasses() {
  tir::PassRegistry r;
  tir::registerCorePasses(r);
  tir::registerIselPasses(r);
  return r;
}

void listPasses(std::ostream &out) {
  tir::PassRegistry passes = allPasses();
  for (const tir::PassInfo &p : passes.passes()) {
    out << fmt::format("{:<16} {}\n", p.name, p.summary);
    for (const tir::PassOption &o : p.options)
      out << fmt::format("    {}={:<8} {}\n", o.name, o.defaultValue, o.help);
  }
}

} // namespace

std::vector<TextChunk> splitChunks(const std::string &text, bool split) {
  if (!split)
    return {{text, 1}};
  std::vector<TextChunk> out{{"", 1}};
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.rfind("// -----", 0) == 0) {
      out.push_back({"", n + 1});
      continue;
    }
    out.back().text += line + "\n";
  }
  return out;
}

bool forEachChunk(const std::string &text, bool split, std::ostream &out, std::ostream &err,
                  const std::function<void(const TextChunk &)> &each) {
  bool ok = true;
  std::vector<TextChunk> chunks = splitChunks(text, split);
  for (size_t c = 0; c < chunks.size(); ++c) {
    if (c > 0)
      out << "// -----\n";
    try {
      each(chunks[c]);
    } catch (const npuc::Error &e) {
      if (!split)
        throw;
      out.flush(); // keep the order of outputs and messages when both go to one pipe
      err << "npuc: error: " << e.what() << "\n";
      ok = false;
    }
  }
  out.flush();
  return ok;
}

bool cmdOpt(const OptArgs &a, std::ostream &out, std::ostream &err) {
  if (a.listPasses) {
    listPasses(out);
    return true;
  }
  if (a.file.empty())
    npuc::fail("opt: no input file (or --list-passes)");
  std::ifstream in(a.file);
  if (!in)
    npuc::fail("{}: cannot read the file", a.file);
  std::stringstream ss;
  ss << in.rdbuf();
  tir::PassManagerOptions pmo;
  pmo.printAfterAll = a.printAfterAll;
  pmo.stopAfter = a.stopAfter;
  std::vector<tir::PipelineEntry> pipeline = a.passes.empty()
                                                 ? std::vector<tir::PipelineEntry>{}
                                                 : tir::parsePipeline(allPasses(), a.passes);
  // One context for every function of the file: each target loads once, Z3 answers are shared.
  tir::PassContext ctx;
  tir::PassManager pm(pipeline, ctx, pmo);

  const bool ok = forEachChunk(ss.str(), a.splitInputFile, out, err, [&](const TextChunk &c) {
    for (const tir::PrimFunc &f : tir::parseFuncs(c.text, {a.file, c.firstLine})) {
      std::vector<std::string> problems = tir::verifyErrors(f);
      if (!problems.empty())
        npuc::fail("{}: function '{}' is malformed: {}", a.file, f.name, problems.front());
      out << tir::toText(pm.run(f, &out));
    }
  });
  if (a.timePasses) {
    err << "=== pass execution timing ===\n";
    for (const tir::PassTiming &t : pm.timings())
      err << fmt::format("{:>10.3f} ms  {}\n", t.ms, t.pass);
  }
  return ok;
}

} // namespace npuc::cli
