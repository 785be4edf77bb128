// Rnn.cpp - the recurrent operators' attributes and activation functions (Rnn.h).
#include "graph/Rnn.h"

#include "support/Error.h"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace npuc::graph {

namespace {

struct ActInfo {
  RnnActivation fn;
  const char *name;
  bool alpha, beta;
  std::optional<double> alphaDefault, betaDefault;
};

const ActInfo kActs[] = {
    {RnnActivation::Relu, "Relu", false, false, {}, {}},
    {RnnActivation::Tanh, "Tanh", false, false, {}, {}},
    {RnnActivation::Sigmoid, "Sigmoid", false, false, {}, {}},
    {RnnActivation::Affine, "Affine", true, true, 1.0, 0.0},
    {RnnActivation::LeakyRelu, "LeakyRelu", true, false, 0.01, {}},
    {RnnActivation::ThresholdedRelu, "ThresholdedRelu", true, false, 1.0, {}},
    {RnnActivation::ScaledTanh, "ScaledTanh", true, true, {}, {}},
    {RnnActivation::HardSigmoid, "HardSigmoid", true, true, 0.2, 0.5},
    {RnnActivation::Elu, "Elu", true, false, 1.0, {}},
    {RnnActivation::Softsign, "Softsign", false, false, {}, {}},
    {RnnActivation::Softplus, "Softplus", false, false, {}, {}},
};
static_assert(std::size(kActs) == kNumRnnActivations, "one row per RnnActivation");

const ActInfo &info(RnnActivation a) {
  const auto i = static_cast<size_t>(a);
  NPUC_ASSERT(i < std::size(kActs) && kActs[i].fn == a, "kActs is in RnnActivation order");
  return kActs[i];
}

std::string where(const Node &n) {
  return fmt::format("node '{}' ({})", n.name, n.kind);
}

bool present(const Node &n, size_t i) {
  return i < n.inputs.size() && n.inputs[i] != kNoValue;
}

// Fails naming the node and the input unless input i has shape `want`.
void requireShape(const Graph &g, const Node &n, size_t i, const char *what, const Shape &want) {
  const Shape &s = g.value(n.inputs[i]).shape;
  if (s != want)
    fail("{}: input {} ({}) has shape {}, expected {}", where(n), i, what, shapeToString(s),
         shapeToString(want));
}

// A float list attribute (empty when absent); integers read as floats.
std::vector<double> floats(const Node &n, const char *key) {
  auto it = n.attrs.find(key);
  if (it == n.attrs.end())
    return {};
  if (const auto *v = std::get_if<std::vector<double>>(&it->second))
    return *v;
  if (const auto *v = std::get_if<std::vector<int64_t>>(&it->second))
    return {v->begin(), v->end()};
  fail("{}: attribute {} is not a list of floats", where(n), key);
}

// The activations and their alpha/beta (already one per function: the frontend resolved the
// ONNX lists), checked against the direction count.
std::vector<RnnAct> readActivations(const Node &n, int64_t count) {
  std::vector<int64_t> fns = n.attrInts("activations");
  std::vector<double> alpha = floats(n, "activation_alpha"), beta = floats(n, "activation_beta");
  if (static_cast<int64_t>(fns.size()) != count)
    fail("{}: attribute activations has {} entries, expected {}", where(n), fns.size(), count);
  if (alpha.size() != fns.size() || beta.size() != fns.size())
    fail("{}: attributes activation_alpha/activation_beta need one value per activation ({})",
         where(n), count);
  std::vector<RnnAct> acts;
  for (size_t i = 0; i < fns.size(); ++i) {
    if (fns[i] < 0 || fns[i] >= kNumRnnActivations)
      fail("{}: attribute activations[{}] = {} is not an activation function", where(n), i, fns[i]);
    acts.push_back({static_cast<RnnActivation>(fns[i]), alpha[i], beta[i]});
  }
  return acts;
}

} // namespace

std::optional<RnnActivation> rnnActivationFromName(const std::string &name) {
  auto lower = [](std::string s) {
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
  };
  for (const ActInfo &a : kActs)
    if (lower(a.name) == lower(name))
      return a.fn;
  return std::nullopt;
}

const char *rnnActivationName(RnnActivation a) {
  return info(a).name;
}
bool rnnActivationTakesAlpha(RnnActivation a) {
  return info(a).alpha;
}
bool rnnActivationTakesBeta(RnnActivation a) {
  return info(a).beta;
}
std::optional<double> rnnActivationDefaultAlpha(RnnActivation a) {
  return info(a).alphaDefault;
}
std::optional<double> rnnActivationDefaultBeta(RnnActivation a) {
  return info(a).betaDefault;
}

double evalRnnActivation(const RnnAct &a, double x) {
  switch (a.fn) {
  case RnnActivation::Relu:
    return std::max(x, 0.0);
  case RnnActivation::Tanh:
    return std::tanh(x);
  case RnnActivation::Sigmoid:
    return 1.0 / (1.0 + std::exp(-x));
  case RnnActivation::Affine:
    return a.alpha * x + a.beta;
  case RnnActivation::LeakyRelu:
    return x >= 0 ? x : a.alpha * x;
  case RnnActivation::ThresholdedRelu: // ONNX's RNN definition: x >= alpha keeps x
    return x >= a.alpha ? x : 0.0;
  case RnnActivation::ScaledTanh:
    return a.alpha * std::tanh(a.beta * x);
  case RnnActivation::HardSigmoid:
    return std::min(std::max(a.alpha * x + a.beta, 0.0), 1.0);
  case RnnActivation::Elu:
    return x >= 0 ? x : a.alpha * std::expm1(x);
  case RnnActivation::Softsign:
    return x / (1.0 + std::fabs(x));
  case RnnActivation::Softplus:
    return std::log1p(std::exp(x));
  }
  NPUC_ASSERT(false, "every RnnActivation is handled");
  return 0;
}

bool isRecurrentOp(OpKind k) {
  return k == OpKind::RNN || k == OpKind::GRU || k == OpKind::LSTM;
}

int64_t rnnGates(OpKind k) {
  NPUC_ASSERT(isRecurrentOp(k), "only recurrent operators have gates");
  return k == OpKind::RNN ? 1 : k == OpKind::GRU ? 3 : 4;
}

int64_t rnnFunctions(OpKind k) {
  NPUC_ASSERT(isRecurrentOp(k), "only recurrent operators have activation functions");
  return k == OpKind::RNN ? 1 : k == OpKind::GRU ? 2 : 3;
}

Shape RnnSpec::yShape() const {
  return batchFirst ? Shape{batch, seqLength, numDirections, hidden}
                    : Shape{seqLength, numDirections, batch, hidden};
}

Shape RnnSpec::stateShape() const {
  return batchFirst ? Shape{batch, numDirections, hidden} : Shape{numDirections, batch, hidden};
}

RnnSpec rnnSpec(const Graph &g, const Node &n) {
  RnnSpec s;
  s.kind = n.kind;
  NPUC_ASSERT(isRecurrentOp(n.kind), "rnnSpec reads RNN, GRU and LSTM nodes");
  const bool lstm = n.kind == OpKind::LSTM;
  const size_t maxInputs = lstm ? 8 : 6;
  if (n.inputs.size() > maxInputs)
    fail("{}: has {} inputs; {} takes at most {}", where(n), n.inputs.size(), n.kind, maxInputs);
  if (n.outputs.size() > (lstm ? 3u : 2u))
    fail("{}: has {} outputs; {} gives at most {}", where(n), n.outputs.size(), n.kind,
         lstm ? 3 : 2);
  for (size_t i : {kRnnX, kRnnW, kRnnR})
    if (!present(n, i))
      fail("{}: missing input {}", where(n), i);
  int64_t dir = n.attrInt("direction", 0);
  if (dir < 0 || dir > 2)
    fail("{}: attribute direction = {} is not forward (0), reverse (1) or bidirectional (2)",
         where(n), dir);
  s.direction = static_cast<RnnDirection>(dir);
  s.numDirections = s.direction == RnnDirection::Bidirectional ? 2 : 1;
  s.gates = rnnGates(n.kind);
  int64_t layout = n.attrInt("layout", 0);
  if (layout != 0 && layout != 1)
    fail("{}: attribute layout = {} is not 0 or 1", where(n), layout);
  s.batchFirst = layout == 1;
  const Shape &x = g.value(n.inputs[kRnnX]).shape;
  if (x.size() != 3)
    fail("{}: input 0 (X) has shape {}, expected rank 3", where(n), shapeToString(x));
  s.seqLength = s.batchFirst ? x[1] : x[0];
  s.batch = s.batchFirst ? x[0] : x[1];
  s.inputSize = x[2];
  s.hidden = n.attrInt("hidden_size", 0);
  if (s.hidden <= 0)
    fail("{}: attribute hidden_size = {} must be positive", where(n), s.hidden);
  const int64_t D = s.numDirections, H = s.hidden, G = s.gates;
  requireShape(g, n, kRnnW, "W", {D, G * H, s.inputSize});
  requireShape(g, n, kRnnR, "R", {D, G * H, H});
  s.hasBias = present(n, kRnnB);
  if (s.hasBias)
    requireShape(g, n, kRnnB, "B", {D, 2 * G * H});
  s.hasSequenceLens = present(n, kRnnSequenceLens);
  if (s.hasSequenceLens)
    requireShape(g, n, kRnnSequenceLens, "sequence_lens", {s.batch});
  s.hasInitialH = present(n, kRnnInitialH);
  if (s.hasInitialH)
    requireShape(g, n, kRnnInitialH, "initial_h", s.stateShape());
  s.hasInitialC = lstm && present(n, kRnnInitialC);
  if (s.hasInitialC)
    requireShape(g, n, kRnnInitialC, "initial_c", s.stateShape());
  s.hasPeepholes = lstm && present(n, kRnnP);
  if (s.hasPeepholes)
    requireShape(g, n, kRnnP, "P", {D, 3 * H});
  s.acts = readActivations(n, D * rnnFunctions(n.kind));
  if (n.hasAttr("clip")) {
    s.clip = n.attrFloat("clip", 0);
    if (!(*s.clip > 0))
      fail("{}: attribute clip = {} must be positive", where(n), *s.clip);
  }
  s.inputForget = lstm && n.attrInt("input_forget", 0) != 0;
  s.linearBeforeReset = n.kind == OpKind::GRU && n.attrInt("linear_before_reset", 0) != 0;
  return s;
}

} // namespace npuc::graph
