// ShapeIndexed.cpp - shape rules of the operators that move data by an index tensor (GatherND,
// ScatterElements, ScatterND, OneHot, ReverseSequence) and of those whose output shape depends
// on input values (NonZero, Unique, NonMaxSuppression), which npuc supports only on constant
// inputs, evaluating them at import (ShapeInternal.h).
#include "graph/Reference.h"
#include "graph/ShapeInternal.h"

#include "support/Error.h"

#include <algorithm>

namespace npuc::graph::shape {

OutTypes inferGatherND(const Graph &g, Node &n) {
  const Shape &x = inShape(g, n, 0), &idx = inShape(g, n, 1);
  int64_t b = n.attrInt("batch_dims", 0);
  if (x.empty() || idx.empty())
    fail("{}: data and indices must have rank >= 1", where(n));
  auto bu = static_cast<size_t>(b);
  if (b < 0 || bu >= std::min(x.size(), idx.size()))
    fail("{}: attribute batch_dims={} must be below both ranks ({} and {})", where(n), b, x.size(),
         idx.size());
  for (size_t d = 0; d < bu; ++d)
    if (x[d] != idx[d])
      fail("{}: batch dimension {} has extent {} in data but {} in indices", where(n), d, x[d],
           idx[d]);
  int64_t m = idx.back();
  if (m < 1 || static_cast<size_t>(m) > x.size() - bu)
    fail("{}: the last indices dimension is {}, it must be in [1, {}]", where(n), m, x.size() - bu);
  Shape out(idx.begin(), idx.end() - 1);
  out.insert(out.end(), x.begin() + static_cast<long>(bu + static_cast<size_t>(m)), x.end());
  return {{out, inType(g, n, 0)}};
}

OutTypes inferScatterElements(const Graph &g, Node &n) {
  const Shape &x = inShape(g, n, 0), &idx = inShape(g, n, 1), &upd = inShape(g, n, 2);
  axisAttr(n, "axis", x.size());
  if (idx.size() != x.size() || upd != idx)
    fail("{}: indices {} and updates {} must have one shape, of data's rank {}", where(n),
         shapeToString(idx), shapeToString(upd), x.size());
  for (size_t d = 0; d < x.size(); ++d)
    if (idx[d] > x[d])
      fail("{}: indices shape {} exceeds data shape {}", where(n), shapeToString(idx),
           shapeToString(x));
  return {{x, inType(g, n, 0)}};
}

OutTypes inferScatterND(const Graph &g, Node &n) {
  const Shape &x = inShape(g, n, 0), &idx = inShape(g, n, 1), &upd = inShape(g, n, 2);
  if (x.empty() || idx.empty() || idx.back() < 1 || static_cast<size_t>(idx.back()) > x.size())
    fail("{}: the last indices dimension ({}) must be in [1, data rank {}]", where(n),
         idx.empty() ? 0 : idx.back(), x.size());
  Shape want(idx.begin(), idx.end() - 1);
  want.insert(want.end(), x.begin() + idx.back(), x.end());
  if (upd != want)
    fail("{}: updates have shape {}, expected {}", where(n), shapeToString(upd),
         shapeToString(want));
  return {{x, inType(g, n, 0)}};
}

OutTypes inferOneHot(const Graph &g, Node &n) {
  Shape out = inShape(g, n, 0);
  int64_t depth = n.attrInt("depth", 0);
  if (depth < 1)
    fail("{}: depth {} must be positive", where(n), depth);
  if (numElements(inShape(g, n, 1)) != 2)
    fail("{}: values must hold two elements (off, on), got shape {}", where(n),
         shapeToString(inShape(g, n, 1)));
  int64_t axis = axisAttr(n, "axis", out.size() + 1);
  out.insert(out.begin() + axis, depth);
  return {{out, inType(g, n, 1)}};
}

OutTypes inferReverseSequence(const Graph &g, Node &n) {
  const Shape &x = inShape(g, n, 0);
  if (x.size() < 2)
    fail("{}: input must have rank >= 2, got {}", where(n), shapeToString(x));
  int64_t ba = n.attrInt("batch_axis", 1), ta = n.attrInt("time_axis", 0);
  if (ba < 0 || ba > 1 || ta < 0 || ta > 1 || ba == ta)
    fail("{}: batch_axis={} and time_axis={} must be 0 and 1 in some order", where(n), ba, ta);
  if (inShape(g, n, 1) != Shape{x[static_cast<size_t>(ba)]})
    fail("{}: sequence_lens has shape {}, expected [{}]", where(n), shapeToString(inShape(g, n, 1)),
         x[static_cast<size_t>(ba)]);
  return {{x, inType(g, n, 0)}};
}

// NonZero, Unique, NonMaxSuppression: evaluated on their constant inputs, here for the shapes
// and again by import-time folding for the values.
OutTypes inferValueShaped(const Graph &g, Node &n) {
  std::vector<HostTensor> tmp;
  tmp.reserve(n.inputs.size());
  std::vector<const HostTensor *> ins;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    if (n.inputs[i] == kNoValue) {
      ins.push_back(nullptr);
      continue;
    }
    const Value &v = g.value(n.inputs[i]);
    if (!v.isConstant())
      fail("{}: output shape depends on the values of input {} ('{}'); npuc compiles static "
           "shapes, so it must be a constant",
           where(n), i, v.name);
    ins.push_back(&tmp.emplace_back(constantTensor(v)));
  }
  std::vector<HostTensor> outs = evalNode(g, n, ins);
  OutTypes types;
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    NPUC_ASSERT(i < outs.size(), "a value-shaped kernel returns every output");
    bool data = n.kind == OpKind::Unique && i == 0;
    types.push_back({outs[i].shape, data ? inType(g, n, 0) : DType::I64});
  }
  return types;
}

} // namespace npuc::graph::shape
