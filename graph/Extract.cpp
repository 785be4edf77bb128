// Extract.cpp - extractGroups (Extract.h).
#include "graph/Extract.h"

#include "graph/Text.h"
#include "support/Error.h"
#include "support/File.h"

#include <algorithm>
#include <set>

namespace npuc::graph {

Graph extractGroups(const Graph &g, const std::vector<int> &groupIds) {
  Graph out = g; // value and node ids stay valid; what is not needed is dropped below
  out.groups.clear();
  std::set<NodeId> keep;
  std::vector<ValueId> inputs, outputs;
  auto addOnce = [](std::vector<ValueId> &list, ValueId v) {
    if (std::find(list.begin(), list.end(), v) == list.end())
      list.push_back(v);
  };
  for (int id : groupIds) {
    NPUC_ASSERT(id >= 0 && static_cast<size_t>(id) < g.groups.size(),
                "extractGroups: a group id the graph does not have");
    const FusedGroup &grp = g.groups[static_cast<size_t>(id)];
    keep.insert(grp.nodes.begin(), grp.nodes.end());
    for (ValueId v : grp.inputs)
      addOnce(inputs, v);
    for (ValueId v : grp.outputs)
      addOnce(outputs, v);
  }
  // With several groups, one group's output may be another's input: it stays internal unless
  // the rest of the graph (or the graph's outputs) also reads it.
  std::vector<ValueId> external;
  for (ValueId v : inputs) {
    const Value &val = g.value(v);
    if (val.producer < 0 || !keep.count(val.producer))
      external.push_back(v);
  }
  std::vector<ValueId> given;
  for (ValueId v : outputs) {
    bool usedOutside = g.isGraphOutput(v);
    for (NodeId c : g.consumers(v))
      usedOutside = usedOutside || !keep.count(c);
    if (usedOutside)
      given.push_back(v);
  }
  for (Node &n : out.nodes)
    n.dead = n.dead || !keep.count(n.id);
  for (ValueId v : external)
    out.value(v).producer = -1;
  out.inputs = external;
  out.outputs = given;
  out.outputNames.clear(); // the cut's outputs are the groups' values, named by them
  return out;
}

CrashScope::Reproduce reproduceGroups(const Graph &g, std::vector<int> groupIds) {
  return [&g, ids = std::move(groupIds)](const std::string &dir) {
    writeFileAtomic(dir + "/group.graph", printGraphText(extractGroups(g, ids)));
    return std::string("group.graph");
  };
}

} // namespace npuc::graph
