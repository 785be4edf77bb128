// OnnxTraining.cpp - the optimizers of the ai.onnx.preview.training domain (Adagrad, Adam,
// Momentum) imported as elementwise nodes of existing operators, following the formulas of ONNX's
// operator documentation step by step. Each node updates n groups of tensors, (X_i, G_i, state_i),
// with one learning rate R (a float scalar) and one iteration count T (an int64 scalar), both
// read at run time; every path (ref, CPU, NPU) then runs the update as it runs those operators.
#include "frontend/OnnxImpl.h"
#include "support/Error.h"

#include <fmt/format.h>

namespace npuc::frontend::detail {

namespace {

using graph::Node;
using graph::ValueId;

enum class Optimizer { Adagrad, Adam, Momentum };
enum class MomentumMode { Standard, Nesterov };

// Builds one optimizer node's update out of elementwise nodes named after it.
class Update {
public:
  // The update computes in X's type (float or double, every X of a node has the same); R is
  // cast to it when its own float type differs, so that every operand of an op agrees.
  Update(Importer &im, const Node &n)
      : im_(im), n_(n), dt_(im.g.value(n.inputs.at(2)).dtype), r_(n.inputs.at(0)) {
    if (im.g.value(r_).dtype != dt_)
      r_ = op(OpKind::Cast, "r_cast", {r_}, {{"to", onnxType()}});
  }

  ValueId rate() const { return r_; }
  ValueId scalar(const std::string &what, double v) {
    return im_.g.addConstant(n_.name + "." + what, {}, {static_cast<float>(v)}, dt_);
  }
  ValueId op(OpKind kind, const std::string &what, std::vector<ValueId> ins,
             std::map<std::string, graph::AttrValue> attrs = {}, ValueId out = graph::kNoValue) {
    return emitNode(im_, kind, n_.name + "_" + what, std::move(ins), std::move(attrs), out);
  }
  ValueId mul(const std::string &what, ValueId a, ValueId b) {
    return op(OpKind::Mul, what, {a, b});
  }
  ValueId add(const std::string &what, ValueId a, ValueId b) {
    return op(OpKind::Add, what, {a, b});
  }
  ValueId sub(const std::string &what, ValueId a, ValueId b) {
    return op(OpKind::Sub, what, {a, b});
  }
  ValueId div(const std::string &what, ValueId a, ValueId b) {
    return op(OpKind::Div, what, {a, b});
  }
  // T > 0 (T is an int64 scalar).
  ValueId positive(ValueId t) {
    ValueId zero = im_.g.addConstantI64(n_.name + ".zero", {}, {0});
    return op(OpKind::Greater, "t_positive", {t, zero});
  }
  // T in X's type, for the formulas that compute with it.
  ValueId floatT(ValueId t) { return op(OpKind::Cast, "t_float", {t}, {{"to", onnxType()}}); }

private:
  int64_t onnxType() const {
    return dt_ == graph::DType::F64 ? onnx::TensorProto::DOUBLE : onnx::TensorProto::FLOAT;
  }

  Importer &im_;
  const Node &n_;
  graph::DType dt_;
  ValueId r_; // R in X's type
};

// "node 'name' (Adam)": the node is not an operator of the graph IR, so where() cannot name it.
std::string label(const Node &n, const onnx::NodeProto &p) {
  return fmt::format("node '{}' ({})", n.name, p.op_type());
}

const graph::Value &checkScalar(Importer &im, const Node &n, const onnx::NodeProto &p, size_t i,
                                const char *what, bool integer) {
  const graph::Value &v = im.g.value(n.inputs.at(i));
  const bool typeOk = integer ? v.dtype == graph::DType::I64
                              : v.dtype == graph::DType::F32 || v.dtype == graph::DType::F64;
  if (numElements(v.shape) != 1 || !typeOk)
    fail("{}: {} (input {}) must be {} scalar, got {} of shape {}", label(n, p), what, i,
         integer ? "an int64" : "a float", graph::dtypeName(v.dtype), shapeToString(v.shape));
  return v;
}

// The number of tensor groups: inputs are R, T, then `perGroup` lists of n tensors (X, G, and
// the state tensors); outputs are `outsPerGroup` lists of n. Every tensor of group i has X_i's
// shape and a float type.
size_t groups(Importer &im, const Node &n, const onnx::NodeProto &p, size_t perGroup,
              size_t outsPerGroup) {
  if (n.inputs.size() < 2 + perGroup || (n.inputs.size() - 2) % perGroup != 0)
    fail("{}: has {} inputs; {} takes R, T and {} lists of equal length", label(n, p),
         n.inputs.size(), p.op_type(), perGroup);
  const size_t count = (n.inputs.size() - 2) / perGroup;
  if (static_cast<size_t>(p.output_size()) != outsPerGroup * count)
    fail("{}: has {} outputs for {} tensor groups; {} gives {} per group", label(n, p),
         p.output_size(), count, p.op_type(), outsPerGroup);
  checkScalar(im, n, p, 0, "R", false);
  checkScalar(im, n, p, 1, "T", true);
  const graph::DType dt = im.g.value(n.inputs[2]).dtype;
  if (dt != graph::DType::F32 && dt != graph::DType::F64)
    fail("{}: X (input 2) has type {}; {} updates float or double tensors", label(n, p),
         graph::dtypeName(dt), p.op_type());
  for (size_t g = 0; g < count; ++g) {
    const graph::Value &x = im.g.value(n.inputs[2 + g]);
    for (size_t k = 0; k < perGroup; ++k) {
      const graph::Value &v = im.g.value(n.inputs[2 + k * count + g]);
      if (v.shape != x.shape)
        fail("{}: input {} has shape {} but the X of its group (input {}) has {}", label(n, p),
             2 + k * count + g, shapeToString(v.shape), 2 + g, shapeToString(x.shape));
      if (v.dtype != dt)
        fail("{}: input {} has type {} but input 2 (X) has {}", label(n, p), 2 + k * count + g,
             graph::dtypeName(v.dtype), graph::dtypeName(dt));
    }
  }
  return count;
}

// The value an output of the node is written to, named as the model names it.
ValueId outputValue(Importer &im, const onnx::NodeProto &p, size_t k) {
  ValueId v = im.g.addValue(p.output(static_cast<int>(k)), {}, graph::DType::F32);
  im.names[p.output(static_cast<int>(k))] = v;
  return v;
}

// Adagrad: r = R / (1 + T * decay_factor); G_reg = norm_coefficient * X + G;
// H_new = H + G_reg * G_reg; X_new = X - r * G_reg / (Sqrt(H_new) + epsilon).
void adagrad(Importer &im, const Node &n, const onnx::NodeProto &p) {
  const size_t count = groups(im, n, p, 3, 2);
  Update u(im, n);
  ValueId r = u.div("r", u.rate(),
                    u.add("decay", u.scalar("one", 1.0),
                          u.mul("t_decay", u.floatT(n.inputs[1]),
                                u.scalar("decay_factor", n.attrFloat("decay_factor", 0.0)))));
  ValueId norm = u.scalar("norm_coefficient", n.attrFloat("norm_coefficient", 0.0));
  ValueId eps = u.scalar("epsilon", n.attrFloat("epsilon", 1e-6));
  for (size_t g = 0; g < count; ++g) {
    const std::string s = std::to_string(g);
    ValueId x = n.inputs[2 + g], grad = n.inputs[2 + count + g], h = n.inputs[2 + 2 * count + g];
    ValueId greg = u.add("g_reg" + s, u.mul("x_norm" + s, norm, x), grad);
    ValueId hNew = u.op(OpKind::Add, "h_new" + s, {h, u.mul("g_sq" + s, greg, greg)}, {},
                        outputValue(im, p, count + g));
    ValueId hs = u.add("h_adaptive" + s, u.op(OpKind::Sqrt, "h_sqrt" + s, {hNew}), eps);
    u.op(OpKind::Sub, "x_new" + s, {x, u.div("step" + s, u.mul("r_g" + s, r, greg), hs)}, {},
         outputValue(im, p, g));
  }
}

// Adam: G_reg = norm_coefficient * X + G; V_new = alpha * V + (1 - alpha) * G_reg;
// H_new = beta * H + (1 - beta) * G_reg * G_reg; R_adj = T > 0 ? R * Sqrt(1 - beta^T) /
// (1 - alpha^T) : R; X_new = (1 - norm_coefficient_post) * (X - R_adj * V_new / (Sqrt(H_new) +
// epsilon)).
void adam(Importer &im, const Node &n, const onnx::NodeProto &p) {
  const size_t count = groups(im, n, p, 4, 3);
  Update u(im, n);
  const double alpha = n.attrFloat("alpha", 0.9), beta = n.attrFloat("beta", 0.999);
  ValueId a = u.scalar("alpha", alpha), b = u.scalar("beta", beta);
  ValueId one = u.scalar("one", 1.0), tf = u.floatT(n.inputs[1]);
  ValueId corrected =
      u.div("r_corrected",
            u.mul("r_sqrt", u.rate(),
                  u.op(OpKind::Sqrt, "beta_sqrt",
                       {u.sub("beta_c", one, u.op(OpKind::Pow, "beta_t", {b, tf}))})),
            u.sub("alpha_c", one, u.op(OpKind::Pow, "alpha_t", {a, tf})));
  ValueId r = u.op(OpKind::Where, "r_adjusted", {u.positive(n.inputs[1]), corrected, u.rate()});
  ValueId norm = u.scalar("norm_coefficient", n.attrFloat("norm_coefficient", 0.0));
  ValueId eps = u.scalar("epsilon", n.attrFloat("epsilon", 1e-6));
  ValueId a1 = u.scalar("one_minus_alpha", 1 - alpha), b1 = u.scalar("one_minus_beta", 1 - beta);
  ValueId post = u.scalar("post", 1 - n.attrFloat("norm_coefficient_post", 0.0));
  for (size_t g = 0; g < count; ++g) {
    const std::string s = std::to_string(g);
    ValueId x = n.inputs[2 + g], grad = n.inputs[2 + count + g];
    ValueId v = n.inputs[2 + 2 * count + g], h = n.inputs[2 + 3 * count + g];
    ValueId greg = u.add("g_reg" + s, u.mul("x_norm" + s, norm, x), grad);
    ValueId vNew =
        u.op(OpKind::Add, "v_new" + s, {u.mul("v_alpha" + s, a, v), u.mul("g_alpha" + s, a1, greg)},
             {}, outputValue(im, p, count + g));
    ValueId hNew =
        u.op(OpKind::Add, "h_new" + s,
             {u.mul("h_beta" + s, b, h), u.mul("g_beta" + s, b1, u.mul("g_sq" + s, greg, greg))},
             {}, outputValue(im, p, 2 * count + g));
    ValueId hs = u.add("h_sqrt_eps" + s, u.op(OpKind::Sqrt, "h_sqrt" + s, {hNew}), eps);
    ValueId xNew = u.sub("x_step" + s, x, u.mul("step" + s, r, u.div("v_h" + s, vNew, hs)));
    u.op(OpKind::Mul, "x_new" + s, {post, xNew}, {}, outputValue(im, p, g));
  }
}

// Momentum: G_reg = norm_coefficient * X + G; beta_adj = T > 0 ? beta : 1;
// V_new = alpha * V + beta_adj * G_reg; standard: X_new = X - R * V_new;
// nesterov: X_new = X - R * (G_reg + alpha * V_new).
void momentum(Importer &im, const Node &n, const onnx::NodeProto &p) {
  for (const char *a : {"alpha", "beta", "mode", "norm_coefficient"})
    if (!n.attrs.count(a))
      fail("{}: attribute {} is required", label(n, p), a);
  const std::string modeName = n.attrString("mode", "");
  if (modeName != "standard" && modeName != "nesterov")
    fail("{}: attribute mode={} must be standard or nesterov", label(n, p), modeName);
  const MomentumMode mode =
      modeName == "nesterov" ? MomentumMode::Nesterov : MomentumMode::Standard;
  const size_t count = groups(im, n, p, 3, 2);
  Update u(im, n);
  ValueId a = u.scalar("alpha", n.attrFloat("alpha", 0.0));
  ValueId betaAdj = u.op(
      OpKind::Where, "beta_adjusted",
      {u.positive(n.inputs[1]), u.scalar("beta", n.attrFloat("beta", 0.0)), u.scalar("one", 1.0)});
  ValueId norm = u.scalar("norm_coefficient", n.attrFloat("norm_coefficient", 0.0));
  for (size_t g = 0; g < count; ++g) {
    const std::string s = std::to_string(g);
    ValueId x = n.inputs[2 + g], grad = n.inputs[2 + count + g], v = n.inputs[2 + 2 * count + g];
    ValueId greg = u.add("g_reg" + s, u.mul("x_norm" + s, norm, x), grad);
    ValueId vNew = u.op(OpKind::Add, "v_new" + s,
                        {u.mul("v_alpha" + s, a, v), u.mul("g_beta" + s, betaAdj, greg)}, {},
                        outputValue(im, p, count + g));
    ValueId dir = mode == MomentumMode::Nesterov
                      ? u.add("nesterov" + s, greg, u.mul("v_alpha_new" + s, a, vNew))
                      : vNew;
    u.op(OpKind::Sub, "x_new" + s, {x, u.mul("step" + s, u.rate(), dir)}, {},
         outputValue(im, p, g));
  }
}

} // namespace

bool isTrainingDomain(const std::string &domain) {
  return domain == "ai.onnx.preview.training";
}

void importTrainingNode(Importer &im, const onnx::NodeProto &p, int index) {
  Node n;
  n.name = p.name().empty() ? fmt::format("{}_{}", p.op_type(), index) : p.name();
  readAttributes(n, p);
  for (const auto &in : p.input()) {
    if (in.empty())
      fail("node '{}' ({}): input {} is empty; every input is required", n.name, p.op_type(),
           n.inputs.size());
    n.inputs.push_back(im.lookup(in, fmt::format("node '{}' ({})", n.name, p.op_type())));
  }
  for (const auto &out : p.output())
    if (out.empty())
      fail("node '{}' ({}): an output name is empty; npuc needs every output", n.name, p.op_type());
  const std::map<std::string, Optimizer> ops{{"Adagrad", Optimizer::Adagrad},
                                             {"Adam", Optimizer::Adam},
                                             {"Momentum", Optimizer::Momentum}};
  auto it = ops.find(p.op_type());
  if (it == ops.end())
    fail("node '{}' ({}): unsupported operator of domain ai.onnx.preview.training (npuc imports "
         "Adagrad, Adam and Momentum)",
         n.name, p.op_type());
  if (it->second == Optimizer::Adagrad)
    adagrad(im, n, p);
  else if (it->second == Optimizer::Adam)
    adam(im, n, p);
  else
    momentum(im, n, p);
}

} // namespace npuc::frontend::detail
