// PassTable.cpp - THE list of graph passes (see PassManager.h), in the order the compile driver
// runs them (tools/driver/Compiler.cpp). Adding a pass: its file in graph/, one entry here, a lit
// test in tests/lit/graph/.
#include "graph/ChannelsLast.h"
#include "graph/LowerActivations.h"
#include "graph/PassManager.h"
#include "graph/SinkScale.h"
#include "graph/Text.h"
#include "graph/WindowTo2d.h"
#include "support/Error.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace npuc::graph {
namespace {

void requireUngrouped(const Graph &g, const char *pass) {
  if (!g.groups.empty())
    npuc::fail("pass '{}' rewrites nodes, which would leave the fused groups stale: run it before "
               "'fuse'",
               pass);
}

// Maximal runs of consecutive NPU groups: the segments the NPU compiler gets (driver's
// splitSegments), where intermediates may stay on chip.
std::vector<std::vector<int>> npuRuns(const Graph &g) {
  std::vector<std::vector<int>> runs;
  bool open = false;
  for (const FusedGroup &grp : g.groups) {
    bool npu = grp.placement == Placement::Npu;
    if (npu && !open)
      runs.emplace_back();
    if (npu)
      runs.back().push_back(grp.id);
    open = npu;
  }
  return runs;
}

void residency(Graph &g, const PassOptions &o, PassContext &ctx) {
  const PassInfo &p = *findPass("residency");
  int64_t capacity = passOptionInt(p, o, "capacity");
  int64_t elemBytes = passOptionInt(p, o, "elem-bytes");
  if (capacity <= 0 || elemBytes <= 0)
    npuc::fail("pass 'residency': capacity and elem-bytes must be positive");
  if (g.groups.empty())
    npuc::fail("pass 'residency' needs fused groups placed on the NPU: run 'fuse' and 'place' "
               "first, or give groups in the text");
  if (!ctx.report)
    return;
  std::vector<std::vector<int>> runs = npuRuns(g);
  if (runs.empty())
    *ctx.report << "// residency: no group is placed on the NPU\n";
  for (const std::vector<int> &run : runs) {
    std::vector<ResidentTensor> rs = findResidentTensors(g, run, capacity, elemBytes);
    *ctx.report << fmt::format("// residency of groups [{}] in {} bytes: {} tensor(s)\n",
                               fmt::join(run, ", "), capacity, rs.size());
    for (const ResidentTensor &r : rs)
      *ctx.report << fmt::format("//   {} ({} bytes): group {} -> [{}], saves {} DRAM bytes\n",
                                 valueRefText(g.value(r.value).name), r.bytes, r.producer,
                                 fmt::join(r.consumers, ", "), r.dramBytesSaved);
  }
}

void placeGroups(Graph &g, const PassOptions &o, PassContext &ctx) {
  if (!ctx.reject)
    npuc::fail("pass 'place' needs a target (--target FILE.yaml): the NPU backend decides what "
               "it runs");
  if (g.groups.empty())
    npuc::fail("pass 'place' needs fused groups: run 'fuse' first");
  bool useCosts = passOptionInt(*findPass("place"), o, "costs") != 0;
  place(g, ctx.reject, useCosts ? ctx.costs : nullptr);
}

} // namespace

const std::vector<PassInfo> &passTable() {
  static const std::vector<PassInfo> table = {
      {"simplify",
       "removes Identity/Dropout/zero Pad, folds constant nodes, simplifies layout ops, DCE",
       {},
       [](Graph &g, const PassOptions &, PassContext &) {
         requireUngrouped(g, "simplify");
         simplify(g);
       }},
      {"layout-simplify",
       "collapses reshape chains, composes Transpose pairs, drops identity layout ops",
       {},
       [](Graph &g, const PassOptions &, PassContext &) {
         requireUngrouped(g, "layout-simplify");
         simplifyLayoutOps(g);
       }},
      {"cse",
       "merges equal constants and nodes with the same op, attributes and inputs",
       {},
       [](Graph &g, const PassOptions &, PassContext &) {
         requireUngrouped(g, "cse");
         eliminateCommonSubexpressions(g);
       }},
      {"fold-bn",
       "folds BatchNormalization into the conv before it, else into Mul + Add",
       {},
       [](Graph &g, const PassOptions &, PassContext &) {
         requireUngrouped(g, "fold-bn");
         foldBatchNorm(g);
       }},
      {"window-to-2d",
       "rewrites 1-D Conv/MaxPool/AveragePool/GlobalAveragePool as 2-D ones over a unit height",
       {},
       [](Graph &g, const PassOptions &, PassContext &) {
         requireUngrouped(g, "window-to-2d");
         windowOpsTo2d(g);
       }},
      {"lower-activations",
       "rewrites HardSigmoid/HardSwish as Mul, Add and Clip, Pow(x, 2) as Mul(x, x), and a Where "
       "with a constant condition and branch as Max/Min with constant bounds",
       {},
       [](Graph &g, const PassOptions &, PassContext &) {
         requireUngrouped(g, "lower-activations");
         lowerActivations(g);
       }},
      {"sink-scale",
       "moves a scalar scale of a MatMul operand onto the MatMul's product",
       {},
       [](Graph &g, const PassOptions &, PassContext &) {
         requireUngrouped(g, "sink-scale");
         sinkScalesPastMatMul(g);
       }},
      {"channels-last-3d",
       "rewrites channels-last 4-D regions (LayerNorm, Linear after a Permute) over [N,H*W,C]",
       {},
       [](Graph &g, const PassOptions &, PassContext &) {
         requireUngrouped(g, "channels-last-3d");
         channelsLastTo3d(g);
       }},
      {"infer-shapes",
       "recomputes every live node's output shapes",
       {},
       [](Graph &g, const PassOptions &, PassContext &) { inferShapes(g); }},
      {"fuse",
       "groups nodes by operator class through the post-dominator tree (with --target: only "
       "merges that keep what the NPU runs)",
       {},
       [](Graph &g, const PassOptions &, PassContext &ctx) { fuseOps(g, ctx.fusionFilter); }},
      {"place",
       "puts each group on the NPU or the CPU (needs --target)",
       {{"costs", "1", "move NPU runs between CPU groups to the CPU when the cost model says so"}},
       placeGroups},
      {"residency",
       "reports the intermediates that could stay in L1 between consecutive NPU groups",
       {{"capacity", "1048576", "bytes of the on-chip level"},
        {"elem-bytes", "2", "bytes per tensor element on chip"}},
       residency},
  };
  return table;
}

} // namespace npuc::graph
