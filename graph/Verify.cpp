// Verify.cpp - structural checks of the graph IR (see Verify.h).
#include "graph/Verify.h"

#include "graph/Ops.h"

#include "graph/Passes.h"
#include "graph/Text.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace npuc::graph {
namespace {

// A value a live node or the graph may read: an input, a constant, or a live node's output.
bool isAvailable(const Graph &g, ValueId v) {
  if (v < 0 || v >= static_cast<ValueId>(g.values.size()))
    return false;
  const Value &val = g.value(v);
  if (val.isConstant())
    return true;
  if (val.producer >= 0)
    return !g.node(val.producer).dead;
  for (ValueId in : g.inputs)
    if (in == v)
      return true;
  return false;
}

std::string names(const Graph &g, const std::vector<ValueId> &vs) {
  std::vector<std::string> parts;
  for (ValueId v : vs)
    parts.push_back(valueRefText(g.value(v).name));
  return fmt::format("{}", fmt::join(parts, ", "));
}

void verifyGroups(const Graph &g, std::vector<std::string> &out) {
  std::vector<int> groupOf(g.nodes.size(), -1);
  for (const FusedGroup &grp : g.groups) {
    bool valid = true;
    for (NodeId n : grp.nodes) {
      if (n < 0 || n >= static_cast<NodeId>(g.nodes.size()) || g.node(n).dead) {
        out.push_back(fmt::format("group {} '{}' lists a node that is not live (id {})", grp.id,
                                  grp.name, n));
        valid = false;
        continue;
      }
      int &owner = groupOf[static_cast<size_t>(n)];
      if (owner >= 0)
        out.push_back(
            fmt::format("node '{}' is in groups {} and {}", g.node(n).name, owner, grp.id));
      owner = grp.id;
    }
    FusedGroup fresh = grp;
    if (valid)
      computeGroupBoundary(g, fresh);
    if (valid && (fresh.inputs != grp.inputs || fresh.outputs != grp.outputs))
      out.push_back(fmt::format("group {} '{}': its boundary is inputs [{}] outputs [{}], its "
                                "nodes give inputs [{}] outputs [{}]",
                                grp.id, grp.name, names(g, grp.inputs), names(g, grp.outputs),
                                names(g, fresh.inputs), names(g, fresh.outputs)));
    bool anchorInGroup = false;
    for (NodeId n : grp.nodes)
      anchorInGroup = anchorInGroup || n == grp.anchor;
    if (!anchorInGroup)
      out.push_back(
          fmt::format("group {} '{}': its anchor is not one of its nodes", grp.id, grp.name));
  }
  for (const Node &n : g.nodes)
    if (!n.dead && groupOf[static_cast<size_t>(n.id)] < 0)
      out.push_back(fmt::format("node '{}' ({}) is in no group", n.name, opName(n.kind)));
}

} // namespace

std::vector<std::string> verifyGraph(const Graph &g) {
  std::vector<std::string> out;
  for (const Node &n : g.nodes) {
    if (n.dead)
      continue;
    for (ValueId v : n.inputs)
      if (v != kNoValue && !isAvailable(g, v))
        out.push_back(fmt::format("node '{}' ({}) reads value {}, which nothing live defines",
                                  n.name, opName(n.kind), v));
    for (ValueId v : n.outputs)
      if (g.value(v).producer != n.id)
        out.push_back(fmt::format("node '{}' ({}): its output '{}' names another producer", n.name,
                                  opName(n.kind), g.value(v).name));
  }
  for (ValueId v : g.outputs)
    if (!isAvailable(g, v))
      out.push_back(fmt::format("graph output {} is defined by nothing live", v));
  if (!g.outputNames.empty() && g.outputNames.size() != g.outputs.size())
    out.push_back(fmt::format("the graph names {} outputs but has {}", g.outputNames.size(),
                              g.outputs.size()));
  if (!g.groups.empty())
    verifyGroups(g, out);
  return out;
}

} // namespace npuc::graph
