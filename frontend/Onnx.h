// Onnx.h - ONNX model import into the graph IR.
//
// importOnnx reads a model (opsets 1-18 of the default domain; below 9, ONNX's own version
// converter first brings it to opset 13), turns the inputs `bound` names into constants, pins
// dynamic input dimensions with `inputShapes` (input name -> full shape), runs ONNX's own shape
// inference as a consistency check (for the opsets the installed ONNX library knows: up to 17 with
// Debian's 1.12) and computes every value's static shape itself. Attributes are normalised so that
// later stages need not know ONNX opset differences:
//   * Conv/MaxPool/AveragePool: explicit kernel_shape, strides, dilations and 4-entry pads
//     (auto_pad resolved); pools also carry ceil_mode and (AveragePool) count_include_pad.
//   * Gemm: alpha, beta, transA, transB always present.
//   * Clip: constant bounds as float attributes min/max (absent = unbounded); the node has one
//     input. A run-time bound becomes a Max (min) or Min (max) node with the bound as operand.
//   * Softmax/Concat/Flatten/Gather: non-negative axis attribute; Softmax uses opset-13 meaning.
//   * Squeeze/Unsqueeze: axes as an attribute; Pad: pads and value attributes, one input (a
//     run-time constant_value stays as input 1, a scalar).
//   * Identity, Dropout and float->float Cast are removed (their output aliases their input).
//   * Constant, Shape, Size, and any supported op whose inputs are all constants are folded at
//     import (this makes torchvision's Shape/Gather/Unsqueeze/Concat/Reshape idioms static).
//   * The extended operator set (graph/ExtOps.h, OnnxExtAttrs.cpp) takes tensor-valued parameters
//     as attributes: Reduce* axes, Slice starts/ends/steps (per axis, clamped), Resize scales
//     and sizes (Upsample and opset-10 Resize become an asymmetric/floor Resize; opset-18 axes and
//     keep_aspect_ratio_policy are resolved to full-rank scales and sizes), Split sizes, Expand
//     shape, Tile repeats, TopK k, CumSum axis, Trilu k, and ConvTranspose explicit
//     pads/output_padding. docs/OPERATORS.md lists every operator.
// Every error is an npuc::Error whose message starts with the model path.
#pragma once

#include "graph/Graph.h"
#include "support/Npy.h"

#include <map>
#include <string>

namespace npuc::frontend {

/// What the command line says about a model's graph inputs.
struct ImportOptions {
  /// --input-shape: input name -> full shape (pins dynamic dimensions).
  std::map<std::string, Shape> inputShapes;
  /// --bind: input name -> data; the input becomes a constant initializer before import (as
  /// TVM's freeze_params), so operands that set shapes may come from it. Its dtype must be the
  /// input's element type, its shape the input's (dynamic dimensions take any extent).
  std::map<std::string, NpyArray> bound;
  /// Where inputShapes come from, as errors about them name it.
  std::string pinnedBy = "--input-shape";

  ImportOptions() = default;
  // Implicit: the callers that only pin shapes pass the map.
  ImportOptions(std::map<std::string, Shape> shapes) // NOLINT(google-explicit-constructor)
      : inputShapes(std::move(shapes)) {}
};

graph::Graph importOnnx(const std::string &path, const ImportOptions &options = {});

} // namespace npuc::frontend
