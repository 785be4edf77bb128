// Plan.h - what an NPU kernel must compute for one fused group, in the NPU's terms.
//
// analyzeGroup() recognises the group's shape (see graph/Passes.h fuseOps for how groups form):
// a matmul-like anchor (Conv, Gemm, MatMul with constant weights), a batched MatMul of two
// activations (attention's Q x K^T and scores x V, possibly behind Transposes in the group that
// the kernel folds into its strided loads), a window pool, a global
// average pool, an elementwise chain, a Concat (each input copied into its slice of the output),
// or a pure view (layout ops whose transforms cancel in the NPU layout: npu/hw/DramLayout.h). The
// ops that follow the anchor become an epilogue of vector ops applied on the fp32 accumulator tile,
// each operand being nothing, a per-channel/scalar constant, a tensor of the output's shape (a
// residual), or a per-channel/scalar tensor broadcast over the pixels (a squeeze-excitation
// gate). Anything else is rejected with a reason; planGroup then hands the group to the
// loop-nest kernel (LowerLoopNest.cpp), and when that refuses it too, the group runs on the CPU.
#pragma once

#include "graph/Graph.h"
#include "npu/hw/DramLayout.h"
#include "npu/hw/Hw.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace npuc::npu {

/// LoopNest: no hand-written kernel shape fits; the group's reference loop nest goes through
/// emit-npu instead (LowerLoopNest.cpp).
/// BatchMatmul: a MatMul whose right operand is an activation (LowerBatchMatmul.cpp).
/// Attention: a batched MatMul and its epilogue (the scores), Softmax along their last axis and a
/// second product of the probabilities (LowerAttention.cpp): the scores never leave the chip.
enum class KernelKind {
  Matmul,
  BatchMatmul,
  Attention,
  Pool,
  GlobalAvgPool,
  Eltwise,
  Concat,
  View,
  LoopNest
};

struct EpilogueOp {
  // Broadcast: a runtime tensor with 1 (scalar) or C (per-channel) elements, staged once in L1.
  // Saved: an earlier value of the chain itself (x * f(x): GELU, SiLU, HardSwish after a conv or
  // matmul), which a `save` op copied into a tile buffer of the output's dtype when the chain
  // reached it.
  enum class Operand { None, Const, Tensor, Broadcast, Saved };
  isa::VecOp op = isa::VecOp::Copy; // add, sub, mul, max, min, relu, clip, ...
  Operand operand = Operand::None;
  bool operandFirst = false;               // the operand is the op's left side (c - x)
  graph::ValueId tensor = graph::kNoValue; // Operand::Tensor and Operand::Broadcast
  int64_t count = 0;                       // Operand::Broadcast: 1 (scalar) or C elements
  std::vector<float> constant;             // Operand::Const: 1 (scalar) or C values
  float imm0 = 0, imm1 = 0;
  int slot = -1;     // Operand::Saved: which saved value (numbered as the analysis met readers)
  bool save = false; // a copy of the chain value into `slot` (the chain value is unchanged)
};

/// Matmul-like kernel: Y[n, oy, ox, oc] = sum W[oc, ic, kh, kw] X[n, iy, ix, g*icg + ic].
/// Gemm/MatMul are the 1x1 case on an [1, 1, M, K] image.
struct ConvParams {
  int64_t N = 1, H = 1, W = 1, C = 1; // input (NHWC view)
  int64_t OH = 1, OW = 1, OC = 1;
  int64_t KH = 1, KW = 1, SH = 1, SW = 1, DH = 1, DW = 1;
  int64_t padT = 0, padL = 0;
  int64_t G = 1;
  /// [OC][C/G][KH][KW], alpha folded in. Shared and immutable: plans are copied freely (every
  /// schedule space holds two), and a large layer's weights (vgg11's first Gemm: 411 MB) must
  /// not be copied with them.
  std::shared_ptr<const std::vector<float>> weights;
  /// The weights are a matrix product's right operand as the graph holds it, [C][OC] (1x1, one
  /// group), shared instead of transposed into a copy at every analysis of the group.
  bool weightsCOC = false;
  std::vector<float> bias; // [OC] or empty
  /// Weight W[oc, ic, kh, kw] in either layout.
  float weight(int64_t oc, int64_t ic, int64_t kh, int64_t kw) const {
    return weightsCOC ? (*weights)[static_cast<size_t>(ic * OC + oc)]
                      : (*weights)[static_cast<size_t>(((oc * icg() + ic) * KH + kh) * KW + kw)];
  }
  /// The weights as [OC][C/G][KH][KW], copied when they are held the other way.
  std::vector<float> weightsOCFirst() const;
  int64_t icg() const { return C / G; }
  int64_t ocg() const { return OC / G; }
  int64_t macs() const { return N * OH * OW * OC * icg() * KH * KW; }
};

/// MatMul of two activations: Y[b0][b1][m][n] = sum_k A[b0][b1][m][k] B[b0][b1][k][n]. Each
/// tensor is addressed in DRAM (fp16, its NPU layout: row-major, or NHWC when 4-D) through
/// element strides, so a broadcast batch dim has stride 0 and a Transpose folded into the group
/// (its input is what lives in DRAM) only permutes the strides. b0, b1 are the output's batch
/// dims (1 if absent).
struct BatchMatmulParams {
  struct Operand {
    graph::ValueId value = graph::kNoValue; // the DRAM tensor read (a folded Transpose's input)
    int64_t batch[2] = {0, 0};              // strides of b0, b1 (0: broadcast)
    int64_t row = 0, col = 0;               // A: m, k strides; B: k, n; Y: m, n
  };
  int64_t batch[2] = {1, 1};
  int64_t M = 1, K = 1, N = 1;
  Operand a, b, y; // y: the output (and a residual of its shape) in its layout
  /// Epilogue tensor operands read through strides of their own (a constant, or a tensor of the
  /// output's matrix shape broadcast over its batch dims: an attention mask [S, S] on scores
  /// [H, S, S]); a residual of the output's shape and layout is read with y's strides.
  std::map<graph::ValueId, Operand> residuals;
  int folded = 0; // Transposes folded into the operand loads
  int64_t batches() const { return batch[0] * batch[1]; }
  int64_t macs() const { return batches() * M * K * N; }
};

/// Attention in one group: scores = Q x K (GroupPlan::bmm, whose y describes the scores' DRAM
/// layout, which a residual of their shape such as a mask has; they are never stored) with the
/// epilogue (scale, mask), P = Softmax(scores) along the last axis, Y = P x V. pv's a (P) lives on
/// chip; its b is V and its y the group's output; pv.M == bmm.M, pv.K == bmm.N, the same batch.
struct AttentionParams {
  BatchMatmulParams pv;
  graph::ValueId scores = graph::kNoValue; // the epilogue's result, Softmax's operand
  graph::ValueId probs = graph::kNoValue;  // Softmax's result, the second product's left operand
};

struct PoolParams {
  bool isMax = true;
  int64_t N = 1, H = 1, W = 1, C = 1, OH = 1, OW = 1;
  int64_t KH = 1, KW = 1, SH = 1, SW = 1, padT = 0, padL = 0;
  std::vector<float> divisor; // avg: 1/count per output pixel [OH][OW]
};

/// Concat in the NPU layout: with the output's physical (NHWC or row-major) dims split at the
/// concatenated axis into [outer][axis][inner], input i is an [outer][rows_i] block (rows_i =
/// its axis extent x inner, contiguous) that lands at column colOffset_i of the output's
/// [outer][outRow] block. A channel concat of NHWC tensors has outer = N*H*W, inner = 1.
struct ConcatParams {
  struct Part {
    graph::ValueId value = graph::kNoValue;
    int64_t row = 0;       // elements per outer index
    int64_t colOffset = 0; // where its row starts in the output's row
  };
  std::vector<Part> parts;
  int64_t outer = 1, outRow = 1;
};

/// int8 targets: the activation scales a kernel quantises with (npu/hw/Quant.h). Placement's dry
/// runs leave `calibrated` false and every scale 1: tiling does not depend on the scales, but
/// with equal scales the epilogue needs no rescaling ops, so placement's vector-work estimate of
/// an int8 group can be a few ops per element lower than the compiled kernel's.
struct QuantParams {
  bool calibrated = false;
  float in = 1, out = 1;                   // the streamed input's and the output's scales
  std::map<graph::ValueId, float> tensors; // residual operands' scales
  float of(graph::ValueId v) const;
};

struct GroupPlan {
  KernelKind kind = KernelKind::Eltwise;
  graph::ValueId input = graph::kNoValue;  // the main input (streamed)
  graph::ValueId output = graph::kNoValue; // the group's single output
  ConvParams conv;
  BatchMatmulParams bmm;
  AttentionParams attn;
  PoolParams pool;
  ConcatParams concat;
  std::vector<EpilogueOp> epilogue;
  // A Conv with one input and one output channel per group (group == C == OC): the vector unit
  // may run it (KernelSelect.cpp decides by cost).
  bool depthwise = false;
  int64_t channels = 1; // size of the innermost (channel) axis of the output in NPU layout
  int64_t elements = 0; // output elements
  QuantParams quant;    // int8 targets only
  LayoutChain layout;   // a group of layout ops only: whether its transforms cancel
  std::string reject;   // non-empty: the NPU cannot run this group, and why
  /// LoopNest: the group itself, and why no hand-written kernel takes it.
  const graph::FusedGroup *group = nullptr;
  std::string handReject;
};

GroupPlan analyzeGroup(const graph::Graph &g, const graph::FusedGroup &grp, const Hw &hw);

/// int8 targets: "" when the quantised kernels run the analysed group, else the reason it stays
/// on the CPU (QuantCoverage.cpp, from the quantisation scheme of npu/hw/Quant.h).
std::string int8Reject(const graph::Graph &g, const GroupPlan &p, const graph::FusedGroup &grp);
/// int8 targets: whether the quantised epilogue takes a residual (an Operand::Tensor) with `op`.
bool quantisedResidualOp(isa::VecOp op);

/// analyzeGroup, and where it rejects, the loop-nest kernel's plan (kind LoopNest, its reason in
/// handReject): whether that kernel can run the group is only known once it is lowered.
GroupPlan planGroup(const graph::Graph &g, const graph::FusedGroup &grp, const Hw &hw);

/// The loop-nest kernel's plan for a group no hand-written kernel takes, `handReject` saying why
/// (their analysis rejected it, or their tiling found no feasible tile).
GroupPlan loopNestPlan(const graph::FusedGroup &grp, std::string handReject);

/// A batched MatMul operand's (or output's) element strides from the element strides `st` of a
/// tensor of shape `s` in DRAM, its batch dims right-aligned to those of the output shape `y`.
void setOperandStrides(const Shape &y, const Shape &s, const std::vector<int64_t> &st,
                       BatchMatmulParams::Operand &o);

/// True when a value's DRAM layout (dramLayoutOf) is NHWC.
bool isNhwc(const graph::Value &v);

} // namespace npuc::npu
