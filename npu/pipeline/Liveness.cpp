// Liveness.cpp - lifetimes of a run of groups' DRAM buffers (Liveness.h).
#include "npu/pipeline/Liveness.h"

#include <algorithm>
#include <set>

namespace npuc::npu {

Liveness computeLiveness(const graph::Graph &g, const std::vector<int> &groupIds,
                         const std::function<graph::ValueId(graph::ValueId)> &rootOf) {
  Liveness out;
  auto touch = [&](graph::ValueId v, int64_t from, int64_t to) {
    auto [it, fresh] = out.life.try_emplace(rootOf(v), from, to);
    if (!fresh) {
      it->second.first = std::min(it->second.first, from);
      it->second.second = std::max(it->second.second, to);
    }
  };
  std::set<graph::ValueId> produced;
  for (size_t i = 0; i < groupIds.size(); ++i) {
    const int64_t step = static_cast<int64_t>(i);
    const graph::FusedGroup &grp = g.groups.at(static_cast<size_t>(groupIds[i]));
    for (graph::ValueId v : grp.inputs) {
      if (!produced.count(v)) {
        touch(v, 0, step + 1);
        if (std::find(out.inputs.begin(), out.inputs.end(), v) == out.inputs.end())
          out.inputs.push_back(v);
      }
      touch(v, step, step + 1);
    }
    for (graph::ValueId v : grp.outputs) {
      produced.insert(v);
      touch(v, step, step + 1);
    }
  }
  // A consumer node outside the run's groups reads the value after the run.
  std::vector<bool> nodeInRun(g.nodes.size(), false);
  for (int id : groupIds)
    for (graph::NodeId n : g.groups.at(static_cast<size_t>(id)).nodes)
      nodeInRun[static_cast<size_t>(n)] = true;
  const std::vector<std::vector<graph::NodeId>> uses = g.useLists(); // once, not per value
  for (graph::ValueId v : produced) {
    bool outside = g.isGraphOutput(v);
    for (graph::NodeId c : uses[static_cast<size_t>(v)])
      outside = outside || !nodeInRun[static_cast<size_t>(c)];
    if (outside)
      out.escaping.push_back(v);
  }
  return out;
}

} // namespace npuc::npu
