// LayoutSimplify.cpp - algebraic simplification of layout ops (Transpose, Reshape, Flatten,
// Squeeze, Unsqueeze) on static shapes, run as part of simplify().
//
// Rewrites, in topological order so that each node sees its producer already simplified:
//  * Transpose(Transpose(x, p), q) -> Transpose(x, r) with r[i] = p[q[i]];
//  * a Transpose with the identity perm disappears;
//  * a Transpose that moves only unit dims (the non-unit dims keep their order) is a Reshape;
//  * a reshape-like op (Reshape, Flatten, Squeeze, Unsqueeze) of a reshape-like op reads the
//    first one's input, as one Reshape to its own (static) output shape;
//  * a reshape to the input's own shape disappears.
// A rewritten node keeps its output value, so graph outputs keep their names and values; a node
// whose output is a graph output is rewritten in place but never removed. An intermediate with
// other consumers is kept for them (the rewritten node just stops reading it); one left unused
// is removed by dead-code elimination.
#include "graph/Passes.h"

#include "support/Error.h"

#include <algorithm>

namespace npuc::graph {

namespace {

bool isReshapeLike(OpKind op) {
  return op == OpKind::Reshape || op == OpKind::Flatten || op == OpKind::Squeeze ||
         op == OpKind::Unsqueeze;
}

std::vector<int64_t> permOf(const Graph &g, const Node &n) {
  std::vector<int64_t> perm = n.attrInts("perm", {});
  if (perm.empty()) // ONNX default: reverse the axes
    for (size_t i = g.value(n.inputs[0]).shape.size(); i-- > 0;)
      perm.push_back(static_cast<int64_t>(i));
  return perm;
}

struct Rewriter {
  Graph &g;
  int changed = 0;
  int shapes = 0; // names the shape constants uniquely

  // Turns node `id` into Reshape(x) to its own output shape, keeping its output value.
  void makeReshape(NodeId id, ValueId x) {
    const Shape out = g.value(g.node(id).outputs[0]).shape;
    ValueId s =
        g.addConstantI64(g.node(id).name + "/layout_simplify_shape_" + std::to_string(shapes++),
                         {static_cast<int64_t>(out.size())}, out);
    Node &n = g.node(id);
    n.kind = OpKind::Reshape;
    n.inputs = {x, s};
    n.attrs.clear(); // allowzero = 0: no dim of `out` is 0 (checked by the caller)
    ++changed;
  }

  // Removes node `id` (output -> x) unless its output is a graph output. Returns whether it did.
  bool bypass(NodeId id, ValueId x) {
    Node &n = g.node(id);
    if (g.isGraphOutput(n.outputs[0]))
      return false;
    g.replaceAllUses(n.outputs[0], x);
    n.dead = true;
    ++changed;
    return true;
  }

  NodeId producerOp(ValueId v, bool (*pred)(OpKind)) const {
    NodeId p = g.value(v).producer;
    if (p < 0 || g.node(p).dead || !pred(g.node(p).kind))
      return -1;
    return p;
  }

  void transpose(NodeId id) {
    std::vector<int64_t> q = permOf(g, g.node(id));
    if (NodeId p =
            producerOp(g.node(id).inputs[0], [](OpKind op) { return op == OpKind::Transpose; });
        p >= 0) {
      std::vector<int64_t> inner = permOf(g, g.node(p)), r(q.size());
      for (size_t i = 0; i < q.size(); ++i)
        r[i] = inner.at(static_cast<size_t>(q[i]));
      Node &n = g.node(id);
      n.inputs[0] = g.node(p).inputs[0];
      n.attrs["perm"] = r;
      q = r;
      ++changed;
    }
    const ValueId x = g.node(id).inputs[0];
    bool identity = true;
    for (size_t i = 0; i < q.size(); ++i)
      identity = identity && q[i] == static_cast<int64_t>(i);
    if (identity && bypass(id, x))
      return;
    // The non-unit dims in output order: when they keep their input order, only unit dims move.
    const Shape &in = g.value(x).shape;
    int64_t last = -1;
    bool unitOnly = true;
    for (int64_t d : q)
      if (in.at(static_cast<size_t>(d)) != 1) {
        unitOnly = unitOnly && d > last;
        last = d;
      }
    if (unitOnly) // an identity perm lands here only when the node produces a graph output
      makeReshape(id, x);
  }

  void reshape(NodeId id) {
    ValueId x = g.node(id).inputs[0];
    bool chained = false;
    if (NodeId p = producerOp(x, isReshapeLike); p >= 0) {
      x = g.node(p).inputs[0];
      chained = true;
    }
    if (g.value(x).shape == g.value(g.node(id).outputs[0]).shape && bypass(id, x))
      return;
    if (chained)
      makeReshape(id, x);
  }

  void run() {
    for (NodeId id : g.topoOrder()) {
      const Node &n = g.node(id);
      if (n.dead || n.inputs.empty() || n.inputs[0] == kNoValue || n.outputs.size() != 1)
        continue;
      const Shape &out = g.value(n.outputs[0]).shape;
      if (std::find(out.begin(), out.end(), 0) != out.end())
        continue; // empty tensors: a Reshape's 0 would mean "copy the input's dim"
      if (n.kind == OpKind::Transpose)
        transpose(id);
      if (isReshapeLike(g.node(id).kind) && !g.node(id).dead)
        reshape(id);
    }
  }
};

} // namespace

int simplifyLayoutOps(Graph &g) {
  Rewriter r{g};
  r.run();
  g.removeDeadNodes();
  return r.changed;
}

} // namespace npuc::graph
