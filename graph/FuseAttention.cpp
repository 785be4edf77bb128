// FuseAttention.cpp - merging attention's three groups into one (see Passes.h fuseAttention).
//
// Operator fusion never merges across a reduction, so attention leaves it as a batched MatMul
// with its epilogue (the scores), a Softmax and a second MatMul: on a device each group writes
// its result to memory and the next reads it, and at long sequences the scores (8 MB per head at
// 2048 tokens in fp16) cannot stay on chip between groups. A device with a fused kernel keeps a
// block of query rows' scores on chip from the first product to the second, so the groups are
// merged where the caller's `accept` (the device's kernel and cost model) says so.
#include "graph/Passes.h"

#include <algorithm>
#include <map>
#include <set>

namespace npuc::graph {

namespace {

// The group index whose nodes produce each value.
std::map<ValueId, size_t> producers(const Graph &g) {
  std::map<ValueId, size_t> at;
  for (size_t i = 0; i < g.groups.size(); ++i)
    for (NodeId n : g.groups[i].nodes)
      for (ValueId v : g.node(n).outputs)
        at[v] = i;
  return at;
}

// Whether group `grp` is the single node `n` of kind `kind`.
bool single(const Graph &g, const FusedGroup &grp, OpKind kind) {
  return grp.nodes.size() == 1 && g.node(grp.nodes[0]).kind == kind;
}

// Whether `v`'s one reader is node `n`, and `v` is no graph output.
bool onlyReader(const Graph &g, const std::vector<std::vector<NodeId>> &uses, ValueId v, NodeId n) {
  return !g.isGraphOutput(v) && uses[static_cast<size_t>(v)].size() == 1 &&
         uses[static_cast<size_t>(v)][0] == n;
}

// The (scores group, Softmax group, second product's group) triple around the Softmax group
// `s`, or false.
bool attentionTriple(const Graph &g, const std::vector<std::vector<NodeId>> &uses,
                     const std::map<ValueId, size_t> &producer, size_t s, size_t &first,
                     size_t &last) {
  const FusedGroup &sg = g.groups[s];
  if (!single(g, sg, OpKind::Softmax))
    return false;
  const Node &sm = g.node(sg.nodes[0]);
  const ValueId scores = sm.inputs[0], probs = sm.outputs[0];
  auto from = producer.find(scores);
  if (from == producer.end() || !onlyReader(g, uses, scores, sm.id))
    return false;
  const FusedGroup &fg = g.groups[from->second];
  if (g.node(fg.anchor).kind != OpKind::MatMul || fg.outputs != std::vector<ValueId>{scores})
    return false;
  if (g.isGraphOutput(probs) || uses[static_cast<size_t>(probs)].size() != 1)
    return false;
  const NodeId mm = uses[static_cast<size_t>(probs)][0];
  auto to = producer.find(g.node(mm).outputs[0]);
  if (to == producer.end() || !single(g, g.groups[to->second], OpKind::MatMul) ||
      g.node(mm).inputs[0] != probs)
    return false;
  first = from->second;
  last = to->second;
  return true;
}

} // namespace

int fuseAttention(Graph &g, const FusionFilter &accept) {
  int merged = 0;
  bool again = true;
  while (again) {
    again = false;
    const std::vector<std::vector<NodeId>> uses = g.useLists();
    const std::map<ValueId, size_t> producer = producers(g);
    for (size_t s = 0; s < g.groups.size() && !again; ++s) {
      size_t first = 0, last = 0;
      if (!attentionTriple(g, uses, producer, s, first, last))
        continue;
      std::vector<FusedGroup> parts = {g.groups[first], g.groups[s], g.groups[last]};
      FusedGroup m = parts[0];
      for (size_t i = 1; i < parts.size(); ++i)
        m.nodes.insert(m.nodes.end(), parts[i].nodes.begin(), parts[i].nodes.end());
      computeGroupBoundary(g, m, uses);
      if (!accept(g, m, parts))
        continue;
      // The merged group takes the second product's place: everything it reads is computed
      // before that, and nothing between reads the scores or the probabilities.
      g.groups[last] = m;
      for (size_t drop : {std::max(first, s), std::min(first, s)})
        g.groups.erase(g.groups.begin() + static_cast<std::ptrdiff_t>(drop));
      for (size_t i = 0; i < g.groups.size(); ++i)
        g.groups[i].id = static_cast<int>(i);
      ++merged;
      again = true;
    }
  }
  return merged;
}

} // namespace npuc::graph
