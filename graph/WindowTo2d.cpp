// WindowTo2d.cpp - 1-D convolutions and pools as 2-D ones over a unit height (see WindowTo2d.h).
#include "graph/WindowTo2d.h"

#include "support/Error.h"

namespace npuc::graph {

namespace {

bool isLiftable(const Graph &g, const Node &n) {
  if (n.dead || n.inputs.empty() || g.value(n.inputs[0]).shape.size() != 3)
    return false;
  switch (n.kind) {
  case OpKind::Conv:
  case OpKind::AveragePool:
  case OpKind::GlobalAveragePool:
    return true;
  case OpKind::MaxPool:
    return n.outputs.size() == 1; // Indices count positions of the 1-D input
  default:
    return false;
  }
}

// [a, b, c] -> [a, b, 1, c]: the value `v` seen with a unit height (a reshaped copy of a
// constant, else an Unsqueeze node named after `name`).
ValueId unitHeight(Graph &g, ValueId v, const std::string &name) {
  Shape s = g.value(v).shape;
  s.insert(s.begin() + 2, 1);
  if (g.value(v).f32)
    return g.addConstant(name, s, *g.value(v).f32);
  ValueId out = g.addValue(name, s, g.value(v).dtype);
  NodeId u = g.addNode(OpKind::Unsqueeze, name + "_unsqueeze", {v}, {out});
  g.node(u).attrs["axes"] = std::vector<int64_t>{2};
  return out;
}

// The 1-D window attribute `key` with a unit entry for the new height axis in front of each
// spatial entry ([k] -> [1, k]; pads [b, e] -> [0, b, 0, e] with `unit` = 0).
void liftAttr(Node &n, const char *key, int64_t unit) {
  if (!n.hasAttr(key))
    return;
  std::vector<int64_t> v = n.attrInts(key), out;
  for (int64_t x : v) {
    out.push_back(unit);
    out.push_back(x);
  }
  n.attrs[key] = out;
}

// Moves the Squeeze `sq` after the one-input elementwise ops (Relu, Clip, Sigmoid, ...) that
// alone read its output, so that they run on the 2-D value and fusion can make them the 2-D op's
// epilogue (and a Squeeze -> Unsqueeze before the next lifted op can cancel).
void sinkSqueeze(Graph &g, NodeId sq) {
  for (;;) {
    ValueId y = g.node(sq).outputs[0];
    std::vector<NodeId> uses = g.consumers(y);
    if (g.isGraphOutput(y) || uses.size() != 1)
      return;
    const Node &u = g.node(uses[0]);
    if (!isElementwiseOp(u.kind) || u.inputs.size() != 1 || u.outputs.size() != 1)
      return;
    const NodeId uid = u.id;
    ValueId y2 = g.node(sq).inputs[0], z = u.outputs[0];
    ValueId z2 = g.addValue(g.value(z).name + ".2d", g.value(y2).shape, g.value(z).dtype);
    g.node(uid).inputs[0] = y2;
    g.node(uid).outputs[0] = z2;
    g.value(z2).producer = uid;
    g.node(sq).inputs[0] = z2;
    g.node(sq).outputs[0] = z;
    g.value(z).producer = sq;
    g.value(y).producer = -1; // no longer computed or read
  }
}

} // namespace

int windowOpsTo2d(Graph &g) {
  int rewritten = 0;
  for (NodeId id : g.topoOrder()) {
    if (!isLiftable(g, g.node(id)))
      continue;
    // Copies: adding nodes and values below may reallocate the graph's storage.
    const std::string name = g.node(id).name;
    const OpKind kind = g.node(id).kind;
    ValueId x = g.node(id).inputs[0], y = g.node(id).outputs[0];
    NPUC_ASSERT(g.value(y).shape.size() == 3, "a window op keeps its input's rank");
    ValueId x2 = unitHeight(g, x, name + ".in2d");
    g.node(id).inputs[0] = x2;
    if (kind == OpKind::Conv)
      g.node(id).inputs[1] = unitHeight(g, g.node(id).inputs[1], name + ".weight2d");
    Node &n = g.node(id);
    if (kind != OpKind::GlobalAveragePool) {
      liftAttr(n, "kernel_shape", 1);
      liftAttr(n, "strides", 1);
      liftAttr(n, "dilations", 1);
      std::vector<int64_t> p = n.attrInts("pads", {0, 0});
      NPUC_ASSERT(p.size() == 2, "the frontend gives a 1-D window two pads");
      n.attrs["pads"] = std::vector<int64_t>{0, p[0], 0, p[1]};
    }
    Shape ys = g.value(y).shape;
    ys.insert(ys.begin() + 2, 1);
    ValueId y2 = g.addValue(name + ".out2d", ys, g.value(y).dtype);
    g.value(y).producer = -1;
    g.node(id).outputs[0] = y2;
    g.value(y2).producer = id;
    NodeId sq = g.addNode(OpKind::Squeeze, name + "_squeeze", {y2}, {y});
    g.node(sq).attrs["axes"] = std::vector<int64_t>{2};
    sinkSqueeze(g, sq);
    ++rewritten;
  }
  return rewritten;
}

} // namespace npuc::graph
