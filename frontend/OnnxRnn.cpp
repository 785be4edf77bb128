// OnnxRnn.cpp - import of the recurrent operators RNN, GRU and LSTM (opset 7 and 14 forms; 14
// adds `layout`): resolves the direction string, the activation names and their alpha/beta lists
// into the normalised attributes of graph/Rnn.h, with ONNX's defaults filled in, and derives
// hidden_size from W when the model leaves it out. Errors name the node and the attribute.
#include "frontend/OnnxImpl.h"

#include "graph/Reference.h"
#include "graph/Rnn.h"
#include "support/Error.h"

#include <fmt/ranges.h>

namespace npuc::frontend::detail {

using graph::Node;
using graph::RnnActivation;

namespace {

std::vector<RnnActivation> defaultActivations(OpKind k) {
  if (k == OpKind::RNN)
    return {RnnActivation::Tanh};
  if (k == OpKind::GRU)
    return {RnnActivation::Sigmoid, RnnActivation::Tanh};
  return {RnnActivation::Sigmoid, RnnActivation::Tanh, RnnActivation::Tanh};
}

// The activation names of the proto (a STRINGS attribute the generic reader skips), resolved and
// repeated for the second direction when the model gives one direction's worth.
std::vector<RnnActivation> activations(const Node &n, const onnx::NodeProto &p, int64_t dirs) {
  const auto perDir = static_cast<size_t>(graph::rnnFunctions(n.kind));
  std::vector<RnnActivation> fns;
  bool given = false;
  for (const auto &a : p.attribute()) {
    if (a.name() != "activations")
      continue;
    if (a.type() != onnx::AttributeProto::STRINGS)
      fail("{}: attribute activations must be a list of strings", where(n));
    given = true;
    for (const std::string &s : a.strings()) {
      std::optional<RnnActivation> f = graph::rnnActivationFromName(s);
      if (!f)
        fail("{}: attribute activations: '{}' is not one of Relu, Tanh, Sigmoid, Affine, "
             "LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus",
             where(n), s);
      fns.push_back(*f);
    }
  }
  if (!given)
    fns = defaultActivations(n.kind);
  if (dirs == 2 && fns.size() == perDir)
    fns.insert(fns.end(), fns.begin(), fns.end());
  if (fns.size() != perDir * static_cast<size_t>(dirs))
    fail("{}: attribute activations has {} entries; {} {} needs {}", where(n), fns.size(),
         dirs == 2 ? "a bidirectional" : "a one-direction", n.kind,
         perDir * static_cast<size_t>(dirs));
  return fns;
}

// activation_alpha/beta: ONNX lists values only for the functions that take them, in order;
// the result has one value per function (the operator's default where the list runs out).
std::vector<double> parameters(const Node &n, const std::vector<RnnActivation> &fns, bool alpha) {
  const char *key = alpha ? "activation_alpha" : "activation_beta";
  std::vector<double> given;
  if (n.hasAttr(key)) {
    const auto *v = std::get_if<std::vector<double>>(&n.attrs.at(key));
    if (!v)
      fail("{}: attribute {} must be a list of floats", where(n), key);
    given = *v;
  }
  std::vector<double> out;
  size_t next = 0;
  for (RnnActivation f : fns) {
    bool takes = alpha ? graph::rnnActivationTakesAlpha(f) : graph::rnnActivationTakesBeta(f);
    std::optional<double> dflt =
        alpha ? graph::rnnActivationDefaultAlpha(f) : graph::rnnActivationDefaultBeta(f);
    if (!takes) {
      out.push_back(0.0);
    } else if (next < given.size()) {
      out.push_back(given[next++]);
    } else if (dflt) {
      out.push_back(*dflt);
    } else {
      fail("{}: attribute {} gives no value for {}, which has no default", where(n), key,
           graph::rnnActivationName(f));
    }
  }
  return out;
}

graph::RnnDirection direction(const Node &n) {
  std::string d = n.attrString("direction", "forward");
  if (d == "forward")
    return graph::RnnDirection::Forward;
  if (d == "reverse")
    return graph::RnnDirection::Reverse;
  if (d == "bidirectional")
    return graph::RnnDirection::Bidirectional;
  fail("{}: attribute direction={} not supported (forward, reverse or bidirectional)", where(n), d);
}

} // namespace

void rnnAttrs(Importer &im, Node &n, const onnx::NodeProto &p) {
  const graph::RnnDirection dir = direction(n);
  const int64_t dirs = dir == graph::RnnDirection::Bidirectional ? 2 : 1;
  std::vector<RnnActivation> fns = activations(n, p, dirs);
  std::vector<double> alpha = parameters(n, fns, true), beta = parameters(n, fns, false);
  // hidden_size is optional in ONNX: W is [num_directions, gates * hidden_size, input_size].
  if (!n.hasAttr("hidden_size") && n.inputs.size() > 1 && n.inputs[1] != graph::kNoValue) {
    const Shape &w = im.g.value(n.inputs[1]).shape;
    const int64_t gates = graph::rnnGates(n.kind);
    if (w.size() != 3 || w[1] % gates != 0)
      fail("{}: no hidden_size attribute, and W's shape {} does not give one", where(n),
           shapeToString(w));
    n.attrs["hidden_size"] = w[1] / gates;
  }
  std::vector<int64_t> codes;
  for (RnnActivation f : fns)
    codes.push_back(static_cast<int64_t>(f));
  n.attrs["direction"] = static_cast<int64_t>(dir);
  n.attrs["activations"] = codes;
  n.attrs["activation_alpha"] = alpha;
  n.attrs["activation_beta"] = beta;
  n.attrs["layout"] = n.attrInt("layout", 0);
  if (n.kind == OpKind::LSTM)
    n.attrs["input_forget"] = n.attrInt("input_forget", 0);
  if (n.kind == OpKind::GRU)
    n.attrs["linear_before_reset"] = n.attrInt("linear_before_reset", 0);
  // A constant sequence_lens is checked here, before any run.
  const size_t lensIn = graph::kRnnSequenceLens;
  if (lensIn < n.inputs.size() && n.inputs[lensIn] != graph::kNoValue &&
      im.g.value(n.inputs[lensIn]).isConstant() && n.inputs[0] != graph::kNoValue) {
    const Shape &x = im.g.value(n.inputs[0]).shape;
    if (x.size() == 3)
      graph::checkSequenceLens(n, n.attrInt("layout", 0) ? x[1] : x[0],
                               graph::constantTensor(im.g.value(n.inputs[lensIn])));
  }
}

} // namespace npuc::frontend::detail
