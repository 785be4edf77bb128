// Placement.cpp - NPU/CPU placement of fused groups, aware of the cost of moving tensors.
//
// Three steps:
//  1. Every group the target can run (the reject callback returns "") goes to the NPU, every
//     other one to the CPU with the callback's reason. View-only groups wait for step 2.
//  2. View-only groups (Reshape, Flatten, Squeeze, Unsqueeze: a free reinterpretation) follow
//     their neighbours: NPU only when the target accepts them and no neighbour runs on the CPU.
//  3. Ping-pong removal by cost. Groups run in g.groups order, and the runtime makes one device
//     segment of each run of consecutive same-device groups. A run of NPU groups that reads a
//     value a CPU group produced and feeds a CPU group costs two device crossings; when its
//     estimated time on the NPU plus the crossings exceeds its time on the CPU (plus the
//     crossings it would still need to NPU groups), the whole run moves to the CPU, and each
//     group records the figures as its reason. Runs are re-examined until nothing moves (moves
//     only go NPU -> CPU, so this ends). Runs that touch only graph inputs/outputs on the host
//     side are left on the NPU: a user asking for an NPU target wants the NPU to run what it
//     can, and a single-op model is not ping-pong.
// The cost model (DeviceCosts in Passes.h) is deliberately simple: for the NPU, the backend's
// own estimate of the kernel that will run the group when the driver supplies one
// (DeviceCosts::npuGroupSeconds: a MatMul the loop-nest kernel runs on the vector unit costs its
// vector work, not tensor-unit peak), else a roofline (MACs, vector elements and compulsory fp16
// DRAM bytes against the target's peaks); a
// throughput for the CPU (MACs and elements per second), and per crossing value a fixed
// synchronisation latency plus its bytes over the host link plus the fp32<->fp16 conversion.
#include "graph/Passes.h"

#include "support/Error.h"

#include <algorithm>
#include <set>

namespace npuc::graph {

bool isViewOnly(const Graph &g, const FusedGroup &grp) {
  for (NodeId n : grp.nodes) {
    const OpKind op = g.node(n).kind;
    if (op != OpKind::Reshape && op != OpKind::Flatten && op != OpKind::Squeeze &&
        op != OpKind::Unsqueeze)
      return false;
  }
  return true;
}

namespace {

struct Placer {
  Graph &g;
  const DeviceCosts &costs;
  std::vector<int> producerGroup;               // by value: -1 for inputs and constants
  std::vector<std::vector<int>> consumerGroups; // by value

  Placer(Graph &graph, const DeviceCosts &c) : g(graph), costs(c) {
    producerGroup.assign(g.values.size(), -1);
    consumerGroups.assign(g.values.size(), {});
    for (const FusedGroup &grp : g.groups) {
      for (NodeId n : grp.nodes)
        for (ValueId o : g.node(n).outputs)
          producerGroup[static_cast<size_t>(o)] = grp.id;
      for (ValueId in : grp.inputs)
        consumerGroups[static_cast<size_t>(in)].push_back(grp.id);
    }
  }

  Placement at(int gid) const { return g.groups[static_cast<size_t>(gid)].placement; }

  double transfer(ValueId v) const {
    double elems = static_cast<double>(numElements(g.value(v).shape));
    return costs.crossingSeconds + elems * 4 / costs.transferBytesPerSecond +
           elems / costs.cpuElemsPerSecond;
  }

  // Moves the run of groups [b, e) to the CPU when that is cheaper and the run sits between CPU
  // groups. Returns whether it moved.
  bool examine(size_t b, size_t e) {
    std::set<int> run;
    for (size_t i = b; i < e; ++i)
      run.insert(static_cast<int>(i));
    bool cpuBefore = false, cpuAfter = false;
    double npu = 0, cpu = 0, npuCross = 0, cpuCross = 0;
    int npuCrossings = 0, cpuCrossings = 0;
    std::set<ValueId> ins, outs;
    for (int gid : run) {
      const FusedGroup &grp = g.groups[static_cast<size_t>(gid)];
      npu += estimateNpuSeconds(g, grp, costs);
      cpu += estimateCpuSeconds(g, grp, costs);
      for (ValueId in : grp.inputs)
        if (!run.count(producerGroup[static_cast<size_t>(in)]))
          ins.insert(in);
      for (ValueId o : grp.outputs) {
        bool external = g.isGraphOutput(o);
        for (int c : consumerGroups[static_cast<size_t>(o)])
          external = external || !run.count(c);
        if (external)
          outs.insert(o);
      }
    }
    for (ValueId v : ins) {
      int p = producerGroup[static_cast<size_t>(v)];
      bool fromNpu = p >= 0 && at(p) == Placement::Npu;
      cpuBefore = cpuBefore || (p >= 0 && at(p) == Placement::Cpu);
      (fromNpu ? cpuCross : npuCross) += transfer(v);
      ++(fromNpu ? cpuCrossings : npuCrossings);
    }
    for (ValueId v : outs) {
      bool toNpu = false, toHost = g.isGraphOutput(v);
      for (int c : consumerGroups[static_cast<size_t>(v)]) {
        toNpu = toNpu || at(c) == Placement::Npu;
        toHost = toHost || at(c) == Placement::Cpu;
        cpuAfter = cpuAfter || at(c) == Placement::Cpu;
      }
      if (toHost) {
        npuCross += transfer(v);
        ++npuCrossings;
      }
      if (toNpu) {
        cpuCross += transfer(v);
        ++cpuCrossings;
      }
    }
    if (!cpuBefore || !cpuAfter || cpu + cpuCross >= npu + npuCross)
      return false;
    std::string why = fmt::format(
        "moved off the NPU by cost, between CPU groups: NPU {:.2f} us + {} device crossings "
        "{:.2f} us > CPU {:.2f} us + {} crossings {:.2f} us",
        npu * 1e6, npuCrossings, npuCross * 1e6, cpu * 1e6, cpuCrossings, cpuCross * 1e6);
    for (int gid : run) {
      FusedGroup &grp = g.groups[static_cast<size_t>(gid)];
      grp.placement = Placement::Cpu;
      grp.cpuReason = why;
    }
    return true;
  }

  void removePingPong() {
    bool moved = true;
    while (moved) {
      moved = false;
      for (size_t b = 0; b < g.groups.size() && !moved;) {
        if (g.groups[b].placement != Placement::Npu) {
          ++b;
          continue;
        }
        size_t e = b;
        while (e < g.groups.size() && g.groups[e].placement == Placement::Npu)
          ++e;
        moved = examine(b, e);
        b = e;
      }
    }
  }
};

} // namespace

int64_t groupMacs(const Graph &g, const FusedGroup &grp) {
  int64_t macs = 0;
  for (NodeId id : grp.nodes) {
    const Node &n = g.node(id);
    if (n.outputs.empty() || n.inputs.size() < 2 || n.inputs[1] == kNoValue)
      continue;
    const Shape &y = g.value(n.outputs[0]).shape;
    const Shape &w = g.value(n.inputs[1]).shape;
    if (n.kind == OpKind::Conv && w.size() >= 2) {
      int64_t k = 1; // ic per group x kernel window
      for (size_t i = 1; i < w.size(); ++i)
        k *= w[i];
      macs += numElements(y) * k;
    } else if (n.kind == OpKind::ConvTranspose && w.size() >= 2) {
      int64_t k = w[1]; // oc per group x kernel window, per input element
      for (size_t i = 2; i < w.size(); ++i)
        k *= w[i];
      macs += numElements(g.value(n.inputs[0]).shape) * k;
    } else if (n.kind == OpKind::Gemm || n.kind == OpKind::MatMul) {
      const Shape &a = g.value(n.inputs[0]).shape;
      int64_t kdim = a.empty() ? 1 : a.back();
      if (n.kind == OpKind::Gemm && n.attrInt("transA", 0) != 0 && a.size() == 2)
        kdim = a[0];
      macs += numElements(y) * kdim;
    }
  }
  return macs;
}

double estimateNpuSeconds(const Graph &g, const FusedGroup &grp, const DeviceCosts &c) {
  if (c.npuGroupSeconds)
    if (double s = c.npuGroupSeconds(g, grp); s >= 0)
      return s;
  double elems = 0, bytes = 0;
  std::set<ValueId> consts;
  for (NodeId id : grp.nodes) {
    const Node &n = g.node(id);
    for (ValueId o : n.outputs)
      elems += static_cast<double>(numElements(g.value(o).shape));
    for (ValueId in : n.inputs)
      if (in != kNoValue && g.value(in).isConstant() && consts.insert(in).second)
        bytes += static_cast<double>(numElements(g.value(in).shape)) * c.npuElemBytes;
  }
  for (ValueId v : grp.inputs)
    bytes += static_cast<double>(numElements(g.value(v).shape)) * c.npuElemBytes;
  for (ValueId v : grp.outputs)
    bytes += static_cast<double>(numElements(g.value(v).shape)) * c.npuElemBytes;
  double macs = static_cast<double>(groupMacs(g, grp));
  return std::max({macs / c.npuMacsPerSecond, bytes / c.npuDramBytesPerSecond,
                   elems / c.npuVectorElemsPerSecond});
}

double estimateCpuSeconds(const Graph &g, const FusedGroup &grp, const DeviceCosts &c) {
  double elems = 0;
  for (NodeId id : grp.nodes)
    for (ValueId o : g.node(id).outputs)
      elems += static_cast<double>(numElements(g.value(o).shape));
  return static_cast<double>(groupMacs(g, grp)) / c.cpuMacsPerSecond + elems / c.cpuElemsPerSecond;
}

void place(Graph &g,
           const std::function<std::string(const Graph &, const FusedGroup &)> &rejectReason,
           const DeviceCosts *costs) {
  NPUC_ASSERT(!g.groups.empty() || g.topoOrder().empty(), "place() runs after fuseOps()");
  std::vector<int> producerGroup(g.values.size(), -1);
  std::vector<std::vector<int>> consumerGroups(g.values.size());
  for (const FusedGroup &grp : g.groups) {
    for (NodeId n : grp.nodes)
      for (ValueId o : g.node(n).outputs)
        producerGroup[static_cast<size_t>(o)] = grp.id;
    for (ValueId in : grp.inputs)
      consumerGroups[static_cast<size_t>(in)].push_back(grp.id);
  }
  std::vector<bool> view(g.groups.size());
  for (FusedGroup &grp : g.groups) {
    view[static_cast<size_t>(grp.id)] = isViewOnly(g, grp);
    grp.placement = Placement::Unassigned;
    grp.cpuReason.clear();
    if (view[static_cast<size_t>(grp.id)])
      continue;
    std::string why = rejectReason(g, grp);
    grp.placement = why.empty() ? Placement::Npu : Placement::Cpu;
    grp.cpuReason = why;
  }
  // View-only groups, in execution order (producers are decided first; undecided view
  // neighbours are neutral).
  for (FusedGroup &grp : g.groups) {
    if (!view[static_cast<size_t>(grp.id)])
      continue;
    bool cpuNeighbour = false, npuNeighbour = false;
    auto look = [&](int other) {
      if (other < 0)
        return;
      Placement p = g.groups[static_cast<size_t>(other)].placement;
      cpuNeighbour = cpuNeighbour || p == Placement::Cpu;
      npuNeighbour = npuNeighbour || p == Placement::Npu;
    };
    for (ValueId in : grp.inputs)
      look(producerGroup[static_cast<size_t>(in)]);
    for (ValueId o : grp.outputs)
      for (int c : consumerGroups[static_cast<size_t>(o)])
        look(c);
    std::string why = rejectReason(g, grp);
    if (why.empty() && npuNeighbour && !cpuNeighbour) {
      grp.placement = Placement::Npu;
    } else {
      grp.placement = Placement::Cpu;
      grp.cpuReason = !why.empty() ? why
                      : cpuNeighbour
                          ? "shape-only group next to a CPU group: kept on the CPU to avoid a "
                            "device round trip"
                          : "shape-only group with no NPU neighbour: runs on the CPU for free";
    }
  }
  if (costs)
    Placer(g, *costs).removePingPong();
}

} // namespace npuc::graph
