// Accuracy.h - where a compiled model loses accuracy: every value a run held on the host (each
// NPU segment's outputs, each CPU group's outputs) against the fp32 reference executor's value of
// the same name in the model (`npuc run --compare-ref MODEL`, docs/QUANTISATION.md).
//
// Contract: values are matched by name. Graph passes keep a name's meaning (a pass that makes a
// value compute something else gives it another value: fold-bn, sink-scale), so a matched pair is
// the same quantity; a value the passes created (a name the model lacks) or whose shape differs
// is listed as unmatched, never compared. Errors are over finite pairs; elements finite on one
// side only are counted apart.
#pragma once

#include "tools/driver/Runtime.h"

#include <nlohmann/json.hpp>

#include <limits>
#include <string>
#include <vector>

namespace npuc::driver {

/// One value's error against the reference.
struct TensorError {
  std::string name;
  int segment = -1;     // index into CompiledModel::segments
  bool npu = false;     // computed by an NPU segment
  std::string producer; // the group that computed it: "group 3 'conv1' (Conv+Relu)"
  bool graphOutput = false;
  Shape shape;
  double maxAbsErr = 0, meanAbsErr = 0;
  double refMaxAbs = 0;
  double cosine = 1;                                      // 1 when both are all zeros
  double snrDb = std::numeric_limits<double>::infinity(); // 10 log10(sum ref^2 / sum err^2)
  int64_t nonFinite = 0; // elements finite on one side only, or non-finite and different
};

struct AccuracyReport {
  std::vector<TensorError> tensors;   // in execution order
  std::vector<std::string> unmatched; // "name: reason"
};

/// Error of `got` against `ref` (same element count; either storage, compared as doubles).
TensorError measureError(const HostTensor &got, const HostTensor &ref);

/// Compares each of `run`'s host values (RunOptions::keepValues) with `ref`, the reference
/// executor's values of `model` (graph::runReferenceAll), by name. Fails when the run computed
/// graph outputs and none has a counterpart in the model (not the model it was compiled from);
/// outputs that are inputs passed through or constants are not host values and prove nothing.
AccuracyReport compareWithReference(const CompiledModel &m, const RunResult &run,
                                    const graph::Graph &model,
                                    const std::map<graph::ValueId, HostTensor> &ref);

nlohmann::json accuracyJson(const AccuracyReport &r);
/// A table, one line per value, then the unmatched values and the worst value.
std::string formatAccuracy(const AccuracyReport &r);

} // namespace npuc::driver
