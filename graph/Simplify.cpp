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

// Gather of one constant position along its axis (the class token of ViT and BERT, h[:, 0]) as
// the Slice of that position, Reshaped without the axis when the index is a scalar: layout ops
// where a Gather indexes by data. An index out of range is left to the Gather's own error.
bool gatherAsSlice(Graph &g, NodeId id) {
  const Node &n = g.node(id);
  if (n.kind != OpKind::Gather || n.inputs.size() != 2 || g.value(n.inputs[0]).isConstant())
    return false;
  const Value &idx = g.value(n.inputs[1]);
  if (!idx.i64 || idx.i64->size() != 1 || idx.shape.size() > 1)
    return false;
  const Shape x = g.value(n.inputs[0]).shape;
  const int64_t rank = static_cast<int64_t>(x.size());
  int64_t axis = n.attrInt("axis", 0);
  axis += axis < 0 ? rank : 0;
  if (axis < 0 || axis >= rank)
    return false;
  const int64_t dim = x[static_cast<size_t>(axis)];
  int64_t at = (*idx.i64)[0];
  at += at < 0 ? dim : 0;
  if (at < 0 || at >= dim)
    return false;
  std::vector<int64_t> starts(x.size(), 0), ends(x.begin(), x.end()), steps(x.size(), 1);
  starts[static_cast<size_t>(axis)] = at;
  ends[static_cast<size_t>(axis)] = at + 1;
  Shape sliced = x;
  sliced[static_cast<size_t>(axis)] = 1;
  const bool scalar = idx.shape.empty();
  const std::string name = n.name;
  const ValueId y = n.outputs[0];
  ValueId s = y;
  if (scalar) { // the Slice writes a new value; a Reshape drops the axis into y
    s = g.addValue(g.value(y).name + ".slice", sliced, g.value(y).dtype);
    g.value(y).producer = -1;
    g.value(s).producer = id;
  }
  Node &m = g.node(id);
  m.kind = OpKind::Slice;
  m.inputs.resize(1);
  m.outputs[0] = s;
  m.attrs.clear();
  m.attrs["starts"] = starts;
  m.attrs["ends"] = ends;
  m.attrs["steps"] = steps;
  if (scalar) {
    const Shape out = g.value(y).shape;
    ValueId shape = g.addConstantI64(name + "/gather_shape", {static_cast<int64_t>(out.size())},
                                     std::vector<int64_t>(out.begin(), out.end()));
    g.addNode(OpKind::Reshape, name + "/gather_reshape", {s, shape}, {y});
  }
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
    if (g.isGraphOutput(n.outputs[0]) || !foldConstantNode(g, id))
      gatherAsSlice(g, id); // keeps its output value: a graph output stays one
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
