// ShapeInference.cpp - shape inference's dispatch: each node's rule is the Shape column of its
// Ops.def row (the rules are in ShapeNN.cpp, ShapeMath.cpp and ShapeData.cpp), and the helpers
// the rules share. Kept independent of ONNX's own inference so that every value gets a static
// shape we computed.
#include "graph/ShapeInference.h"
#include "graph/ShapeInternal.h"

#include "support/Error.h"

#include <algorithm>
#include <iterator>

namespace npuc::graph {

namespace shape {

void requireRank(const Graph &g, const Node &n, size_t i, size_t rank) {
  const Shape &s = inShape(g, n, i);
  if (s.size() != rank)
    fail("{}: input {} has shape {} but a rank-{} tensor is required", where(n), i,
         shapeToString(s), rank);
}

int64_t normAxis(const Node &n, int64_t axis, size_t rank) {
  int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r)
    fail("{}: axis {} out of range for rank {}", where(n), axis, rank);
  return axis < 0 ? axis + r : axis;
}

int64_t axisAttr(const Node &n, const char *key, size_t rank) {
  int64_t a = n.attrInt(key, 0), r = static_cast<int64_t>(rank);
  if (a < 0 || a >= r)
    fail("{}: {} {} out of range for rank {}", where(n), key, a, rank);
  return a;
}

DType castTarget(const Node &n, int64_t to) {
  std::optional<DType> t = dtypeFromOnnx(to);
  if (!t)
    fail("{}: attribute to={} not supported (float, double, float16, the integer types and bool "
         "are)",
         where(n), to);
  return *t;
}

OutTypes inferUnsupported(const Graph &, Node &n) {
  fail("{}: unsupported operator", where(n));
}

} // namespace shape

namespace {

using ShapeRule = shape::OutTypes (*)(const Graph &, Node &);

// One rule per OpKind, in Ops.def order.
constexpr ShapeRule kShapeRules[] = {
#define NPUC_OP(Kind, Name, Family, Pattern, Traits, Shape, Ref, Lower) &shape::infer##Shape,
#include "graph/Ops.def"
};
static_assert(std::size(kShapeRules) == kNumOpKinds, "one shape rule per OpKind");

} // namespace

Shape broadcastShapes(const Shape &a, const Shape &b, const std::string &what) {
  size_t r = std::max(a.size(), b.size());
  Shape out(r, 1);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1)
      fail("{}: shapes {} and {} are not broadcastable", what, shapeToString(a), shapeToString(b));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

void inferNodeShape(Graph &g, NodeId id) {
  Node &n = g.node(id);
  shape::OutTypes outs = kShapeRules[static_cast<size_t>(n.kind)](g, n);
  if (outs.size() > n.outputs.size())
    fail("{}: the node declares {} outputs, the operator produces {}", shape::where(n),
         n.outputs.size(), outs.size());
  if (outs.size() < n.outputs.size())
    fail("{}: output {} is not supported", shape::where(n), outs.size());
  for (size_t i = 0; i < outs.size(); ++i) {
    int64_t elements = 1;
    for (int64_t d : outs[i].shape) {
      NPUC_ASSERT(d >= 0, "inferred dimensions are non-negative");
      // Every rule's dims are in range, but their product is checked here once for all of them
      // (numElements would wrap: a hostile model's Expand or Resize to huge extents).
      if (__builtin_mul_overflow(elements, d, &elements))
        fail("{}: output {} would have shape {}, more elements than int64 holds",
             shape::where(n), i, shapeToString(outs[i].shape));
    }
    Value &v = g.value(n.outputs[i]);
    v.shape = std::move(outs[i].shape);
    v.dtype = outs[i].dtype;
  }
}

} // namespace npuc::graph
