// Fusion.cpp - operator fusion by operator class with a post-dominator analysis (TVM's FuseOps).
//
// Every node gets an operator class (OpPattern): elementwise, broadcast, injective, reduction,
// complex-out-fusable (conv, matmul, pools: an expensive op whose output an elementwise epilogue
// can consume in place) or opaque. The post-dominator tree of the dataflow graph (Boost.Graph's
// Lengauer-Tarjan on the reversed graph, rooted at a virtual exit that every graph output and
// every sink feeds) says, for each node n, the nearest node ipdom(n) that every path from n to
// the outputs goes through. Fusing n with ipdom(n) and everything on the paths between them keeps
// the group convex (no path leaves the group and comes back), so groups can run one after
// another. The rules, in TVM's two phases over the nodes in topological order:
//  * a complex-out-fusable group fuses into its ipdom when every edge on the way is elementwise
//    and every node on the way is at most broadcast (conv -> bias add -> relu) - phase 0;
//  * an elementwise/broadcast group fuses into its ipdom when the way is injective and the
//    ipdom is at most injective, a reduction or already holds a complex-out-fusable op;
//  * an injective group fuses into an injective ipdom through injective ops - phase 1;
//  * reductions and opaque ops never fuse into their consumers.
// An edge's class is its consumer's class, lowered from broadcast to elementwise when the operand
// already has the output's shape (the edge moves no data). Graph outputs end groups, and so do
// a gather's computed indices (the runtime checks them before the kernel, which clamps). A
// FusionFilter may veto a merge (the NPU accepts only an anchor followed by a chain, see
// preserveRunnable in Passes.h); a vetoed merge leaves the groups as they were.
//
// Groups are stored in an execution order (a topological order of the group graph, ties broken
// by the position of the group's last node) and groups[i].id == i. A group's nodes are in
// topological order; its anchor is its first node of the highest class when that class is a
// reduction or above, else its first node.
#include "graph/ExtOps.h"
#include "graph/Passes.h"
#include "graph/Reference.h"
#include "graph/ShapeInference.h"

#include "support/Error.h"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/dominator_tree.hpp>
#include <queue>
#include <set>

namespace npuc::graph {

OpPattern opPattern(const Graph &g, const Node &n) {
  if (n.outputs.size() != 1)
    return OpPattern::Opaque; // Split, TopK, ...: one value per group boundary keeps it simple
  const OpPattern p = opInfo(n.kind).pattern;
  if (p != OpPattern::Broadcast)
    return p;
  // A broadcasting op whose operands all have the output's shape is elementwise.
  const Shape &out = g.value(n.outputs[0]).shape;
  for (ValueId in : n.inputs)
    if (in != kNoValue && g.value(in).shape != out)
      return OpPattern::Broadcast;
  return OpPattern::ElemWise;
}

namespace {

struct Fuser {
  const Graph &g;
  const FusionFilter &filter;
  std::vector<NodeId> order;
  std::vector<int> pos;                       // topological position of each node, -1 if dead
  std::vector<std::vector<NodeId>> consumers; // by value id: live consumers (with repeats)
  std::vector<OpPattern> pattern;             // by node
  std::vector<NodeId> ipdom;                  // by node: -1 when it is the virtual exit
  std::vector<OpPattern> domPattern;          // by node: the strongest edge on the way to ipdom
  std::vector<NodeId> parent;                 // union-find over nodes
  std::vector<OpPattern> groupPattern;        // by root
  std::vector<int> groupSize;                 // by root
  std::vector<std::vector<NodeId>> members;   // by root: the group's nodes, in no set order
  static constexpr int kMaxGroupSize = 256;

  Fuser(const Graph &graph, const FusionFilter &f) : g(graph), filter(f) {}

  NodeId find(NodeId n) {
    while (parent[static_cast<size_t>(n)] != n) {
      parent[static_cast<size_t>(n)] = parent[static_cast<size_t>(parent[static_cast<size_t>(n)])];
      n = parent[static_cast<size_t>(n)];
    }
    return n;
  }

  // Live consumer nodes of n (each once), in topological order.
  std::vector<NodeId> succs(NodeId n) const {
    std::set<std::pair<int, NodeId>> s;
    for (ValueId o : g.node(n).outputs)
      for (NodeId c : consumers[static_cast<size_t>(o)])
        s.insert({pos[static_cast<size_t>(c)], c});
    std::vector<NodeId> out;
    for (const auto &[p, c] : s)
      out.push_back(c);
    return out;
  }

  bool feedsExit(NodeId n) const {
    for (ValueId o : g.node(n).outputs)
      if (g.isGraphOutput(o))
        return true;
    return succs(n).empty();
  }

  // The class of edge producer -> c through value v (see the file comment).
  OpPattern edgePattern(NodeId c, ValueId v) const {
    OpPattern p = pattern[static_cast<size_t>(c)];
    if (p == OpPattern::Broadcast && g.value(v).shape == g.value(g.node(c).outputs[0]).shape)
      return OpPattern::ElemWise;
    return p;
  }

  void analyze() {
    order = g.topoOrder();
    pos.assign(g.nodes.size(), -1);
    for (size_t i = 0; i < order.size(); ++i)
      pos[static_cast<size_t>(order[i])] = static_cast<int>(i);
    consumers.assign(g.values.size(), {});
    for (NodeId n : order)
      for (ValueId in : g.node(n).inputs)
        if (in != kNoValue)
          consumers[static_cast<size_t>(in)].push_back(n);
    pattern.assign(g.nodes.size(), OpPattern::Opaque);
    for (NodeId n : order)
      pattern[static_cast<size_t>(n)] = opPattern(g, g.node(n));

    // Post-dominators: dominators of the reversed graph rooted at the virtual exit (vertex 0;
    // node at topological position i is vertex i + 1).
    using BGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS>;
    using Vertex = boost::graph_traits<BGraph>::vertex_descriptor;
    const size_t nv = order.size() + 1;
    BGraph rev(nv);
    for (size_t i = 0; i < order.size(); ++i) {
      NodeId n = order[i];
      if (feedsExit(n))
        boost::add_edge(0, i + 1, rev);
      for (NodeId c : succs(n))
        boost::add_edge(static_cast<size_t>(pos[static_cast<size_t>(c)]) + 1, i + 1, rev);
    }
    std::vector<Vertex> idom(nv, boost::graph_traits<BGraph>::null_vertex());
    boost::lengauer_tarjan_dominator_tree(
        rev, boost::vertex(0, rev),
        boost::make_iterator_property_map(idom.begin(), boost::get(boost::vertex_index, rev)));
    ipdom.assign(g.nodes.size(), -1);
    for (size_t i = 0; i < order.size(); ++i) {
      Vertex d = idom[i + 1];
      NPUC_ASSERT(d != boost::graph_traits<BGraph>::null_vertex(),
                  "every live node reaches the exit (it is used or is a sink)");
      ipdom[static_cast<size_t>(order[i])] = d == 0 ? -1 : order[d - 1];
    }

    // domPattern(n): the strongest edge class over the paths n -> ipdom(n).
    domPattern.assign(g.nodes.size(), OpPattern::ElemWise);
    for (NodeId n : order) {
      NodeId stop = ipdom[static_cast<size_t>(n)];
      if (stop < 0)
        continue;
      OpPattern worst = OpPattern::ElemWise;
      std::set<NodeId> seen;
      std::vector<NodeId> stack{n};
      while (!stack.empty()) {
        NodeId u = stack.back();
        stack.pop_back();
        for (ValueId o : g.node(u).outputs)
          for (NodeId c : consumers[static_cast<size_t>(o)]) {
            worst = std::max(worst, edgePattern(c, o));
            if (c != stop && seen.insert(c).second)
              stack.push_back(c);
          }
      }
      domPattern[static_cast<size_t>(n)] = worst;
    }
  }

  // Every node on the paths from src (exclusive) to sink satisfies cond(group class, isSink).
  template <typename Cond> bool checkPath(NodeId src, NodeId sink, Cond cond) {
    std::set<NodeId> seen;
    std::vector<NodeId> stack = succs(src);
    while (!stack.empty()) {
      NodeId u = stack.back();
      stack.pop_back();
      if (!seen.insert(u).second)
        continue;
      OpPattern gp = groupPattern[static_cast<size_t>(find(u))];
      if (u == sink) {
        if (!cond(gp, true))
          return false;
        continue;
      }
      if (!cond(gp, false))
        return false;
      for (NodeId c : succs(u))
        stack.push_back(c);
    }
    return true;
  }

  // The groups (roots) met on the paths src -> sink, src's and sink's included.
  std::set<NodeId> pathGroups(NodeId src, NodeId sink) {
    std::set<NodeId> roots{find(src), find(sink)}, seen;
    std::vector<NodeId> stack = succs(src);
    while (!stack.empty()) {
      NodeId u = stack.back();
      stack.pop_back();
      if (u == sink || !seen.insert(u).second)
        continue;
      roots.insert(find(u));
      for (NodeId c : succs(u))
        stack.push_back(c);
    }
    return roots;
  }

  FusedGroup makeGroup(const std::vector<NodeId> &nodes) const {
    FusedGroup grp;
    grp.nodes = nodes;
    std::sort(grp.nodes.begin(), grp.nodes.end(), [&](NodeId a, NodeId b) {
      return pos[static_cast<size_t>(a)] < pos[static_cast<size_t>(b)];
    });
    grp.anchor = grp.nodes.front();
    OpPattern best = pattern[static_cast<size_t>(grp.anchor)];
    for (NodeId n : grp.nodes)
      if (pattern[static_cast<size_t>(n)] > best) {
        best = pattern[static_cast<size_t>(n)];
        if (best >= OpPattern::CommReduce)
          grp.anchor = n;
      }
    grp.name = g.node(grp.anchor).name;
    computeGroupBoundary(g, grp, consumers);
    return grp;
  }

  // The nodes of the groups `roots`, in topological order. Gathered from the per-root member
  // lists, not by a scan of every node: commit asks this once per candidate merge.
  std::vector<NodeId> membersOf(const std::set<NodeId> &roots) const {
    std::vector<NodeId> m;
    for (NodeId r : roots)
      m.insert(m.end(), members[static_cast<size_t>(r)].begin(),
               members[static_cast<size_t>(r)].end());
    std::sort(m.begin(), m.end(), [&](NodeId a, NodeId b) {
      return pos[static_cast<size_t>(a)] < pos[static_cast<size_t>(b)];
    });
    return m;
  }

  // Whether the indices of a gather, scatter, ReverseSequence, MaxUnpool, ... (graph::indexInput)
  // would be computed inside the group. The CPU kernels clamp an index (their code has no error
  // channel), so the runtime checks the indices before the kernel runs, which needs them at a
  // group boundary (tools/driver/Runtime.cpp).
  bool hidesGatherIndices(const std::vector<NodeId> &members) const {
    std::set<NodeId> in(members.begin(), members.end());
    for (NodeId m : members) {
      const Node &n = g.node(m);
      const int k = indexInput(n.kind);
      if (k >= 0 && static_cast<size_t>(k) < n.inputs.size() &&
          n.inputs[static_cast<size_t>(k)] != kNoValue &&
          in.count(g.value(n.inputs[static_cast<size_t>(k)]).producer))
        return true;
    }
    return false;
  }

  // Merges every group on the paths src -> sink into sink's group, unless the filter vetoes.
  void commit(NodeId src, NodeId sink) {
    std::set<NodeId> roots = pathGroups(src, sink);
    int size = 0;
    for (NodeId r : roots)
      size += groupSize[static_cast<size_t>(r)];
    if (size > kMaxGroupSize || hidesGatherIndices(membersOf(roots)))
      return;
    if (filter) {
      std::vector<FusedGroup> parts;
      for (NodeId r : roots)
        parts.push_back(makeGroup(membersOf({r})));
      if (!filter(g, makeGroup(membersOf(roots)), parts))
        return;
    }
    NodeId target = find(sink);
    for (NodeId r : roots) {
      if (r == target)
        continue;
      parent[static_cast<size_t>(r)] = target;
      groupSize[static_cast<size_t>(target)] += groupSize[static_cast<size_t>(r)];
      std::vector<NodeId> &into = members[static_cast<size_t>(target)];
      into.insert(into.end(), members[static_cast<size_t>(r)].begin(),
                  members[static_cast<size_t>(r)].end());
      members[static_cast<size_t>(r)].clear();
      groupPattern[static_cast<size_t>(target)] =
          std::max(groupPattern[static_cast<size_t>(target)], groupPattern[static_cast<size_t>(r)]);
    }
  }

  void fuse() {
    parent.resize(g.nodes.size());
    for (size_t i = 0; i < parent.size(); ++i)
      parent[i] = static_cast<NodeId>(i);
    groupPattern = pattern;
    groupSize.assign(g.nodes.size(), 1);
    members.assign(g.nodes.size(), {});
    for (NodeId n : order)
      members[static_cast<size_t>(n)] = {n};
    for (int phase = 0; phase < 2; ++phase)
      for (NodeId n : order) {
        NodeId sink = ipdom[static_cast<size_t>(n)];
        OpPattern gp = groupPattern[static_cast<size_t>(find(n))];
        if (sink < 0 || gp == OpPattern::Opaque || find(n) == find(sink))
          continue;
        OpPattern dp = domPattern[static_cast<size_t>(n)];
        if (gp == OpPattern::OutEWiseFusable) {
          if (phase == 0 && dp == OpPattern::ElemWise &&
              checkPath(n, sink, [](OpPattern k, bool) { return k <= OpPattern::Broadcast; }))
            commit(n, sink);
        } else if (gp <= OpPattern::Broadcast) {
          if ((dp <= OpPattern::Injective || dp == OpPattern::CommReduce) &&
              checkPath(n, sink, [](OpPattern k, bool isSink) {
                return isSink ? k != OpPattern::Opaque : k <= OpPattern::Injective;
              }))
            commit(n, sink);
        } else if (gp == OpPattern::Injective) {
          if (phase == 1 &&
              checkPath(n, sink, [](OpPattern k, bool) { return k <= OpPattern::Injective; }))
            commit(n, sink);
        }
        // Reductions do not fuse into their consumers.
      }
  }

  std::vector<FusedGroup> groups() {
    std::map<NodeId, std::vector<NodeId>> byRoot;
    for (NodeId n : order)
      byRoot[find(n)].push_back(n);
    std::vector<FusedGroup> gs;
    std::vector<int> groupOf(g.nodes.size(), -1);
    for (const auto &[r, nodes] : byRoot) {
      for (NodeId n : nodes)
        groupOf[static_cast<size_t>(n)] = static_cast<int>(gs.size());
      gs.push_back(makeGroup(nodes));
    }
    // Kahn over the group graph, ready groups by the position of their last node.
    const size_t ng = gs.size();
    std::vector<std::set<int>> succ(ng);
    std::vector<int> indeg(ng, 0);
    for (size_t i = 0; i < ng; ++i)
      for (NodeId n : gs[i].nodes)
        for (NodeId c : succs(n)) {
          int j = groupOf[static_cast<size_t>(c)];
          if (j != static_cast<int>(i) && succ[i].insert(j).second)
            ++indeg[static_cast<size_t>(j)];
        }
    auto lastPos = [&](size_t i) { return pos[static_cast<size_t>(gs[i].nodes.back())]; };
    using Item = std::pair<int, size_t>;
    std::priority_queue<Item, std::vector<Item>, std::greater<Item>> ready;
    for (size_t i = 0; i < ng; ++i)
      if (indeg[i] == 0)
        ready.push({lastPos(i), i});
    std::vector<FusedGroup> sorted;
    while (!ready.empty()) {
      size_t i = ready.top().second;
      ready.pop();
      sorted.push_back(std::move(gs[i]));
      for (int j : succ[i])
        if (--indeg[static_cast<size_t>(j)] == 0)
          ready.push({lastPos(static_cast<size_t>(j)), static_cast<size_t>(j)});
    }
    NPUC_ASSERT(sorted.size() == ng, "post-dominator fusion keeps groups convex, so the group "
                                     "graph is acyclic");
    for (size_t i = 0; i < sorted.size(); ++i)
      sorted[i].id = static_cast<int>(i);
    return sorted;
  }
};

} // namespace

void computeGroupBoundary(const Graph &g, FusedGroup &grp) {
  computeGroupBoundary(g, grp, g.useLists());
}

void computeGroupBoundary(const Graph &g, FusedGroup &grp,
                          const std::vector<std::vector<NodeId>> &uses) {
  grp.inputs.clear();
  grp.outputs.clear();
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
  std::set<ValueId> external;
  for (ValueId o : produced)
    if (g.isGraphOutput(o))
      external.insert(o);
  for (ValueId o : produced)
    for (NodeId c : uses[static_cast<size_t>(o)])
      if (!members.count(c))
        external.insert(o);
  for (NodeId n : grp.nodes)
    for (ValueId o : g.node(n).outputs)
      if (external.count(o))
        grp.outputs.push_back(o);
}

bool isNodeChain(const Graph &g, const FusedGroup &grp) {
  // A chain value read outside the group is one of its outputs, so with a current boundary "not
  // an output" is "read inside the group alone" without scanning the graph's nodes (fusion asks
  // this per merge). A later member may read an earlier chain value again (GELU's x * f(x)): the
  // device's kernels save it when the chain reaches it (npu/kernels/Plan.h EpilogueOp::Saved).
  auto isOutput = [&](ValueId v) {
    return std::find(grp.outputs.begin(), grp.outputs.end(), v) != grp.outputs.end();
  };
  for (size_t i = 0; i < grp.nodes.size(); ++i) {
    const Node &n = g.node(grp.nodes[i]);
    if (n.outputs.size() != 1)
      return false;
    if (i > 0) {
      ValueId prev = g.node(grp.nodes[i - 1]).outputs[0];
      if (std::find(n.inputs.begin(), n.inputs.end(), prev) == n.inputs.end() ||
          g.isGraphOutput(prev) || isOutput(prev))
        return false;
    }
  }
  return true;
}

FusionFilter preserveRunnable(
    const std::function<std::string(const Graph &, const FusedGroup &)> &rejectReason) {
  return [rejectReason](const Graph &g, const FusedGroup &merged,
                        const std::vector<FusedGroup> &parts) {
    auto runnable = [&](const FusedGroup &grp) {
      return isNodeChain(g, grp) && rejectReason(g, grp).empty();
    };
    if (runnable(merged))
      return true;
    return std::none_of(parts.begin(), parts.end(),
                        [&](const FusedGroup &p) { return !isViewOnly(g, p) && runnable(p); });
  };
}

void fuseOps(Graph &g, const FusionFilter &filter) {
  g.groups.clear();
  Fuser f(g, filter);
  f.analyze();
  f.fuse();
  g.groups = f.groups();
}

std::vector<int> splitGroup(Graph &g, int gid) {
  NPUC_ASSERT(gid >= 0 && static_cast<size_t>(gid) < g.groups.size(), "splitGroup: no such group");
  FusedGroup whole = g.groups[static_cast<size_t>(gid)];
  std::vector<FusedGroup> parts;
  const std::vector<std::vector<NodeId>> uses = g.useLists();
  for (NodeId n : whole.nodes) { // already in topological order, so the parts are too
    FusedGroup p;
    p.nodes = {n};
    p.anchor = n;
    p.name = g.node(n).name;
    p.placement = whole.placement;
    computeGroupBoundary(g, p, uses);
    parts.push_back(std::move(p));
  }
  g.groups.erase(g.groups.begin() + gid);
  g.groups.insert(g.groups.begin() + gid, parts.begin(), parts.end());
  std::vector<int> ids;
  for (size_t i = 0; i < g.groups.size(); ++i) {
    g.groups[i].id = static_cast<int>(i);
    if (i >= static_cast<size_t>(gid) && i < static_cast<size_t>(gid) + parts.size())
      ids.push_back(static_cast<int>(i));
  }
  return ids;
}

std::vector<NodeId> postDominators(const Graph &g) {
  FusionFilter none;
  Fuser f(g, none);
  f.analyze();
  return f.ipdom;
}

} // namespace npuc::graph
