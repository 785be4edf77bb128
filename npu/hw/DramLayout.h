// DramLayout.h - each tensor's layout in the NPU's DRAM as an explicit physical dim order, the one
// place that decides it, and the cancellation analysis of groups of layout ops.
//
// The NPU's kernels tile 4-D activations with channels innermost (NHWC), everything else
// row-major in its logical shape. A group made only of layout ops (Transpose, Reshape, Flatten,
// Squeeze, Unsqueeze, Identity) maps its output's elements onto its input's bytes; composed with
// the layouts at both ends, that map is either the identity on bytes - the model's transforms and
// the NPU's own layout change cancel, and the group is a zero-copy view aliasing its input - or a
// real transform that one copy group runs. analyzeLayoutChain decides which by stride
// propagation: start from the input's element strides in its layout, permute them through each
// Transpose, merge or split them through each reshape (only dims contiguous in the physical order
// merge; unit dims are free), and compare the result with the output layout's strides.
#pragma once

#include "graph/Graph.h"

#include <optional>
#include <string>
#include <vector>

namespace npuc::npu {

/// A tensor's logical dims in physical order, outermost first (the last one is contiguous).
/// An empty order is row-major whatever the rank.
struct DramLayout {
  std::vector<int> order;
  static const DramLayout NHWC;     // {0, 2, 3, 1}: channels innermost
  static const DramLayout RowMajor; // {}
  bool operator==(const DramLayout &o) const { return order == o.order; }
  /// "row_major", "nhwc", or the order ("0,2,1") for any other permutation.
  std::string name() const;
  /// The inverse of name(); nullopt when `s` names no layout.
  static std::optional<DramLayout> parse(const std::string &s);
};
inline const DramLayout DramLayout::NHWC{{0, 2, 3, 1}};
inline const DramLayout DramLayout::RowMajor{};

/// The layout decision, made here only: NHWC for a 4-D tensor (what the conv, pool and vector
/// kernels tile), row-major for every other rank. Kernels, the segment's DRAM tensors and the
/// host conversion (packTensor) all take a value's layout from this.
DramLayout dramLayoutOf(const graph::Value &v);

/// Element strides of each logical dim of `shape` stored in `layout` (a row-major order when the
/// layout's rank does not match; NPUC_ASSERT on a malformed order).
std::vector<int64_t> layoutStrides(const Shape &shape, const DramLayout &layout);

/// The element strides that read a tensor of shape `from` (element strides `st`) as shape `to`
/// without moving bytes, or nullopt when that needs a copy (dims merged by the reshape are not
/// contiguous in memory). Unit dims are free: they get stride 0.
std::optional<std::vector<int64_t>> reshapeStrides(const Shape &from,
                                                   const std::vector<int64_t> &st, const Shape &to);

/// The layout in which a dense tensor of shape `s` has element strides `st` (unit dims, whose
/// strides do not matter, outermost), or nullopt when `st` is not a dense layout of `s`.
std::optional<DramLayout> layoutWithStrides(const Shape &s, const std::vector<int64_t> &st);

/// What a fused group of layout ops does to bytes in DRAM.
struct LayoutChain {
  bool layoutOnly = false; // every node a layout op, in a chain (see graph::isNodeChain)
  bool cancels = false;    // the identity on bytes: a zero-copy view of `input`
  graph::ValueId input = graph::kNoValue, output = graph::kNoValue;
  int ops = 0;          // layout ops in the group
  std::string describe; // "transforms cancel (zero-copy view)", or the transform that runs
  /// When the group does not cancel: the layout the output would need for it to cancel (its
  /// input in its own layout), and the layout the input would need (the output in its own);
  /// nullopt where no layout does. A segment whose host writes the input or reads the output
  /// can choose that layout at the boundary (compileSegment).
  std::optional<DramLayout> outputAs, inputAs;
};

LayoutChain analyzeLayoutChain(const graph::Graph &g, const graph::FusedGroup &grp);

} // namespace npuc::npu
