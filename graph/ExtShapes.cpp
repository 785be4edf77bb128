// ExtShapes.cpp - output shapes and dtypes of the extended operator set (ExtOps.h). Attributes
// are in the frontend's normalised form; violations of an op's shape contract are user errors
// naming the node.
#include "graph/ExtOps.h"
#include "graph/ShapeInference.h"
#include "graph/ShapeInternal.h"

#include "support/Error.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace npuc::graph {

namespace {

using shape::inShape;
using shape::where;

DType inType(const Graph &g, const Node &n, size_t i) {
  return g.value(n.inputs.at(i)).dtype;
}

int64_t axisAttr(const Node &n, const char *key, size_t rank) {
  int64_t a = n.attrInt(key, 0), r = static_cast<int64_t>(rank);
  if (a < 0 || a >= r)
    fail("{}: {} {} out of range for rank {}", where(n), key, a, rank);
  return a;
}

bool boolResult(OpKind op) {
  return op == OpKind::Not || op == OpKind::IsNaN || op == OpKind::IsInf || op == OpKind::Equal ||
         op == OpKind::Less || op == OpKind::Greater || op == OpKind::LessOrEqual ||
         op == OpKind::GreaterOrEqual || op == OpKind::And || op == OpKind::Or || op == OpKind::Xor;
}

Shape reduceShape(const Graph &g, const Node &n) {
  const Shape &x = inShape(g, n, 0);
  bool keep = n.attrInt("keepdims", 1) != 0;
  std::set<int64_t> axes;
  if (n.kind == OpKind::ArgMax || n.kind == OpKind::ArgMin) {
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
  return out;
}

DType castTarget(const Node &n) {
  // ONNX TensorProto data types: FLOAT=1, UINT8=2, INT8=3, INT16=5, INT32=6, INT64=7, BOOL=9,
  // FLOAT16=10, DOUBLE=11.
  int64_t to = n.attrInt("to", 0);
  switch (to) {
  case 1:
  case 10:
  case 11:
    return DType::F32;
  case 2:
  case 3:
  case 5:
  case 6:
  case 7:
    return DType::I64;
  case 9:
    return DType::Bool;
  default:
    fail("{}: attribute to={} not supported (float, double, integer and bool are)", where(n), to);
  }
}

} // namespace

bool inferExtShape(Graph &g, Node &n) {
  const OpKind op = n.kind;
  std::vector<Shape> outs;
  std::vector<DType> types;
  auto one = [&](Shape s, DType t) {
    outs.push_back(std::move(s));
    types.push_back(t);
  };
  if (isExtUnaryOp(op)) {
    DType t = boolResult(op)                                                   ? DType::Bool
              : (op == OpKind::Neg || op == OpKind::Abs || op == OpKind::Sign) ? inType(g, n, 0)
                                                                               : DType::F32;
    one(inShape(g, n, 0), t);
  } else if (isExtBroadcastOp(op)) {
    if (n.inputs.empty())
      fail("{}: no inputs", where(n));
    if (op == OpKind::Where && n.inputs.size() != 3)
      fail("{}: expects 3 inputs, has {}", where(n), n.inputs.size());
    if (op != OpKind::Where && op != OpKind::Sum && op != OpKind::Mean && n.inputs.size() != 2)
      fail("{}: expects 2 inputs, has {}", where(n), n.inputs.size());
    Shape s = inShape(g, n, 0);
    for (size_t i = 1; i < n.inputs.size(); ++i)
      s = broadcastShapes(s, inShape(g, n, i), where(n));
    DType t = boolResult(op)        ? DType::Bool
              : op == OpKind::Where ? inType(g, n, 1)
                                    : inType(g, n, 0);
    one(s, t);
  } else if (isReduceOp(op)) {
    one(reduceShape(g, n),
        op == OpKind::ArgMax || op == OpKind::ArgMin ? DType::I64 : inType(g, n, 0));
  } else if (op == OpKind::LayerNormalization || op == OpKind::InstanceNormalization ||
             op == OpKind::LpNormalization || op == OpKind::LRN || op == OpKind::LogSoftmax ||
             op == OpKind::Hardmax || op == OpKind::CumSum || op == OpKind::Trilu) {
    const Shape &x = inShape(g, n, 0);
    if ((op == OpKind::InstanceNormalization || op == OpKind::LRN) && x.size() < 3)
      fail("{}: input must be at least 3-D (N, C, spatial...), got {}", where(n), shapeToString(x));
    if (op == OpKind::InstanceNormalization)
      for (size_t i = 1; i < 3; ++i)
        if (inShape(g, n, i) != Shape{x[1]})
          fail("{}: input {} has shape {}, expected [{}]", where(n), i,
               shapeToString(inShape(g, n, i)), x[1]);
    if (op == OpKind::LayerNormalization) {
      int64_t axis = axisAttr(n, "axis", x.size());
      Shape norm(x.begin() + axis, x.end());
      for (size_t i = 1; i < n.inputs.size(); ++i)
        if (n.inputs[i] != kNoValue && broadcastShapes(inShape(g, n, i), norm, where(n)) != norm)
          fail("{}: input {} shape {} does not broadcast to the normalised shape {}", where(n), i,
               shapeToString(inShape(g, n, i)), shapeToString(norm));
    }
    if (op == OpKind::Trilu && x.size() < 2)
      fail("{}: input must be at least 2-D", where(n));
    one(x, inType(g, n, 0));
  } else if (op == OpKind::GlobalMaxPool || op == OpKind::GlobalLpPool) {
    Shape x = inShape(g, n, 0);
    if (x.size() < 3)
      fail("{}: input must be at least 3-D, got {}", where(n), shapeToString(x));
    std::fill(x.begin() + 2, x.end(), 1);
    one(x, DType::F32);
  } else if (op == OpKind::ConvTranspose) {
    const Shape &x = inShape(g, n, 0), &w = inShape(g, n, 1);
    if (x.size() != 4 || w.size() != 4)
      fail("{}: only 2-D (NCHW) inputs and 4-D weights are supported", where(n));
    int64_t group = n.attrInt("group", 1);
    if (group <= 0 || x[1] != w[0] || x[1] % group != 0)
      fail("{}: input channels {} do not match weight shape {} with group {}", where(n), x[1],
           shapeToString(w), group);
    auto s = n.attrInts("strides"), d = n.attrInts("dilations"), p = n.attrInts("pads");
    auto op2 = n.attrInts("output_padding");
    Shape out{x[0], w[1] * group, 0, 0};
    for (size_t i = 0; i < 2; ++i) {
      out[2 + i] = (x[2 + i] - 1) * s[i] - p[i] - p[i + 2] + d[i] * (w[2 + i] - 1) + 1 + op2[i];
      if (out[2 + i] <= 0)
        fail("{}: output extent {} along spatial axis {} is not positive", where(n), out[2 + i], i);
    }
    if (n.inputs.size() > 2 && n.inputs[2] != kNoValue && inShape(g, n, 2) != Shape{out[1]})
      fail("{}: bias shape {} must be [{}]", where(n), shapeToString(inShape(g, n, 2)), out[1]);
    one(out, DType::F32);
  } else if (op == OpKind::Split) {
    const Shape &x = inShape(g, n, 0);
    int64_t axis = axisAttr(n, "axis", x.size());
    auto split = n.attrInts("split");
    if (split.size() != n.outputs.size())
      fail("{}: {} split sizes for {} outputs", where(n), split.size(), n.outputs.size());
    int64_t total = 0;
    for (int64_t s : split) {
      if (s < 0)
        fail("{}: negative split size {}", where(n), s);
      Shape o = x;
      o[static_cast<size_t>(axis)] = s;
      one(o, inType(g, n, 0));
      total += s;
    }
    if (total != x[static_cast<size_t>(axis)])
      fail("{}: split sizes sum to {} but axis {} has extent {}", where(n), total, axis,
           x[static_cast<size_t>(axis)]);
  } else if (op == OpKind::Slice) {
    const Shape &x = inShape(g, n, 0);
    auto b = n.attrInts("starts"), e = n.attrInts("ends"), st = n.attrInts("steps");
    if (b.size() != x.size() || e.size() != x.size() || st.size() != x.size())
      fail("{}: starts/ends/steps must have one entry per axis", where(n));
    Shape o;
    for (size_t d = 0; d < x.size(); ++d) {
      if (st[d] == 0)
        fail("{}: step 0 on axis {}", where(n), d);
      int64_t len =
          st[d] > 0 ? (e[d] - b[d] + st[d] - 1) / st[d] : (b[d] - e[d] - st[d] - 1) / -st[d];
      o.push_back(std::max<int64_t>(len, 0));
    }
    one(o, inType(g, n, 0));
  } else if (op == OpKind::Expand) {
    one(broadcastShapes(inShape(g, n, 0), n.attrInts("shape"), where(n)), inType(g, n, 0));
  } else if (op == OpKind::Tile) {
    Shape x = inShape(g, n, 0);
    auto r = n.attrInts("repeats");
    if (r.size() != x.size())
      fail("{}: repeats has {} entries for rank {}", where(n), r.size(), x.size());
    for (size_t d = 0; d < x.size(); ++d) {
      if (r[d] < 0)
        fail("{}: negative repeat {}", where(n), r[d]);
      x[d] *= r[d];
    }
    one(x, inType(g, n, 0));
  } else if (op == OpKind::Resize) {
    Shape s = n.attrInts("sizes");
    if (s.size() != inShape(g, n, 0).size())
      fail("{}: output sizes have rank {}, input has rank {}", where(n), s.size(),
           inShape(g, n, 0).size());
    one(s, DType::F32);
  } else if (op == OpKind::DepthToSpace || op == OpKind::SpaceToDepth) {
    Shape x = inShape(g, n, 0);
    int64_t b = n.attrInt("blocksize", 0);
    if (x.size() != 4 || b <= 0)
      fail("{}: needs a 4-D input and a positive blocksize", where(n));
    if (op == OpKind::DepthToSpace) {
      if (x[1] % (b * b))
        fail("{}: channels {} not divisible by blocksize^2 = {}", where(n), x[1], b * b);
      one({x[0], x[1] / (b * b), x[2] * b, x[3] * b}, inType(g, n, 0));
    } else {
      if (x[2] % b || x[3] % b)
        fail("{}: spatial extent {}x{} not divisible by blocksize {}", where(n), x[2], x[3], b);
      one({x[0], x[1] * b * b, x[2] / b, x[3] / b}, inType(g, n, 0));
    }
  } else if (op == OpKind::ConstantOfShape) {
    const Value &s = g.value(n.inputs.at(0));
    if (!s.i64)
      fail("{}: the shape input must be a constant int64 tensor", where(n));
    for (int64_t d : *s.i64)
      if (d < 0)
        fail("{}: negative dimension {}", where(n), d);
    one(Shape(*s.i64), static_cast<DType>(n.attrInt("dtype", 0)));
  } else if (op == OpKind::Range) {
    double v[3];
    for (size_t i = 0; i < 3; ++i) {
      const Value &x = g.value(n.inputs.at(i));
      if (!x.isConstant() || numElements(x.shape) != 1)
        fail("{}: input {} must be a constant scalar (Range is folded at compile time)", where(n),
             i);
      v[i] = x.f32 ? (*x.f32)[0] : static_cast<double>((*x.i64)[0]);
    }
    if (v[2] == 0)
      fail("{}: delta is 0", where(n));
    auto len = static_cast<int64_t>(std::max(std::ceil((v[1] - v[0]) / v[2]), 0.0));
    one({len}, inType(g, n, 0));
  } else if (op == OpKind::Size) {
    one({}, DType::I64);
  } else if (op == OpKind::TopK) {
    Shape x = inShape(g, n, 0);
    int64_t axis = axisAttr(n, "axis", x.size()), k = n.attrInt("k", -1);
    if (k < 0 || k > x[static_cast<size_t>(axis)])
      fail("{}: k={} out of range for axis extent {}", where(n), k, x[static_cast<size_t>(axis)]);
    x[static_cast<size_t>(axis)] = k;
    one(x, inType(g, n, 0));
    one(x, DType::I64);
  } else if (op == OpKind::GatherElements) {
    const Shape &x = inShape(g, n, 0), &idx = inShape(g, n, 1);
    int64_t axis = axisAttr(n, "axis", x.size());
    if (idx.size() != x.size())
      fail("{}: indices rank {} differs from data rank {}", where(n), idx.size(), x.size());
    for (size_t d = 0; d < x.size(); ++d)
      if (static_cast<int64_t>(d) != axis && idx[d] > x[d])
        fail("{}: indices shape {} exceeds data shape {}", where(n), shapeToString(idx),
             shapeToString(x));
    one(idx, inType(g, n, 0));
  } else if (op == OpKind::EyeLike) {
    if (inShape(g, n, 0).size() != 2)
      fail("{}: input must be 2-D", where(n));
    one(inShape(g, n, 0), n.hasAttr("dtype") ? castTarget([&] {
          Node c = n;
          c.attrs["to"] = n.attrInt("dtype", 1);
          return c;
        }())
                                             : inType(g, n, 0));
  } else if (op == OpKind::Cast) {
    one(inShape(g, n, 0), castTarget(n));
  } else {
    return false;
  }
  if (outs.size() > n.outputs.size())
    fail("{}: the node declares {} outputs, the operator produces {}", where(n), n.outputs.size(),
         outs.size());
  if (outs.size() < n.outputs.size())
    fail("{}: output {} is not supported", where(n), outs.size());
  for (size_t i = 0; i < outs.size(); ++i) {
    Value &v = g.value(n.outputs[i]);
    v.shape = outs[i];
    v.dtype = types[i];
  }
  return true;
}

} // namespace npuc::graph
