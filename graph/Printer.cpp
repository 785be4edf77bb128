// Printer.cpp - text dumps of the graph IR and its fused groups.
#include "graph/Printer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace npuc::graph {

namespace {

std::string attrToString(const AttrValue &a) {
  return std::visit(
      [](const auto &v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string>)
          return "\"" + v + "\"";
        else if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, double>)
          return fmt::format("{}", v);
        else
          return fmt::format("[{}]", fmt::join(v, ","));
      },
      a);
}

std::string valueRef(const Graph &g, ValueId v) {
  return v == kNoValue ? std::string("<none>") : "%" + g.value(v).name;
}

std::string valueList(const Graph &g, const std::vector<ValueId> &vs) {
  std::vector<std::string> parts;
  for (ValueId v : vs)
    parts.push_back(valueRef(g, v));
  return fmt::format("{}", fmt::join(parts, ", "));
}

} // namespace

std::string printValue(const Graph &g, ValueId id) {
  const Value &v = g.value(id);
  return fmt::format("%{}: {}[{}]{}", v.name, dtypeName(v.dtype), shapeToString(v.shape),
                     v.isConstant() ? " const" : "");
}

std::string printNode(const Graph &g, NodeId id) {
  const Node &n = g.node(id);
  std::vector<std::string> attrs;
  for (const auto &[k, v] : n.attrs)
    attrs.push_back(k + "=" + attrToString(v));
  std::vector<std::string> outs;
  for (ValueId o : n.outputs)
    outs.push_back(printValue(g, o));
  return fmt::format("{} '{}'({}) -> {}{}", n.kind, n.name, valueList(g, n.inputs),
                     fmt::join(outs, ", "),
                     attrs.empty() ? "" : fmt::format(" {{{}}}", fmt::join(attrs, ", ")));
}

std::string printGraph(const Graph &g) {
  std::string s = fmt::format("graph '{}'\n", g.name);
  for (ValueId in : g.inputs)
    s += "  input " + printValue(g, in) + "\n";
  for (NodeId n : g.topoOrder())
    s += fmt::format("  [{}] {}\n", n, printNode(g, n));
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    const std::string &name = g.outputName(i);
    s += "  output " + printValue(g, g.outputs[i]) +
         (name != g.value(g.outputs[i]).name ? " as '" + name + "'" : "") + "\n";
  }
  return s;
}

std::string printGroups(const Graph &g) {
  std::string s;
  for (const FusedGroup &grp : g.groups) {
    std::vector<OpKind> ops;
    for (NodeId n : grp.nodes)
      ops.push_back(g.node(n).kind);
    s += fmt::format("group {} '{}' [{}] on {}{}\n", grp.id, grp.name, fmt::join(ops, "+"),
                     placementName(grp.placement),
                     grp.cpuReason.empty() ? "" : " (" + grp.cpuReason + ")");
    s += fmt::format("  inputs: {}\n  outputs: {}\n", valueList(g, grp.inputs),
                     valueList(g, grp.outputs));
  }
  return s;
}

} // namespace npuc::graph
