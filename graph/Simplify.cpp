// Simplify.cpp - shape re-inference and the cleanup pass: drop no-op nodes, fold constant
// subgraphs with the reference kernels (the same semantics the oracle uses), simplify layout ops
// (LayoutSimplify.cpp), remove dead code.
#include "graph/Passes.h"
#include "graph/Reference.h"
#include "graph/ShapeInference.h"

#include "support/Error.h"

#include <algorithm>
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
// Folding must not make the model much larger than what it folds: a node whose output has more
// than max(2^24, its inputs' total) elements stays a node. A real model's DequantizeLinear of its
// weights still folds; a hostile model's Pad, Expand or ConstantOfShape of a few bytes asking for
// gigabytes (a fuzzer's Pad of 16 GiB) no longer allocates them at import.
constexpr int64_t kFoldGrowth = int64_t{1} << 24;

bool isFoldable(const Graph &g, const Node &n) {
  if (n.inputs.empty())
    return false;
  if (n.kind == OpKind::Shape)
    return true; // static shapes: the result never depends on the input's contents
  int64_t inputs = 0;
  for (ValueId in : n.inputs) {
    if (in != kNoValue && !g.value(in).isConstant())
      return false;
    if (in != kNoValue)
      inputs += numElements(g.value(in).shape);
  }
  for (ValueId out : n.outputs)
    if (numElements(g.value(out).shape) > std::max(kFoldGrowth, inputs))
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
    if (in == kNoValue || n.kind == OpKind::Shape) { // Shape reads only its input's shape
      if (in == kNoValue) {
        ins.push_back(nullptr);
        continue;
      }
      HostTensor &t = tmp.emplace_back(); // no elements: the input may be any size
      t.shape = g.value(in).shape;
      ins.push_back(&t);
      continue;
    }
    tmp.push_back(typedConstant(g.value(in)));
    ins.push_back(&tmp.back());
  }
  std::vector<HostTensor> outs = evalNode(g, n, ins);
  if (outs.size() < n.outputs.size())
    return false; // a kernel that leaves trailing outputs out (Dropout's mask) stays a node
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    Value &v = g.value(n.outputs[k]);
    NPUC_ASSERT(outs[k].dtype == v.dtype, "evalNode returns the inferred dtype");
    if (outs[k].isInt())
      v.i64 = std::make_shared<const std::vector<int64_t>>(std::move(outs[k].ints));
    else
      v.f32 = std::make_shared<const std::vector<float>>(std::move(outs[k].data));
    v.producer = -1;
  }
  n.dead = true;
  return true;
}

} // namespace npuc::graph
