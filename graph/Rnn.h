// Rnn.h - the recurrent operators RNN, GRU and LSTM as data: their normalised attributes read
// into one RnnSpec (checked against the input shapes), the activation functions they name and the
// scalar meaning of each. The shape rule (ShapeRnn.cpp), the reference kernel (RefRnn.cpp) and the
// CPU lowering (lowering/LowerRnn.cpp) all read a node through rnnSpec, so they agree on what
// the attributes mean.
//
// Normalised attributes (frontend/OnnxRnn.cpp writes them from the ONNX node, any opset 7-18):
//   direction          int: RnnDirection (0 forward, 1 reverse, 2 bidirectional);
//   activations        ints: RnnActivation per function, numDirections * functionsPerDirection
//                      entries (RNN f; GRU f, g; LSTM f, g, h), defaults filled in;
//   activation_alpha,  floats: one per entry of `activations` (the ONNX lists hold values only for
//   activation_beta    the functions that take them, in order; defaults filled in);
//   clip               float, present only when the model clips (threshold > 0);
//   hidden_size        int; layout int 0/1; input_forget (LSTM), linear_before_reset (GRU) 0/1.
// Inputs: X, W, R, then optional B, sequence_lens, initial_h, initial_c (LSTM), P (LSTM).
#pragma once

#include "graph/Graph.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace npuc::graph {

enum class RnnDirection : int64_t { Forward = 0, Reverse = 1, Bidirectional = 2 };

/// The activation functions ONNX's recurrent operators name (case-insensitively).
enum class RnnActivation : int64_t {
  Relu,
  Tanh,
  Sigmoid,
  Affine,
  LeakyRelu,
  ThresholdedRelu,
  ScaledTanh,
  HardSigmoid,
  Elu,
  Softsign,
  Softplus,
};
constexpr int64_t kNumRnnActivations = 11;

/// The activation named `name` (ONNX spelling, any case), or nullopt.
std::optional<RnnActivation> rnnActivationFromName(const std::string &name);
const char *rnnActivationName(RnnActivation a);
/// Whether the function reads alpha / beta (ONNX consumes activation_alpha/beta in order, only
/// for the functions that read them).
bool rnnActivationTakesAlpha(RnnActivation a);
bool rnnActivationTakesBeta(RnnActivation a);
/// The defaults of the ONNX operators of the same name (LeakyRelu 0.01, ThresholdedRelu 1,
/// HardSigmoid 0.2/0.5, Elu 1, Affine 1/0); nullopt where there is none (ScaledTanh).
std::optional<double> rnnActivationDefaultAlpha(RnnActivation a);
std::optional<double> rnnActivationDefaultBeta(RnnActivation a);

/// One activation function with its parameters.
struct RnnAct {
  RnnActivation fn = RnnActivation::Tanh;
  double alpha = 0, beta = 0;
};
/// The function applied to x in double precision (the reference kernel's arithmetic).
double evalRnnActivation(const RnnAct &a, double x);

/// Whether `k` is RNN, GRU or LSTM.
bool isRecurrentOp(OpKind k);
/// Gates per direction: RNN 1, GRU 3 (z, r, h), LSTM 4 (i, o, f, c).
int64_t rnnGates(OpKind k);
/// Activation functions per direction: RNN 1 (f), GRU 2 (f, g), LSTM 3 (f, g, h).
int64_t rnnFunctions(OpKind k);

/// The node's normalised attributes and sizes.
struct RnnSpec {
  OpKind kind = OpKind::Identity;
  RnnDirection direction = RnnDirection::Forward;
  int64_t numDirections = 1;
  int64_t gates = 1;
  int64_t seqLength = 0, batch = 0, inputSize = 0, hidden = 0;
  bool batchFirst = false;        // layout = 1: X [B, S, I], Y [B, S, D, H], Y_h [B, D, H]
  std::vector<RnnAct> acts;       // numDirections * rnnFunctions(kind), direction-major
  std::optional<double> clip;     // applied to every activation's input
  bool inputForget = false;       // LSTM: f = 1 - i
  bool linearBeforeReset = false; // GRU: r * (H R_h + Rb_h) instead of (r * H) R_h
  bool hasBias = false, hasSequenceLens = false, hasInitialH = false, hasInitialC = false,
       hasPeepholes = false;

  /// Whether direction d runs backwards in time.
  bool reverse(int64_t d) const {
    return direction == RnnDirection::Reverse ||
           (direction == RnnDirection::Bidirectional && d == 1);
  }
  /// Activation function `fn` (0 = f, 1 = g, 2 = h) of direction d.
  const RnnAct &act(int64_t d, int64_t fn) const {
    return acts.at(static_cast<size_t>(d * static_cast<int64_t>(acts.size()) / numDirections + fn));
  }
  /// Shapes of Y and of Y_h / Y_c (and of initial_h / initial_c) for the layout.
  Shape yShape() const;
  Shape stateShape() const;
};

// Input positions.
constexpr size_t kRnnX = 0, kRnnW = 1, kRnnR = 2, kRnnB = 3, kRnnSequenceLens = 4, kRnnInitialH = 5,
                 kRnnInitialC = 6, kRnnP = 7;

/// Reads and checks the node's attributes and input shapes; a user error names the node and the
/// attribute or input that is wrong.
RnnSpec rnnSpec(const Graph &g, const Node &n);

} // namespace npuc::graph
