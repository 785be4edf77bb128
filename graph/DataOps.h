// DataOps.h - what the shape rules, reference kernels and CPU lowerings of the scatters and of
// Einsum share: the scatter reduction as an enum, and an Einsum equation resolved against its
// input shapes into one label per tensor dimension.
//
// Attributes are in the frontend's normalised form (frontend/OnnxDataOps.cpp): `reduction` is
// one of none/add/mul/max/min, `equation` has no spaces.
#pragma once

#include "graph/Graph.h"

#include <vector>

namespace npuc::graph {

/// How a scatter combines an update with the element it lands on.
enum class ScatterReduction { None, Add, Mul, Max, Min };

/// The node's `reduction` attribute (default none); another value is a user error naming it.
ScatterReduction scatterReduction(const Node &n);

/// An Einsum equation resolved against its input shapes. Labels are numbered: the letters in
/// order of first appearance, then one label per dimension the ellipsis covers (right-aligned:
/// an input whose ellipsis covers fewer dimensions uses the last ones, numpy broadcasting).
struct EinsumSpec {
  std::vector<std::vector<int>> inputs; // the label of each dimension of each input
  std::vector<int> output;              // the label of each output dimension
  std::vector<int64_t> extents;         // each label's extent (broadcast over the inputs)
  /// The labels summed over: every label not in the output, ascending.
  std::vector<int> summed() const;
};

/// Parses the node's `equation` for inputs of shapes `ins`: explicit (`ij,jk->ik`) or implicit
/// (`ij,jk`: the output is the ellipsis, then the letters that occur once, alphabetically) form;
/// a letter repeated in one input takes its diagonal. Malformed equations and mismatched extents
/// are user errors naming the node.
EinsumSpec parseEinsum(const Node &n, const std::vector<Shape> &ins);

} // namespace npuc::graph
