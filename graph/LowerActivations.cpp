// LowerActivations.cpp - HardSigmoid and HardSwish as Mul/Add/Clip (see LowerActivations.h).
//
// Both are exact piecewise-linear maps, so the rewrite only changes rounding: x * (1/6) instead
// of x / 6 in fp32, well inside the models' fp16 error budget.
#include "graph/LowerActivations.h"

#include "support/Error.h"

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

} // namespace

int lowerActivations(Graph &g) {
  int rewritten = 0;
  for (NodeId id : g.topoOrder()) {
    const OpKind op = g.node(id).kind;
    if (op == OpKind::Pow) {
      rewritten += squareAsMul(g, g.node(id)) ? 1 : 0;
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
