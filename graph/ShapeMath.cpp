// ShapeMath.cpp - shape rules of the elementwise and broadcasting maps, the reductions and the
// ops that work along one axis (ShapeInternal.h).
#include "graph/ShapeInference.h"
#include "graph/ShapeInternal.h"

#include "support/Error.h"

#include <set>

namespace npuc::graph::shape {

// The core activations, Identity, and the extended ops along an axis (LpNormalization,
// LogSoftmax, Hardmax, CumSum): input 0's shape and dtype.
OutTypes inferSameAsInput(const Graph &g, Node &n) {
  return {{inShape(g, n, 0), firstInputType(g, n)}};
}

// Dropout (inference mode): the data unchanged, and the optional mask output all true.
OutTypes inferDropout(const Graph &g, Node &n) {
  OutTypes outs = inferSameAsInput(g, n);
  if (n.outputs.size() > 1)
    outs.push_back({outs[0].shape, DType::Bool});
  return outs;
}

OutTypes inferSoftmax(const Graph &g, Node &n) {
  const Shape &x = inShape(g, n, 0);
  normAxis(n, n.attrInt("axis", -1), x.size());
  return {{x, firstInputType(g, n)}};
}

// Add, Sub, Mul, Div, Max, Min: any number of operands broadcast together.
OutTypes inferArith(const Graph &g, Node &n) {
  Shape out = inShape(g, n, 0);
  for (size_t i = 1; i < n.inputs.size(); ++i)
    out = broadcastShapes(out, inShape(g, n, i), where(n));
  return {{out, firstInputType(g, n)}};
}

// The extended unary maps: bool for predicates, the input's dtype for the sign-preserving maps
// (exact on integers), float for the rest.
OutTypes inferUnaryMap(const Graph &g, Node &n) {
  const OpKind op = n.kind;
  DType t = hasTrait(op, optrait::kBoolResult) ? DType::Bool
            : (op == OpKind::Neg || op == OpKind::Abs || op == OpKind::Sign)
                ? inType(g, n, 0)
                : floatResultType(g, n);
  return {{inShape(g, n, 0), t}};
}

// The extended broadcasting maps: two operands (Where three, Sum and Mean any number).
OutTypes inferBroadcastMap(const Graph &g, Node &n) {
  const OpKind op = n.kind;
  if (n.inputs.empty())
    fail("{}: no inputs", where(n));
  if (op == OpKind::Where && n.inputs.size() != 3)
    fail("{}: expects 3 inputs, has {}", where(n), n.inputs.size());
  if (op != OpKind::Where && op != OpKind::Sum && op != OpKind::Mean && n.inputs.size() != 2)
    fail("{}: expects 2 inputs, has {}", where(n), n.inputs.size());
  Shape s = inShape(g, n, 0);
  for (size_t i = 1; i < n.inputs.size(); ++i)
    s = broadcastShapes(s, inShape(g, n, i), where(n));
  if (op == OpKind::Where)
    requireSameType(g, n, 1, 2);
  DType t = hasTrait(op, optrait::kBoolResult) ? DType::Bool
            : op == OpKind::Where              ? inType(g, n, 1)
                                               : inType(g, n, 0);
  return {{s, t}};
}

OutTypes inferCast(const Graph &g, Node &n) {
  return {{inShape(g, n, 0), castTarget(n, n.attrInt("to", 0))}};
}

// Reduce* over the sorted `axes` attribute (all axes when empty), ArgMax/ArgMin over `axis`.
OutTypes inferReduce(const Graph &g, Node &n) {
  const Shape &x = inShape(g, n, 0);
  bool keep = n.attrInt("keepdims", 1) != 0;
  bool arg = n.kind == OpKind::ArgMax || n.kind == OpKind::ArgMin;
  std::set<int64_t> axes;
  if (arg) {
    axes.insert(axisAttr(n, "axis", x.size()));
  } else {
    for (int64_t a : n.attrInts("axes")) {
      if (a < 0 || a >= static_cast<int64_t>(x.size()))
        fail("{}: axis {} out of range for rank {}", where(n), a, x.size());
      axes.insert(a);
    }
    if (axes.empty())
      for (size_t d = 0; d < x.size(); ++d)
        axes.insert(static_cast<int64_t>(d));
  }
  Shape out;
  for (size_t d = 0; d < x.size(); ++d) {
    bool red = axes.count(static_cast<int64_t>(d)) != 0;
    if (red && x[d] == 0)
      fail("{}: reducing an empty axis {}", where(n), d);
    if (!red)
      out.push_back(x[d]);
    else if (keep)
      out.push_back(1);
  }
  return {{out, arg ? DType::I64 : inType(g, n, 0)}};
}

// TopK: the k largest (or smallest) values along `axis` and their indices.
OutTypes inferTopK(const Graph &g, Node &n) {
  Shape x = inShape(g, n, 0);
  int64_t axis = axisAttr(n, "axis", x.size()), k = n.attrInt("k", -1);
  if (k < 0 || k > x[static_cast<size_t>(axis)])
    fail("{}: k={} out of range for axis extent {}", where(n), k, x[static_cast<size_t>(axis)]);
  x[static_cast<size_t>(axis)] = k;
  return {{x, inType(g, n, 0)}, {x, DType::I64}};
}

OutTypes inferTrilu(const Graph &g, Node &n) {
  const Shape &x = inShape(g, n, 0);
  if (x.size() < 2)
    fail("{}: input must be at least 2-D", where(n));
  return {{x, inType(g, n, 0)}};
}

} // namespace npuc::graph::shape
