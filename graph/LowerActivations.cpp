// LowerActivations.cpp - HardSigmoid and HardSwish as Mul/Add/Clip (see LowerActivations.h).
//
// Both are exact piecewise-linear maps, so the rewrite only changes rounding: x * (1/6) instead
// of x / 6 in fp32, well inside the models' fp16 error budget.
#include "graph/LowerActivations.h"

#include "graph/RefInternal.h"
#include "graph/ShapeInference.h"
#include "support/Error.h"

#include <cmath>
#include <limits>

namespace npuc::graph {

namespace {

// Emits Clip(x * alpha + beta, 0, 1) and returns its output value; `out` is reused as the
// Clip's output when given (the replaced node's output), else a fresh value is made.
ValueId hardSigmoid(Graph &g, const std::string &name, ValueId x, double alpha, double beta,
                    ValueId out) {
  Shape shape = g.value(x).shape;
  ValueId a = g.addConstant(name + ".alpha", {}, {static_cast<float>(alpha)});
  ValueId b = g.addConstant(name + ".beta", {}, {static_cast<float>(beta)});
  ValueId scaled = g.addValue(name + ".scaled", shape, DType::F32);
  ValueId shifted = g.addValue(name + ".shifted", shape, DType::F32);
  if (out == kNoValue)
    out = g.addValue(name + ".gate", shape, DType::F32);
  g.addNode(OpKind::Mul, name + "_mul", {x, a}, {scaled});
  g.addNode(OpKind::Add, name + "_add", {scaled, b}, {shifted});
  NodeId clip = g.addNode(OpKind::Clip, name + "_clip", {shifted}, {out});
  g.node(clip).attrs["min"] = 0.0;
  g.node(clip).attrs["max"] = 1.0;
  return out;
}

// Pow(x, 2) as Mul(x, x), in place (the same node and output value).
bool squareAsMul(Graph &g, Node &n) {
  if (n.inputs.size() != 2 || g.value(n.inputs[0]).dtype != DType::F32)
    return false;
  const Value &e = g.value(n.inputs[1]);
  if (!e.f32 || e.f32->size() != 1 || (*e.f32)[0] != 2.0f)
    return false;
  n.kind = OpKind::Mul;
  n.inputs[1] = n.inputs[0];
  return true;
}

// Where(cond, k, x) with a constant cond and a constant float k (or Where(cond, x, k)) as
// Min(Max(lo, x), hi): lo = hi = k where cond selects k, lo = -inf and hi = +inf elsewhere; a
// bound that is infinite wherever k is selected is left out (a causal mask filled with -inf is one
// Min). Exact for every x but NaN: where k is selected a NaN x gives NaN instead of k, and where x
// is selected a NaN x follows the target's min/max. Rewritten in place: the node keeps its name
// and output, its new operands are constants named after it.
bool constantWhereAsClamp(Graph &g, NodeId id) {
  const Node &n = g.node(id);
  if (n.inputs.size() != 3 || g.value(n.outputs[0]).dtype != DType::F32)
    return false;
  const Value &c = g.value(n.inputs[0]);
  bool kFirst = g.value(n.inputs[1]).f32 && !g.value(n.inputs[2]).isConstant();
  bool kSecond = g.value(n.inputs[2]).f32 && !g.value(n.inputs[1]).isConstant();
  if (!c.i64 || kFirst == kSecond)
    return false;
  const Value &k = g.value(n.inputs[kFirst ? 1 : 2]);
  ValueId x = n.inputs[kFirst ? 2 : 1], y = n.outputs[0];
  const Shape shape = broadcastShapes(c.shape, k.shape, n.name);
  const size_t count = static_cast<size_t>(numElements(shape));
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> lo(count, -inf), hi(count, inf);
  bool needLo = false, needHi = false, nanFill = false;
  ref::forEachBroadcast(
      shape, {ref::broadcastStrides(c.shape, shape), ref::broadcastStrides(k.shape, shape)},
      [&](int64_t i, const std::vector<int64_t> &at) {
        if (((*c.i64)[static_cast<size_t>(at[0])] != 0) != kFirst)
          return; // x is selected
        float v = (*k.f32)[static_cast<size_t>(at[1])];
        nanFill |= std::isnan(v);
        lo[static_cast<size_t>(i)] = hi[static_cast<size_t>(i)] = v;
        needLo |= v != -inf;
        needHi |= v != inf;
      });
  if (nanFill)
    return false; // no clamp yields NaN
  const std::string name = n.name;
  const Shape yShape = g.value(y).shape;
  g.node(id).dead = true;
  g.value(y).producer = -1;
  if (!needLo && !needHi) { // k is never selected
    g.addNode(OpKind::Identity, name, {x}, {y});
    return true;
  }
  ValueId cur = x;
  if (needLo) {
    ValueId bound = g.addConstant(name + ".lo", shape, std::move(lo));
    ValueId out = needHi ? g.addValue(name + ".raised", yShape, DType::F32) : y;
    g.addNode(OpKind::Max, needHi ? name + "_max" : name, {bound, cur}, {out});
    cur = out;
  }
  if (needHi) {
    ValueId bound = g.addConstant(name + ".hi", shape, std::move(hi));
    g.addNode(OpKind::Min, name, {bound, cur}, {y});
  }
  return true;
}

} // namespace

int lowerActivations(Graph &g) {
  int rewritten = 0;
  for (NodeId id : g.topoOrder()) {
    const OpKind op = g.node(id).kind;
    if (op == OpKind::Pow) {
      rewritten += squareAsMul(g, g.node(id)) ? 1 : 0;
      continue;
    }
    if (op == OpKind::Where) {
      rewritten += constantWhereAsClamp(g, id) ? 1 : 0;
      continue;
    }
    if (op != OpKind::HardSigmoid && op != OpKind::HardSwish)
      continue;
    // Copies: adding nodes and values below may reallocate the graph's storage.
    const std::string name = g.node(id).name;
    NPUC_ASSERT(g.node(id).inputs.size() == 1 && g.node(id).outputs.size() == 1,
                "HardSigmoid/HardSwish have one input and one output (checked at import)");
    ValueId x = g.node(id).inputs[0], y = g.node(id).outputs[0];
    NPUC_ASSERT(g.value(x).dtype == DType::F32, "ONNX defines these activations on floats only");
    double alpha = g.node(id).attrFloat("alpha", 0.2), beta = g.node(id).attrFloat("beta", 0.5);
    g.node(id).dead = true;
    g.value(y).producer = -1;
    if (op == OpKind::HardSigmoid) {
      hardSigmoid(g, name, x, alpha, beta, y);
    } else {
      // ONNX defines HardSwish as x * HardSigmoid(x) with alpha = 1/6, beta = 0.5.
      ValueId gate = hardSigmoid(g, name, x, 1.0 / 6.0, 0.5, kNoValue);
      g.addNode(OpKind::Mul, name + "_gate", {x, gate}, {y});
    }
    ++rewritten;
  }
  g.removeDeadNodes();
  return rewritten;
}

} // namespace npuc::graph
