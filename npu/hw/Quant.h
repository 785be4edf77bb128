// Quant.h - post-training static int8 quantisation for NPU targets whose tensor unit multiplies
// int8 operands (operand_dtype int8, acc_dtype int32 in the target YAML).
//
// Activations are per-tensor symmetric int8 (zero point 0, scale = threshold / 127, the threshold
// chosen from the fp32 reference executor's values over a calibration set: by default the
// largest |x|, npu/hw/Calibration.h); weights are per-output-channel symmetric int8
// (scale = max|w[oc]| / 127, values in [-127, 127]). Every tensor an NPU group reads or writes
// in DRAM is int8 with its activation scale; inside a group the accumulator is int32 and the
// epilogue works in fp32 (npu/kernels/Epilogue.cpp). The host quantises a segment's inputs and
// dequantises its outputs with the same scales (npu/hw/Layout.cpp), so CPU groups stay fp32.
//
// runQuantisedReference is the test oracle of that scheme: the graph evaluated in fp32 with
// fake quantisation at exactly the points where the NPU quantises.
#pragma once

#include "graph/Graph.h"
#include "npu/hw/Calibration.h"
#include "support/Tensor.h"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace npuc::npu {

struct QuantTable {
  std::map<graph::ValueId, float> scale; // activation scale of every non-constant value
  std::string source;                    // what the calibration ran on (for inspect/report)
  /// The scale of `v`; a value without one is a compiler bug (calibration covers every value).
  float of(graph::ValueId v) const;
  /// The scale of any operand of `g`: of() for a computed value, and for a constant (which
  /// calibration leaves out) the scale of its own range, symmetricScale(max |x|).
  float ofOperand(const graph::Graph &g, graph::ValueId v) const;
};

/// Symmetric scale for a tensor whose largest magnitude is `maxAbs`: maxAbs / 127. A range that
/// sizes nothing (0: calibration saw only zeros, as of x + (-x); not finite; so small that
/// 1/scale overflows fp32) gets the scale of the range [-1, 1], 1/127: values the calibration
/// did not see are kept to within 1/254 up to 1 in magnitude, where a scale of 1 would round every
/// one below 0.5 to 0.
float symmetricScale(float maxAbs);
/// round-to-nearest-even(x * (1/scale)) saturated to [-128, 127]: what the NPU's `muladd` with
/// an int8 destination and imm0 = 1/scale computes, and what the host does at a boundary.
int8_t quantise(float x, float scale);
inline float dequantise(int8_t q, float scale) {
  return static_cast<float>(q) * scale;
}
inline float fakeQuantise(float x, float scale) {
  return dequantise(quantise(x, scale), scale);
}

/// Per-output-channel quantisation of `w`, `channels` rows of w.size()/channels values each:
/// returns the scale of every row and writes the int8 values to `q`.
std::vector<float> quantiseWeights(const std::vector<float> &w, int64_t channels,
                                   std::vector<int8_t> &q);

/// A fixed-seed standard-normal tensor for every float graph input, zeros for integer and bool
/// inputs (the default calibration input).
std::map<graph::ValueId, HostTensor> defaultCalibrationInputs(const graph::Graph &g);

/// Runs the fp32 reference on `inputs` and records every non-constant value's scale, from its own
/// range. A view op (Reshape, Flatten, ...) gives its output its input's scale (the NPU aliases
/// the two), and a Concat's inputs and output share the scale of the largest of their ranges
/// (the NPU copies int8 bytes); a value whose range is 0 takes the others' and never imposes
/// its default scale on them (symmetricScale).
QuantTable calibrate(const graph::Graph &g, const std::map<graph::ValueId, HostTensor> &inputs,
                     std::string source);
/// The same over a calibration set, each sample a tensor for every graph input, each value's
/// threshold chosen by `spec` from what it held over all of them (npu/hw/Calibration.h).
QuantTable calibrate(const graph::Graph &g,
                     const std::vector<std::map<graph::ValueId, HostTensor>> &samples,
                     const CalibrationSpec &spec, std::string source);

/// The graph in fp32 with fake quantisation where the NPU quantises: NPU groups' non-constant
/// inputs and outputs (int8 in DRAM) and the weights of NPU Conv/Gemm/MatMul anchors (per output
/// channel). Groups must be placed. Returns every value, like graph::runReferenceAll.
std::map<graph::ValueId, HostTensor>
runQuantisedReference(const graph::Graph &g, const QuantTable &q,
                      const std::map<graph::ValueId, HostTensor> &inputs);

/// Evaluates groups from..end of `g` into `env` (which holds the graph's inputs and every value
/// the earlier groups computed), the groups `int8(i)` names quantised as on the NPU and the
/// others in fp32, as runQuantisedReference does with the NPU groups. Placement is not read.
void evalQuantised(const graph::Graph &g, const QuantTable &q,
                   std::map<graph::ValueId, HostTensor> &env, size_t from,
                   const std::function<bool(size_t)> &int8);

} // namespace npuc::npu
