// Compile.cpp - the NPU backend driver: placement queries and segment compilation.
//
// A segment's DRAM image is [activations | constants]: every tensor the segment reads from the
// host or produces gets its own region (views alias their input), then each kernel appends its
// packed weights and constant vectors. Kernels are lowered one group at a time, emitted in
// execution order into one program, and the token pass orders the engines.
#include "npu/Compile.h"

#include "npu/Emit.h"
#include "npu/Kernels.h"
#include "npu/Sync.h"
#include "support/Error.h"
#include "tir/Printer.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

namespace npuc::npu {

namespace {

constexpr int64_t kDramAlign = 64;

Kernel lowerKernel(const GroupPlan &p, const graph::Graph &g, Builder &b, const DramCtx &d,
                   const KernelOptions &o) {
  switch (p.kind) {
  case KernelKind::Matmul:
    return lowerMatmulKernel(p, g, b, d, o);
  case KernelKind::Pool:
    return lowerPoolKernel(p, g, b, d, o);
  case KernelKind::GlobalAvgPool:
    return lowerGlobalPoolKernel(p, g, b, d, o);
  case KernelKind::Eltwise:
    return lowerEltwiseKernel(p, g, b, d, o);
  case KernelKind::View: {
    Kernel k;
    k.body = tir::seq({});
    k.tiling = "view: aliases its input (no data movement)";
    return k;
  }
  }
  return {};
}

// Lowers with the requested buffering; when double buffers do not fit, retries single-buffered
// (and says so in the tiling text) before giving up on the NPU.
Kernel lowerWithFallback(const GroupPlan &p, const graph::Graph &g, const Hw &hw,
                         const DramCtx &d, const KernelOptions &o,
                         const std::function<void()> &undo = [] {}) {
  Builder b(hw);
  Kernel k = lowerKernel(p, g, b, d, o);
  if (k.reject.empty() || !o.doubleBuffer)
    return k;
  undo();
  KernelOptions single = o;
  single.doubleBuffer = false;
  Builder b1(hw);
  Kernel k1 = lowerKernel(p, g, b1, d, single);
  if (k1.reject.empty())
    k1.tiling += " (double buffers did not fit: " + k.reject + ")";
  return k1;
}

} // namespace

std::string npuRejectReason(const graph::Graph &g, const graph::FusedGroup &grp,
                            const isa::Target &t) {
  Hw hw;
  if (std::string why = Hw::derive(t, hw); !why.empty())
    return why;
  GroupPlan p = analyzeGroup(g, grp, hw);
  if (!p.reject.empty())
    return p.reject;
  // Dry-run the kernel's tiling against the target (addresses do not matter here).
  DramCtx d{[](graph::ValueId) { return int64_t(0); },
            [](const std::vector<uint8_t> &) { return int64_t(0); }};
  Kernel k = lowerWithFallback(p, g, hw, d, KernelOptions{});
  return k.reject.empty() ? "" : grp.name + ": " + k.reject;
}

Segment compileSegment(const graph::Graph &g, const std::vector<int> &groupIds,
                       const isa::Target &t, const CompileOptions &opt) {
  Hw hw;
  if (std::string why = Hw::derive(t, hw); !why.empty())
    fail("target '{}': {}", t.name, why);
  Segment seg;
  seg.groups = groupIds;
  std::set<int> inSeg(groupIds.begin(), groupIds.end());
  std::vector<int> groupOf(g.nodes.size(), -1);
  for (const graph::FusedGroup &grp : g.groups)
    for (graph::NodeId n : grp.nodes)
      groupOf[static_cast<size_t>(n)] = grp.id;

  std::vector<GroupPlan> plans;
  for (int gid : groupIds) {
    plans.push_back(analyzeGroup(g, g.groups.at(static_cast<size_t>(gid)), hw));
    NPUC_ASSERT(plans.back().reject.empty(),
                "placement only puts groups the NPU accepts on it: " + plans.back().reject);
  }

  // Activations: inputs from outside the segment, then each group's output (views alias).
  std::map<graph::ValueId, int64_t> addr;
  int64_t top = 0;
  auto place = [&](graph::ValueId v) {
    if (addr.count(v))
      return;
    addr[v] = top;
    top = alignUp(top + numElements(g.value(v).shape) * 2, kDramAlign);
  };
  std::set<graph::ValueId> produced;
  for (size_t i = 0; i < groupIds.size(); ++i) {
    const graph::FusedGroup &grp = g.groups.at(static_cast<size_t>(groupIds[i]));
    for (graph::ValueId v : grp.inputs)
      if (!produced.count(v)) {
        place(v);
        if (std::none_of(seg.inputs.begin(), seg.inputs.end(),
                         [&](const DramTensor &x) { return x.value == v; }))
          seg.inputs.push_back({v, g.value(v).name, 0, g.value(v).shape,
                                isNhwc(g.value(v)) ? DramLayout::NHWC : DramLayout::RowMajor});
      }
    for (graph::ValueId v : grp.outputs) {
      produced.insert(v);
      if (plans[i].kind == KernelKind::View)
        addr[v] = addr.at(plans[i].input);
      else
        place(v);
    }
  }
  for (DramTensor &x : seg.inputs)
    x.addr = addr.at(x.value);
  for (graph::ValueId v : produced) {
    bool usedOutside = g.isGraphOutput(v);
    for (graph::NodeId c : g.consumers(v))
      usedOutside = usedOutside || !inSeg.count(groupOf[static_cast<size_t>(c)]);
    if (usedOutside)
      seg.outputs.push_back({v, g.value(v).name, addr.at(v), g.value(v).shape,
                             isNhwc(g.value(v)) ? DramLayout::NHWC : DramLayout::RowMajor});
  }
  seg.constBase = alignUp(top, kDramAlign);
  DramCtx d{[&](graph::ValueId v) { return addr.at(v); },
            [&](const std::vector<uint8_t> &bytes) {
              int64_t at = seg.constBase + static_cast<int64_t>(seg.constImage.size());
              seg.constImage.insert(seg.constImage.end(), bytes.begin(), bytes.end());
              seg.constImage.resize(static_cast<size_t>(alignUp(
                  static_cast<int64_t>(seg.constImage.size()), kDramAlign)));
              return at;
            }};

  KernelOptions ko{opt.doubleBuffer, opt.naiveTiling};
  const double peak = static_cast<double>(t.tensor.peakMacsPerCycle());
  for (size_t i = 0; i < groupIds.size(); ++i) {
    const graph::FusedGroup &grp = g.groups.at(static_cast<size_t>(groupIds[i]));
    const size_t constMark = seg.constImage.size();
    Kernel k = lowerWithFallback(plans[i], g, hw, d, ko, [&] { seg.constImage.resize(constMark); });
    if (!k.reject.empty())
      fail("{}: {}", grp.name, k.reject); // npuRejectReason ran the same check at placement
    GroupInfo info;
    info.groupId = grp.id;
    info.name = grp.name;
    for (graph::NodeId n : grp.nodes)
      info.ops.push_back(g.node(n).op);
    info.tiling = k.tiling;
    info.tir = tir::toText(k.body);
    info.instrBegin = static_cast<int64_t>(seg.program.instrs.size());
    emitInstructions(t, k.body, grp.name, seg.program);
    info.instrEnd = static_cast<int64_t>(seg.program.instrs.size());
    for (int64_t j = info.instrBegin; j < info.instrEnd; ++j)
      ++info.instrCounts[seg.program.instrs[static_cast<size_t>(j)].desc->mnemonic];
    info.macs = k.macs;
    const double terms[3] = {k.macs / peak, k.dramBytes / t.dram.bytesPerCycle,
                             static_cast<double>(k.vectorElems) / t.vector.lanes};
    static const char *names[3] = {"tensor", "dram", "vector"};
    size_t arg = static_cast<size_t>(std::max_element(terms, terms + 3) - terms);
    info.rooflineCycles = static_cast<int64_t>(std::ceil(terms[arg]));
    info.bound = names[arg];
    seg.groupInfo.push_back(std::move(info));
  }
  insertTokens(t, seg.program);
  seg.dramBytes = seg.constBase + static_cast<int64_t>(seg.constImage.size());
  const isa::MemoryLevel &dram = t.levels.at(static_cast<size_t>(hw.dram));
  if (seg.dramBytes > dram.size)
    fail("target '{}': the model needs {} bytes of DRAM, the target has {}", t.name, seg.dramBytes,
         dram.size);
  return seg;
}

} // namespace npuc::npu
