// Residency.cpp - graph scheduling toward the NPU: which intermediate tensors could stay in an
// on-chip level (L1) between consecutive fused groups instead of a DRAM round trip.
//
// Within one NPU segment the groups run in order. A group's output can stay on chip when every
// consumer is a later group of the same segment (the host never needs it), it is not a graph
// output, and its first consumer runs right after it (a tensor that waits behind other groups
// would pin their space). It must fit together with the tensors already kept (until their last
// consumer has run) and with the consumer's working set: its weights and output when they are
// small, else half the level, the space the tiler needs for double-buffered tiles. The saving is
// the tensor's DRAM write plus one DRAM read per consuming group. These are proposals: the NPU
// segment compiler (npu/pipeline/Resident.h) keeps those its kernels still tile around, and `npuc
// inspect` reports what it did with each.
#include "graph/Passes.h"

#include <algorithm>
#include <map>
#include <set>

namespace npuc::graph {

std::vector<ResidentTensor> findResidentTensors(const Graph &g, const std::vector<int> &segment,
                                                int64_t capacity, int64_t elemBytes) {
  std::map<int, size_t> index; // group id -> position in the segment
  for (size_t i = 0; i < segment.size(); ++i)
    index[segment[i]] = i;
  std::map<ValueId, std::set<size_t>> readers; // segment positions reading each value
  for (size_t i = 0; i < segment.size(); ++i)
    for (ValueId in : g.groups.at(static_cast<size_t>(segment[i])).inputs)
      readers[in].insert(i);
  auto bytesOf = [&](ValueId v) { return numElements(g.value(v).shape) * elemBytes; };
  auto workingSet = [&](const FusedGroup &grp) {
    int64_t b = 0;
    std::set<ValueId> seen;
    for (NodeId n : grp.nodes)
      for (ValueId in : g.node(n).inputs)
        if (in != kNoValue && g.value(in).isConstant() && seen.insert(in).second)
          b += bytesOf(in);
    for (ValueId o : grp.outputs)
      b += bytesOf(o);
    return std::min(b, capacity / 2);
  };

  std::vector<ResidentTensor> kept;
  for (size_t i = 0; i + 1 < segment.size(); ++i) {
    const FusedGroup &grp = g.groups.at(static_cast<size_t>(segment[i]));
    for (ValueId v : grp.outputs) {
      if (g.isGraphOutput(v))
        continue;
      // Every consumer (by node, so a consumer outside the segment is seen) is in the segment.
      bool inside = true;
      for (const Node &c : g.nodes)
        if (!c.dead && std::find(c.inputs.begin(), c.inputs.end(), v) != c.inputs.end()) {
          bool found = false;
          for (size_t j = i + 1; j < segment.size() && !found; ++j) {
            const auto &ns = g.groups.at(static_cast<size_t>(segment[j])).nodes;
            found = std::find(ns.begin(), ns.end(), c.id) != ns.end();
          }
          inside = inside && found;
        }
      auto r = readers.find(v);
      if (!inside || r == readers.end() || *r->second.begin() != i + 1)
        continue;
      // Space: tensors kept earlier that are still needed while group i+1 runs.
      int64_t live = 0;
      for (const ResidentTensor &t : kept)
        if (index.at(t.consumers.back()) >= i + 1)
          live += t.bytes;
      const FusedGroup &next = g.groups.at(static_cast<size_t>(segment[i + 1]));
      int64_t b = bytesOf(v);
      if (live + b + workingSet(next) > capacity)
        continue;
      ResidentTensor t;
      t.value = v;
      t.producer = grp.id;
      for (size_t j : r->second)
        t.consumers.push_back(segment[j]);
      t.bytes = b;
      t.dramBytesSaved = b * static_cast<int64_t>(1 + t.consumers.size());
      kept.push_back(std::move(t));
    }
  }
  return kept;
}

} // namespace npuc::graph
