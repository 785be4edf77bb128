// GraphOpt.cpp - `npuc graph-opt FILE --passes=a,b,c`: runs graph passes on graph text (or on an
// imported ONNX model) and prints the graph text, as `npuc opt` does for TIR (docs/GRAPH.md).
//
// Analyses (residency) print their findings as `//` comment lines before the graph, so that the
// output still parses. With --target, fusion keeps what that NPU runs and placement asks its
// backend, exactly as `npuc compile` does; without, fusion follows operator classes alone and
// placement is refused.
#include "frontend/Onnx.h"
#include "graph/PassManager.h"
#include "graph/Text.h"
#include "isa/Target.h"
#include "support/Error.h"
#include "tools/cli/Commands.h"
#include "tools/driver/Compiler.h"

#include <fmt/format.h>

#include <fstream>
#include <optional>
#include <sstream>

namespace npuc::cli {
namespace {

void listPasses(std::ostream &out) {
  for (const graph::PassInfo &p : graph::passTable()) {
    out << fmt::format("{:<18} {}\n", p.name, p.summary);
    for (const graph::PassOption &o : p.options)
      out << fmt::format("    {}={:<8} {}\n", o.name, o.defaultValue, o.help);
  }
}

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// One graph through the pipeline; its report (analyses) and text go to `out`.
void runOne(graph::Graph &g, const std::vector<graph::PipelineEntry> &pipeline,
            graph::PassContext ctx, const graph::PassManagerOptions &pmo, std::ostream &out) {
  std::ostringstream report;
  ctx.report = &report;
  graph::runPipeline(g, pipeline, ctx, pmo, &out);
  out << report.str() << graph::printGraphText(g, pmo.text);
}

} // namespace

bool cmdGraphOpt(const GraphOptArgs &a, std::ostream &out, std::ostream &err) {
  if (a.listPasses) {
    listPasses(out);
    return true;
  }
  if (a.file.empty())
    npuc::fail("graph-opt: no input file (or --list-passes)");
  bool onnx = endsWith(a.file, ".onnx");
  if (!onnx && !a.inputShapes.empty())
    npuc::fail("graph-opt: --input-shape applies to ONNX models, not to {}", a.file);
  if (!onnx && !a.binds.empty())
    npuc::fail("graph-opt: --bind applies to ONNX models, not to {}", a.file);
  graph::PassManagerOptions pmo;
  pmo.printAfterAll = a.printAfterAll;
  pmo.stopAfter = a.stopAfter;
  pmo.text.inlineLimit = a.inlineLimit != -2 ? a.inlineLimit : onnx ? 16 : -1;
  std::vector<graph::PipelineEntry> pipeline =
      a.passes.empty() ? std::vector<graph::PipelineEntry>{} : graph::parsePipeline(a.passes);

  // The target outlives the callbacks that refer to it.
  std::optional<isa::Target> target;
  std::optional<graph::DeviceCosts> costs;
  graph::PassContext ctx;
  if (!a.target.empty()) {
    target = isa::loadTarget(a.target);
    ctx.fusionFilter = driver::npuFusionFilter(*target);
    ctx.reject = driver::npuReject(*target);
    costs = driver::deviceCosts(*target);
    ctx.costs = &*costs;
  }

  if (onnx) {
    graph::Graph g = frontend::importOnnx(a.file, importOptions(a.inputShapes, a.binds));
    runOne(g, pipeline, ctx, pmo, out);
    return true;
  }
  std::ifstream in(a.file);
  if (!in)
    npuc::fail("{}: cannot read the file", a.file);
  std::stringstream ss;
  ss << in.rdbuf();
  return forEachChunk(ss.str(), a.splitInputFile, out, err, [&](const TextChunk &c) {
    graph::Graph g = graph::parseGraphText(c.text, {a.file, c.firstLine});
    runOne(g, pipeline, ctx, pmo, out);
  });
}

} // namespace npuc::cli
