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
#include <queue>
#include <set>

namespace npuc::graph {

std::vector<ResidentTensor> findResidentTensors(const Graph &g, const std::vector<int> &segment,
                                                int64_t capacity, int64_t elemBytes) {
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

  // Looked up once, not per value: a segment has thousands of groups in a long chain.
  const std::vector<std::vector<NodeId>> uses = g.useLists();
  std::vector<int64_t> posOf(g.nodes.size(), -1); // segment position of each node's group
  for (size_t i = 0; i < segment.size(); ++i)
    for (NodeId n : g.groups.at(static_cast<size_t>(segment[i])).nodes)
      posOf[static_cast<size_t>(n)] = static_cast<int64_t>(i);
  // The tensors kept so far that are still needed, by the position of their last consumer.
  using Pending = std::pair<size_t, int64_t>; // last consumer's position, bytes
  std::priority_queue<Pending, std::vector<Pending>, std::greater<Pending>> pending;
  int64_t live = 0; // their bytes

  std::vector<ResidentTensor> kept;
  for (size_t i = 0; i + 1 < segment.size(); ++i) {
    // Space: tensors kept earlier that are still needed while group i+1 runs.
    for (; !pending.empty() && pending.top().first < i + 1; pending.pop())
      live -= pending.top().second;
    const FusedGroup &grp = g.groups.at(static_cast<size_t>(segment[i]));
    for (ValueId v : grp.outputs) {
      if (g.isGraphOutput(v))
        continue;
      // Every consumer (by node, so a consumer outside the segment is seen) is a later group of
      // the segment.
      bool inside = true;
      for (NodeId c : uses[static_cast<size_t>(v)])
        inside = inside && posOf[static_cast<size_t>(c)] > static_cast<int64_t>(i);
      auto r = readers.find(v);
      if (!inside || r == readers.end() || *r->second.begin() != i + 1)
        continue;
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
      pending.push({*r->second.rbegin(), b});
      live += b;
      kept.push_back(std::move(t));
    }
  }
  return kept;
}

} // namespace npuc::graph
