// Simplify.cpp - shape re-inference and the cleanup pass: drop no-op nodes, fold constant
// subgraphs with the reference kernels (the same semantics the oracle uses), simplify layout ops
// (LayoutSimplify.cpp), remove dead code.
#include "graph/Passes.h"
#include "graph/Reference.h"
#include "graph/ShapeInference.h"

#include "support/Error.h"

#include <cmath>

namespace npuc::graph {

void inferShapes(Graph &g) {
  for (NodeId n : g.topoOrder())
    inferNodeShape(g, n);
}

namespace {

bool isNoOp(const Graph &g, const Node &n) {
  if (n.kind == OpKind::Identity || n.kind == OpKind::Dropout)
    return true;
  if (n.kind == OpKind::Pad) {
    for (int64_t p : n.attrInts("pads"))
      if (p != 0)
        return false;
    return true;
  }
  return false;
}

// Node whose every (present) input is constant and that we know how to evaluate.
bool isFoldable(const Graph &g, const Node &n) {
  if (n.inputs.empty())
    return false;
  if (n.kind == OpKind::Shape)
    return true; // static shapes: the result never depends on the input's contents
  for (ValueId in : n.inputs)
    if (in != kNoValue && !g.value(in).isConstant())
      return false;
  return true;
}

} // namespace

void simplify(Graph &g) {
  for (NodeId id : g.topoOrder()) {
    Node &n = g.node(id);
    if (isNoOp(g, n)) {
      // Dropout's optional mask output must be unused for the node to disappear.
      for (size_t i = 1; i < n.outputs.size(); ++i)
        if (!g.consumers(n.outputs[i]).empty() || g.isGraphOutput(n.outputs[i]))
          fail("node '{}' ({}): output {} is used; only inference-mode use is supported", n.name,
               n.kind, i);
      n.dead = true;
      g.replaceAllUses(n.outputs[0], n.inputs.at(0));
      continue;
    }
    if (!g.isGraphOutput(n.outputs[0]))
      foldConstantNode(g, id);
  }
  simplifyLayoutOps(g); // removes dead nodes too
}

bool foldConstantNode(Graph &g, NodeId id) {
  Node &n = g.node(id);
  if (n.dead || !isFoldable(g, n))
    return false;
  std::vector<HostTensor> tmp;
  std::vector<const HostTensor *> ins;
  tmp.reserve(n.inputs.size());
  for (ValueId in : n.inputs) {
    if (in == kNoValue || n.kind == OpKind::Shape) { // Shape only needs its input's static shape
      ins.push_back(in == kNoValue ? nullptr : &tmp.emplace_back(g.value(in).shape));
      continue;
    }
    tmp.push_back(constantTensor(g.value(in)));
    ins.push_back(&tmp.back());
  }
  std::vector<HostTensor> outs = evalNode(g, n, ins);
  if (outs.size() < n.outputs.size())
    return false; // a kernel that leaves trailing outputs out (Dropout's mask) stays a node
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    Value &v = g.value(n.outputs[k]);
    if (v.dtype == DType::F32) {
      v.f32 = std::make_shared<const std::vector<float>>(std::move(outs[k].data));
    } else {
      std::vector<int64_t> iv(outs[k].data.size());
      for (size_t i = 0; i < iv.size(); ++i)
        iv[i] = std::llround(outs[k].data[i]);
      v.i64 = std::make_shared<const std::vector<int64_t>>(std::move(iv));
    }
    v.producer = -1;
  }
  n.dead = true;
  return true;
}

} // namespace npuc::graph
