// SinkScale.cpp - scalar operand scales of MatMuls moved onto the product (see SinkScale.h).
#include "graph/SinkScale.h"

#include "support/Error.h"

#include <algorithm>

namespace npuc::graph {

namespace {

// The scale feeding operand `slot` of MatMul `m`: the Mul/Div node and its non-constant input,
// or -1 when the operand is not a sinkable scale.
NodeId scaleOf(const Graph &g, const Node &m, size_t slot, ValueId &x, ValueId &c) {
  ValueId v = m.inputs[slot];
  NodeId p = g.value(v).producer;
  // One consumer reading it once: MatMul(v, v) would need the scale squared (consumers() lists
  // a node once however many of its inputs read v).
  if (p < 0 || g.isGraphOutput(v) || g.consumers(v).size() != 1 ||
      std::count(m.inputs.begin(), m.inputs.end(), v) != 1)
    return -1;
  const Node &s = g.node(p);
  if ((s.kind != OpKind::Mul && s.kind != OpKind::Div) || s.inputs.size() != 2 ||
      s.outputs.size() != 1)
    return -1;
  auto scalar = [&](ValueId u) {
    return u != kNoValue && g.value(u).f32 && numElements(g.value(u).shape) == 1;
  };
  size_t ci = scalar(s.inputs[1]) ? 1 : (s.kind == OpKind::Mul && scalar(s.inputs[0])) ? 0 : 2;
  if (ci == 2)
    return -1;
  x = s.inputs[1 - ci];
  c = s.inputs[ci];
  // The scale must not broadcast x to another shape (a [1,1] constant on a vector would).
  if (x == kNoValue || g.value(x).shape != g.value(v).shape || g.value(x).dtype != DType::F32)
    return -1;
  return p;
}

} // namespace

int sinkScalesPastMatMul(Graph &g) {
  int moved = 0;
  for (NodeId id : g.topoOrder()) {
    if (g.node(id).kind != OpKind::MatMul)
      continue;
    for (size_t slot = 0; slot < 2; ++slot) {
      ValueId x = kNoValue, c = kNoValue;
      NodeId s = scaleOf(g, g.node(id), slot, x, c);
      if (s < 0)
        continue;
      // Copies: adding values and nodes below may reallocate the graph's storage.
      const OpKind op = g.node(s).kind;
      const std::string name = g.node(s).name;
      const ValueId y = g.node(id).outputs[0];
      const ValueId t = g.addValue(g.value(y).name + ".unscaled", g.value(y).shape, DType::F32);
      g.node(s).dead = true;
      g.value(g.node(s).outputs[0]).producer = -1;
      g.node(id).inputs[slot] = x;
      g.node(id).outputs[0] = t;
      g.value(t).producer = id;
      g.value(y).producer = -1;
      g.addNode(op, name, {t, c}, {y});
      ++moved;
    }
  }
  g.removeDeadNodes();
  return moved;
}

} // namespace npuc::graph
