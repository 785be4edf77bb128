// FoldBatchNorm.cpp - removes inference-mode BatchNormalization.
//
// y = (x - mean) / sqrt(var + eps) * scale + bias is an affine per-channel map s*x + t with
// s = scale / sqrt(var + eps) and t = bias - mean * s. After a conv it folds into the conv:
// W'[m] = W[m] * s[m], b'[m] = b[m] * s[m] + t[m]. Elsewhere it becomes Mul(x, s) + t with
// s, t shaped [C, 1, ..., 1] so that they broadcast along the channel axis (axis 1).
#include "graph/Passes.h"

#include "support/Error.h"

#include <cmath>

namespace npuc::graph {

namespace {

const std::vector<float> &constParam(const Graph &g, const Node &bn, size_t i, const char *what) {
  const Value &v = g.value(bn.inputs.at(i));
  if (!v.f32)
    fail("node '{}' (BatchNormalization): {} '{}' must be a float constant", bn.name, what, v.name);
  return *v.f32;
}

bool foldIntoConv(Graph &g, Node &bn, const std::vector<double> &s, const std::vector<double> &t) {
  ValueId x = bn.inputs[0];
  NodeId p = g.value(x).producer;
  if (p < 0 || g.node(p).dead || g.node(p).kind != OpKind::Conv || g.isGraphOutput(x) ||
      g.consumers(x).size() != 1)
    return false;
  Node &conv = g.node(p);
  const Value &w = g.value(conv.inputs.at(1));
  bool hasBias = conv.inputs.size() > 2 && conv.inputs[2] != kNoValue;
  if (!w.f32 || (hasBias && !g.value(conv.inputs[2]).f32))
    return false; // weights computed at run time: keep the BN as Mul+Add instead
  int64_t m = w.shape[0];
  int64_t per = numElements(w.shape) / m;
  std::vector<float> nw(w.f32->size()), nb(static_cast<size_t>(m));
  for (int64_t o = 0; o < m; ++o) {
    for (int64_t k = 0; k < per; ++k)
      nw[o * per + k] = static_cast<float>((*w.f32)[o * per + k] * s[o]);
    double b = hasBias ? (*g.value(conv.inputs[2]).f32)[o] : 0.0;
    nb[o] = static_cast<float>(b * s[o] + t[o]);
  }
  Shape wShape = w.shape;
  std::string base = conv.name;
  ValueId wv = g.addConstant(base + ".weight_bnfolded", wShape, std::move(nw));
  ValueId bv = g.addConstant(base + ".bias_bnfolded", {m}, std::move(nb));
  // addConstant only grows `values`, so the node reference is still valid.
  conv.inputs.resize(3, kNoValue);
  conv.inputs[1] = wv;
  conv.inputs[2] = bv;
  // The conv now computes the BN's output, so it produces that value: the name a value goes by
  // keeps meaning what it means in the model (the accuracy report, `npuc run --compare-ref`,
  // matches values to the reference's by name). The conv's own output had one reader, the BN.
  const ValueId y = bn.outputs[0];
  bn.dead = true;
  conv.outputs[0] = y;
  g.value(y).producer = conv.id;
  g.value(x).producer = -1;
  return true;
}

} // namespace

void foldBatchNorm(Graph &g) {
  for (NodeId id : g.topoOrder()) {
    if (g.node(id).kind != OpKind::BatchNormalization)
      continue;
    Node &bn = g.node(id);
    if (bn.outputs.size() > 1)
      for (size_t i = 1; i < bn.outputs.size(); ++i)
        if (!g.consumers(bn.outputs[i]).empty())
          fail("node '{}' (BatchNormalization): training-mode outputs are not supported", bn.name);
    const Shape xShape = g.value(bn.inputs.at(0)).shape;
    NPUC_ASSERT(xShape.size() >= 2, "BN input has a channel axis (checked by shape inference)");
    int64_t c = xShape[1];
    const auto &scale = constParam(g, bn, 1, "scale");
    const auto &bias = constParam(g, bn, 2, "bias");
    const auto &mean = constParam(g, bn, 3, "mean");
    const auto &var = constParam(g, bn, 4, "var");
    double eps = bn.attrFloat("epsilon", 1e-5);
    std::vector<double> s(static_cast<size_t>(c)), t(static_cast<size_t>(c));
    for (int64_t i = 0; i < c; ++i) {
      s[i] = scale[i] / std::sqrt(static_cast<double>(var[i]) + eps);
      t[i] = bias[i] - mean[i] * s[i];
    }
    if (foldIntoConv(g, bn, s, t))
      continue;
    // Mul + Add with [C, 1, ..., 1] constants.
    Shape pShape(xShape.size() - 1, 1);
    pShape[0] = c;
    std::vector<float> sf(s.begin(), s.end()), tf(t.begin(), t.end());
    std::string name = bn.name;
    ValueId x = bn.inputs[0], y = bn.outputs[0];
    g.node(id).dead = true;
    g.value(y).producer = -1;
    ValueId sv = g.addConstant(name + ".scale", pShape, std::move(sf));
    ValueId tv = g.addConstant(name + ".shift", pShape, std::move(tf));
    ValueId mid = g.addValue(name + ".scaled", xShape, DType::F32);
    g.addNode(OpKind::Mul, name + "_mul", {x, sv}, {mid});
    g.addNode(OpKind::Add, name + "_add", {mid, tv}, {y});
  }
  g.removeDeadNodes();
}

} // namespace npuc::graph
