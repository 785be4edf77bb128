// Reference.h - the reference executor: plain fp32 C++ kernels for every supported operator.
//
// This is the test oracle for the NPU and CPU-fallback paths, so the kernels favour obviously
// correct loops (NCHW, double accumulation) over speed. Constants come from the graph; the caller
// supplies every graph input.
#pragma once

#include "graph/Graph.h"
#include "support/Tensor.h"

#include <map>
#include <vector>

namespace npuc::graph {

/// Runs the graph and returns the graph outputs. Input shape mismatches are user errors naming
/// the input, the expected and the given shape.
std::map<ValueId, HostTensor> runReference(const Graph &g,
                                           const std::map<ValueId, HostTensor> &inputs);

/// Like runReference but returns every value computed or read (inputs, constants, intermediates).
std::map<ValueId, HostTensor> runReferenceAll(const Graph &g,
                                              const std::map<ValueId, HostTensor> &inputs);

/// Evaluates one node on host tensors (one per node input; nullptr for omitted optional inputs).
/// Returns one tensor per node output. Used by the executor and by constant folding.
std::vector<HostTensor> evalNode(const Graph &g, const Node &n,
                                 const std::vector<const HostTensor *> &ins);

/// Fails naming the node when an index of a Gather or GatherElements (`indices` as fp32
/// integers, as at run time; a negative one counts from the end) lies outside the data's
/// extent along the axis. The executor checks every gather this way, and so does the compiled
/// model's runtime before a CPU kernel, whose code clamps (tools/driver/Runtime.cpp).
void checkGatherIndices(const Node &n, const Shape &data, const HostTensor &indices);

/// Whether the node reads indices from its input 1 at run time that must lie inside its input
/// 0: Gather, GatherElements, GatherND, ScatterElements, ScatterND, and ReverseSequence's
/// sequence_lens (OneHot's out-of-range indices are defined: a row of off values).
bool readsIndexInput(OpKind k);

/// The input of an operator that holds indices or labels read at run time, whose CPU kernel
/// clamps them (its code has no error channel): readsIndexInput's operators (input 1),
/// MaxUnpool (1: flat output positions), NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss
/// (1: class labels), MaxRoiPool (1: each roi's batch index) and RoiAlign (2: batch indices);
/// -1 for every other operator.
int indexInput(OpKind k);

/// Fails naming the node when input indexInput(n.kind), given as `indices` (fp32 integers, as at
/// run time), holds a value the operator does not define. The compiled model's runtime checks
/// every such input before a CPU kernel (tools/driver/Runtime.cpp), as the reference kernels do.
void checkIndexOperand(const Graph &g, const Node &n, const HostTensor &indices);

/// checkGatherIndices for every operator readsIndexInput names: fails naming the node when an
/// index in `indices` (fp32 integers, negative ones counting from the end where the operator
/// allows them) lies outside `data`, the shape of the node's input 0. The executor checks every
/// such node, and the compiled model's runtime checks them before a CPU kernel, whose code
/// clamps (tools/driver/Runtime.cpp).
void checkIndexInput(const Node &n, const Shape &data, const HostTensor &indices);
/// Fails naming the node when an entry of a recurrent operator's sequence_lens (fp32 integers,
/// as at run time) is not an integer in [0, seqLength]. The executor checks them, and so does
/// the compiled model's runtime before a CPU kernel, whose code clamps (tools/driver/Runtime.cpp).
void checkSequenceLens(const Node &n, int64_t seqLength, const HostTensor &lens);

/// A constant value's contents as fp32 (int64 constants are converted).
HostTensor constantTensor(const Value &v);

} // namespace npuc::graph
