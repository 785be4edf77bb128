// Fusion.cpp - operator fusion into FusedGroups and NPU/CPU placement.
//
// Fusion rules (the NPU lowering relies on them):
//  * Anchors that may absorb a chain: Conv, Gemm, MatMul, MaxPool, AveragePool,
//    GlobalAveragePool and every elementwise op (Add, Sub, Mul, Div, Relu, Clip, Sigmoid, Tanh,
//    Exp, Max, Min). Every other op (Softmax, Concat, Reshape, Flatten, Transpose, Pad, Gather,
//    BatchNormalization, ...) is a singleton group.
//  * A chain link is an elementwise/broadcast op (Add, Sub, Mul, Div, Relu, Clip, Sigmoid,
//    Tanh, Max, Min) reading the previous chain value, where that value has exactly one consumer
//    (this link) and is not a graph output. Each other operand of the link must be either a
//    constant that broadcasts into the chain value's shape (the link's output shape equals the
//    chain shape), or a non-constant value with exactly the chain value's shape produced outside
//    the group (a residual). A binary op between two non-constant values of different shapes
//    ends the chain. Exp is a valid anchor but not a link (the NPU vector unit may lack it).
//  * Group inputs are the non-constant values read from outside the group (first-use order);
//    outputs are the group's values read outside it or that are graph outputs. Because each
//    chain value has a single consumer, only the last node of a group can feed other groups,
//    so ordering groups by the topological position of their last node is an execution order.
//  * Groups are stored in that order and groups[i].id == i.
#include "graph/Passes.h"
#include "graph/ShapeInference.h"

#include "support/Error.h"

#include <algorithm>
#include <set>

namespace npuc::graph {

namespace {

bool isAnchor(const std::string &op) {
  return op == "Conv" || op == "Gemm" || op == "MatMul" || op == "MaxPool" || op == "AveragePool" ||
         op == "GlobalAveragePool" || isElementwiseOp(op);
}

bool isLink(const std::string &op) {
  return isElementwiseOp(op) && op != "Exp";
}

// Can `c` extend a chain whose current value is `cur`?
bool canLink(const Graph &g, const Node &c, ValueId cur) {
  if (!isLink(c.op) || c.outputs.size() != 1)
    return false;
  const Shape &chain = g.value(cur).shape;
  if (g.value(c.outputs[0]).shape != chain)
    return false; // a constant operand that would enlarge the result
  for (ValueId in : c.inputs) {
    if (in == cur || in == kNoValue)
      continue;
    const Value &v = g.value(in);
    if (!v.isConstant() && v.shape != chain)
      return false;
  }
  return true;
}

void computeBoundary(const Graph &g, FusedGroup &grp) {
  std::set<NodeId> members(grp.nodes.begin(), grp.nodes.end());
  std::set<ValueId> produced, seen;
  for (NodeId n : grp.nodes)
    for (ValueId o : g.node(n).outputs)
      produced.insert(o);
  for (NodeId n : grp.nodes)
    for (ValueId in : g.node(n).inputs)
      if (in != kNoValue && !produced.count(in) && !g.value(in).isConstant() &&
          seen.insert(in).second)
        grp.inputs.push_back(in);
  for (NodeId n : grp.nodes)
    for (ValueId o : g.node(n).outputs) {
      bool external = g.isGraphOutput(o);
      for (NodeId c : g.consumers(o))
        external = external || !members.count(c);
      if (external)
        grp.outputs.push_back(o);
    }
}

} // namespace

void fuseOps(Graph &g) {
  g.groups.clear();
  std::vector<NodeId> order = g.topoOrder();
  std::vector<int> pos(g.nodes.size(), -1);
  for (size_t i = 0; i < order.size(); ++i)
    pos[static_cast<size_t>(order[i])] = static_cast<int>(i);
  std::vector<bool> taken(g.nodes.size(), false);
  std::vector<FusedGroup> groups;
  for (NodeId a : order) {
    if (taken[static_cast<size_t>(a)])
      continue;
    FusedGroup grp;
    grp.anchor = a;
    grp.name = g.node(a).name;
    grp.nodes.push_back(a);
    taken[static_cast<size_t>(a)] = true;
    if (isAnchor(g.node(a).op) && g.node(a).outputs.size() == 1) {
      ValueId cur = g.node(a).outputs[0];
      while (true) {
        if (g.isGraphOutput(cur))
          break;
        std::vector<NodeId> cons = g.consumers(cur);
        if (cons.size() != 1 || taken[static_cast<size_t>(cons[0])] ||
            !canLink(g, g.node(cons[0]), cur))
          break;
        grp.nodes.push_back(cons[0]);
        taken[static_cast<size_t>(cons[0])] = true;
        cur = g.node(cons[0]).outputs[0];
      }
    }
    computeBoundary(g, grp);
    groups.push_back(std::move(grp));
  }
  std::stable_sort(groups.begin(), groups.end(), [&](const FusedGroup &x, const FusedGroup &y) {
    return pos[static_cast<size_t>(x.nodes.back())] < pos[static_cast<size_t>(y.nodes.back())];
  });
  for (size_t i = 0; i < groups.size(); ++i)
    groups[i].id = static_cast<int>(i);
  g.groups = std::move(groups);
}

namespace {

bool isViewOnly(const Graph &g, const FusedGroup &grp) {
  for (NodeId n : grp.nodes) {
    const std::string &op = g.node(n).op;
    if (op != "Reshape" && op != "Flatten" && op != "Squeeze" && op != "Unsqueeze")
      return false;
  }
  return true;
}

} // namespace

void place(Graph &g,
           const std::function<std::string(const Graph &, const FusedGroup &)> &rejectReason) {
  NPUC_ASSERT(!g.groups.empty() || g.topoOrder().empty(), "place() runs after fuseOps()");
  // Which group produces / consumes each value.
  std::vector<int> producerGroup(g.values.size(), -1);
  for (const FusedGroup &grp : g.groups)
    for (NodeId n : grp.nodes)
      for (ValueId o : g.node(n).outputs)
        producerGroup[static_cast<size_t>(o)] = grp.id;
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
  // Smoothing: view-only groups, in execution order (producers are decided first; undecided
  // view neighbours are neutral).
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
      for (NodeId c : g.consumers(o))
        for (const FusedGroup &other : g.groups)
          if (std::find(other.nodes.begin(), other.nodes.end(), c) != other.nodes.end())
            look(other.id);
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
}

} // namespace npuc::graph
