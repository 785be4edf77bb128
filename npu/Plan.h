// Plan.h - what an NPU kernel must compute for one fused group, in the NPU's terms.
//
// analyzeGroup() recognises the group's shape (see graph/Passes.h fuseOps for how groups form):
// a matmul-like anchor (Conv, Gemm, MatMul with constant weights), a window pool, a global
// average pool, an elementwise chain, a Concat (each input copied into its slice of the output),
// or a pure view (Reshape/Flatten that does not move bytes in the NPU layout). The ops that
// follow the anchor become an epilogue of vector ops applied on the fp32 accumulator tile, each
// operand being nothing, a per-channel/scalar constant, a tensor of the output's shape (a
// residual), or a per-channel/scalar tensor broadcast over the pixels (a squeeze-excitation
// gate). Anything else is rejected with a reason; planGroup then hands the group to the
// loop-nest kernel (LowerLoopNest.cpp), and when that refuses it too, the group runs on the CPU.
#pragma once

#include "graph/Graph.h"
#include "npu/Hw.h"

#include <string>
#include <vector>

namespace npuc::npu {

/// LoopNest: no hand-written kernel shape fits; the group's reference loop nest goes through
/// emit-npu instead (LowerLoopNest.cpp).
enum class KernelKind { Matmul, Pool, GlobalAvgPool, Eltwise, Concat, View, LoopNest };

struct EpilogueOp {
  // Broadcast: a runtime tensor with 1 (scalar) or C (per-channel) elements, staged once in L1.
  enum class Operand { None, Const, Tensor, Broadcast };
  std::string op; // vector op name: add, sub, mul, max, min, relu, clip, ...
  Operand operand = Operand::None;
  bool operandFirst = false;               // the operand is the op's left side (c - x)
  graph::ValueId tensor = graph::kNoValue; // Operand::Tensor and Operand::Broadcast
  int64_t count = 0;                       // Operand::Broadcast: 1 (scalar) or C elements
  std::vector<float> constant;             // Operand::Const: 1 (scalar) or C values
  float imm0 = 0, imm1 = 0;
};

/// Matmul-like kernel: Y[n, oy, ox, oc] = sum W[oc, ic, kh, kw] X[n, iy, ix, g*icg + ic].
/// Gemm/MatMul are the 1x1 case on an [1, 1, M, K] image.
struct ConvParams {
  int64_t N = 1, H = 1, W = 1, C = 1; // input (NHWC view)
  int64_t OH = 1, OW = 1, OC = 1;
  int64_t KH = 1, KW = 1, SH = 1, SW = 1, DH = 1, DW = 1;
  int64_t padT = 0, padL = 0;
  int64_t G = 1;
  std::vector<float> weights; // [OC][C/G][KH][KW], alpha folded in
  std::vector<float> bias;    // [OC] or empty
  int64_t icg() const { return C / G; }
  int64_t ocg() const { return OC / G; }
  int64_t macs() const { return N * OH * OW * OC * icg() * KH * KW; }
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

struct GroupPlan {
  KernelKind kind = KernelKind::Eltwise;
  graph::ValueId input = graph::kNoValue;  // the main input (streamed)
  graph::ValueId output = graph::kNoValue; // the group's single output
  ConvParams conv;
  PoolParams pool;
  ConcatParams concat;
  std::vector<EpilogueOp> epilogue;
  // A Conv with one input and one output channel per group (group == C == OC): the vector unit
  // may run it (lowerConvKernel decides by cost).
  bool depthwise = false;
  int64_t channels = 1; // size of the innermost (channel) axis of the output in NPU layout
  int64_t elements = 0; // output elements
  std::string reject;   // non-empty: the NPU cannot run this group, and why
  /// LoopNest: the group itself, and why no hand-written kernel takes it.
  const graph::FusedGroup *group = nullptr;
  std::string handReject;
};

GroupPlan analyzeGroup(const graph::Graph &g, const graph::FusedGroup &grp, const Hw &hw);

/// analyzeGroup, and where it rejects, the loop-nest kernel's plan (kind LoopNest, its reason in
/// handReject): whether that kernel can run the group is only known once it is lowered.
GroupPlan planGroup(const graph::Graph &g, const graph::FusedGroup &grp, const Hw &hw);

/// The loop-nest kernel's plan for a group no hand-written kernel takes, `handReject` saying why
/// (their analysis rejected it, or their tiling found no feasible tile).
GroupPlan loopNestPlan(const graph::FusedGroup &grp, std::string handReject);

/// True when a value stored in the NPU layout is 4-D NHWC (others are row-major).
bool isNhwc(const graph::Value &v);

} // namespace npuc::npu
