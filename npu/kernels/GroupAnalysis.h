// GroupAnalysis.h - recognising one fused group as a kernel shape (analyzeGroup, Plan.h): the
// state of one analysis and the checks every kernel kind shares. Internal to npu/kernels.
//
// The recognisers live in files named after what they decide:
//   Plan.cpp            which kernel kind the group is (its anchor node, or a view of layout
//                       ops), pooling and Concat parameters, and the public entry points;
//   PlanTensorUnit.cpp  Conv, Gemm and MatMul anchors: the tensor unit's operands (ConvParams as
//                       an implicit GEMM, or BatchMatmulParams read through strides);
//   PlanEpilogue.cpp    the elementwise chain fused after the anchor (EpilogueOp per node).
// A recogniser returns false once the group cannot run as that kind, after reject() recorded
// the first reason (GroupPlan::reject).
#pragma once

#include "npu/kernels/Plan.h"

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace npuc::npu::analysis {

/// The channel axis' extent in the NPU layout (axis 1 of a 4-D tensor, else the last; 1 for a
/// scalar).
int64_t channelsOf(const Shape &s);
/// How a tensor of shape `s` broadcasts to `out` in the NPU layout: 1 when every element of `out`
/// reads its one value, C when the channel axis is its only dim above 1 (one value per channel,
/// stored contiguously whatever the layout), 0 when the broadcast needs more than that.
int64_t channelBroadcast(const Shape &s, const Shape &out);
/// A constant that broadcasts to `out` along the channel axis only: 1 value (scalar) or C values;
/// empty when the broadcast needs more than a per-channel vector.
std::vector<float> channelConstant(const graph::Value &c, const Shape &out);

struct GroupAnalysis {
  const graph::Graph &g;
  const graph::FusedGroup &grp;
  const Hw &hw;
  GroupPlan p;
  /// Transposes of the group that feed the batched MatMul's operands, read through strides (not
  /// part of the epilogue chain).
  std::set<graph::NodeId> folded;
  /// The chain's values so far (the streamed input or the anchor's result, then each fused
  /// node's output), each with the number of epilogue ops before it: where a save goes.
  std::map<graph::ValueId, size_t> chainAt;
  /// The chain values a later op reads again, with their save slots.
  std::map<graph::ValueId, int> savedSlot;

  /// Records `why` unless a reason is recorded already; returns false.
  bool reject(std::string why) {
    if (p.reject.empty())
      p.reject = std::move(why);
    return false;
  }
  const graph::Value &val(graph::ValueId v) const { return g.value(v); }
  bool constant(graph::ValueId v) const { return v != graph::kNoValue && val(v).isConstant(); }
  /// Whether the target's vector unit has `op` (else rejects, naming node `n`).
  bool needOp(isa::VecOp op, const graph::Node &n);

  // Plan.cpp
  void run();
  bool anchorKernel(const graph::Node &a, size_t &first);
  void fuseChain(const graph::Node &a, size_t first);
  bool concat(const graph::Node &n);
  bool pool(const graph::Node &n);

  // PlanTensorUnit.cpp
  bool conv(const graph::Node &n);
  bool gemm(const graph::Node &n);
  bool matmul(const graph::Node &n);
  bool batchMatmul(const graph::Node &n);
  /// The rest of an attention group once the batched product's epilogue reached Softmax node
  /// `sm` (group node `at`) with chain value `scores`: Softmax along the last axis, then the
  /// group's last node, the product of the probabilities and V (Plan.h AttentionParams).
  bool attention(const graph::Node &sm, graph::ValueId scores, size_t at);
  /// `v` as an operand of a batched product of output shape `y`, read from DRAM as it is: a
  /// constant row-major (the kernel packs it), an activation in its DRAM layout. False for an
  /// integer constant.
  bool plainOperand(graph::ValueId v, const Shape &y, BatchMatmulParams::Operand &o) const;
  /// An epilogue operand of a batched product with the output's matrix shape, broadcast over the
  /// batch dims (or a constant of the output's shape): a Tensor operand read through its own
  /// strides (BatchMatmulParams::residuals). False when `other` is not one.
  bool batchResidual(graph::ValueId other, const Shape &out, EpilogueOp &e);
  void asMatrixProduct(int64_t M, int64_t K, int64_t N,
                       std::shared_ptr<const std::vector<float>> w);
  template <typename W> void asMatrixProduct(int64_t M, int64_t K, int64_t N, W w);
  std::pair<graph::ValueId, std::vector<int64_t>> stridedView(graph::ValueId v, graph::NodeId user);

  // PlanEpilogue.cpp
  bool epilogue(const graph::Node &n, graph::ValueId cur);
  /// The save slot of chain value `v`, inserting its save op where the chain reached it.
  int saveSlot(graph::ValueId v);
};

} // namespace npuc::npu::analysis
