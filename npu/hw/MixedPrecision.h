// MixedPrecision.h - which NPU groups an int8 target keeps wide (in fp32, on the CPU) so that the
// model's output meets an accuracy target (`npuc compile --int8-accuracy COS`,
// docs/QUANTISATION.md).
//
// The measure is the cosine similarity of the graph's outputs (every output, concatenated)
// against the fp32 reference executor's on the same input, the worst over the samples given (a
// calibration set). Quantised groups are evaluated by the quantised reference (npu/hw/Quant.h:
// the inputs, outputs and weights an NPU group holds in int8 fake-quantised, everything else in
// fp32), the oracle the int8 kernels are tested against.
//
// Sensitivity of an NPU group: that cosine when the group alone is int8 (every other group fp32).
// The choice keeps the k most sensitive groups wide, with the smallest k for which the model
// (every other NPU group int8) meets the target, found by bisection on k: keeping more groups
// wide raises the cosine in practice, and the k chosen is the one checked, so the result meets
// the target when any k does. When even k = all does not (a target above the fp32 CPU's own
// agreement is impossible only with a CPU that differs: the reference is the CPU's arithmetic),
// every candidate is kept wide and `met` says so. Groups of view ops only move no arithmetic and
// are never candidates.
#pragma once

#include "graph/Graph.h"
#include "npu/hw/Quant.h"
#include "support/Tensor.h"

#include <map>
#include <vector>

namespace npuc::npu {

using Sample = std::map<graph::ValueId, HostTensor>; // a tensor for every graph input

struct WideChoice {
  std::vector<int> groups;           // ids of the groups kept wide, most sensitive first
  std::map<int, double> sensitivity; // per candidate group id: the cosine with it alone int8
  double before = 1;                 // the cosine with every NPU group int8
  double after = 1;                  // with the groups kept wide in fp32
  bool met = false;                  // after >= the target
};

/// The cosine similarity of `a` and `b` over every value of every graph output (1 when both are
/// all zero).
double outputCosine(const graph::Graph &g, const std::map<graph::ValueId, HostTensor> &a,
                    const std::map<graph::ValueId, HostTensor> &b);

/// The groups to keep wide for `target` (see above), over `samples` (at least one); `g`'s groups
/// must be placed, and only its NPU groups are candidates. Groups of views are int8 while a
/// computing int8 group produces or reads their values, and otherwise move with the wide ones.
WideChoice chooseWideGroups(const graph::Graph &g, const QuantTable &q,
                            const std::vector<Sample> &samples, double target);

/// The NPU groups of views that the groups `wide` (ids) take with them to the CPU: those no int8
/// group that computes produces a value for or reads a value of.
std::vector<int> viewsKeptWide(const graph::Graph &g, const std::vector<int> &wide);

} // namespace npuc::npu
