// Kernels.h - lowering one analysed group (Plan.h) to a tiled TIR loop nest of NPU instructions.
//
// Each kernel chooses its tile sizes for every level between DRAM and the units from the target's
// capacities and the instruction field limits (an analytical cost model over the feasible tiles),
// reserves its on-chip buffers (two copies each when double buffering, so that loads of tile i+1
// overlap compute on tile i; the token pass then orders only what truly conflicts), and returns
// the loop nest. A kernel that finds no feasible tiling returns a reason instead.
#pragma once

#include "npu/kernels/Builder.h"
#include "npu/kernels/Plan.h"
#include "npu/Reject.h"
#include "npu/schedule/Schedule.h"
#include "support/Error.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace npuc::npu {

/// A constant's bytes as a kernel hands them to DramCtx::addConst: either packed already or
/// packed on demand by `make`. The dry runs (placement, fusion and residency trials, the schedule
/// spaces' costing) place nothing and read only the size, so a kernel whose packing is costly
/// (the tensor unit's block-major weights: 133 M of them in VGG-11, converted to fp16 per trial)
/// passes the size and the packer. Contract: `make` returns exactly `size` bytes and is called
/// at most once, only during the addConst call it was passed to (it may refer to the caller's
/// locals).
class ConstBytes {
public:
  ConstBytes(std::vector<uint8_t> bytes) // NOLINT(google-explicit-constructor): packed already
      : size_(bytes.size()), bytes_(std::move(bytes)), packed_(true) {}
  ConstBytes(size_t size, std::function<std::vector<uint8_t>()> make)
      : size_(size), make_(std::move(make)) {}
  ConstBytes(const ConstBytes &) = delete;
  ConstBytes &operator=(const ConstBytes &) = delete;

  size_t size() const { return size_; }
  /// The bytes, packing them on the first call.
  const std::vector<uint8_t> &bytes() const {
    if (!packed_) {
      bytes_ = make_();
      packed_ = true;
      NPUC_ASSERT(bytes_.size() == size_, "a constant's packer returns the size it announced");
    }
    return bytes_;
  }

private:
  size_t size_;
  std::function<std::vector<uint8_t>()> make_;
  mutable std::vector<uint8_t> bytes_;
  mutable bool packed_ = false;
};

/// Placement services a kernel needs from the segment compiler. A tensor's home is a level and
/// an address there: DRAM, or L1 for a tensor that stays resident between consecutive groups
/// (npu/pipeline/Resident.h). Kernels build their views of a tensor with level() and addrOf() and
/// copy through Builder::load/store, which pick the DRAM or the on-chip DMA by the levels, so every
/// kernel runs unchanged on a resident input or output.
struct DramCtx {
  std::function<int64_t(graph::ValueId)> addrOf;       // byte address in its level
  std::function<int64_t(const ConstBytes &)> addConst; // places constant bytes (DRAM)
  std::function<int(graph::ValueId)> levelOf;          // empty: every tensor in DRAM
  int level(graph::ValueId v, const Hw &hw) const { return levelOf ? levelOf(v) : hw.dram; }
};

struct Kernel {
  tir::Stmt body;
  std::string tiling; // the decision, for `npuc inspect`
  int64_t macs = 0;
  int64_t vectorElems = 0; // elements processed by vector instructions (roofline)
  int64_t dramBytes = 0;   // compulsory traffic (roofline) as if every tensor lived in DRAM
  double estCycles = 0;    // the cost model's estimate of the chosen tiling (kernel choice)
  std::map<int, int64_t> onChipPeak; // level index -> peak bytes reserved (Builder::peakBytes)
  std::optional<Reject> reject;      // set: no kernel (no feasible tiling, no instruction, ...)
  /// The share of `dramBytes` each activation tensor (not constant) accounts for, recorded by
  /// kernels that move part of a tensor or some of it more than once (the loop-nest kernel's
  /// chunks: a Slice reads its window only). Unset: the kernel moves each activation tensor it
  /// touches once, whole. The roofline drops a resident tensor's share: its home is L1.
  std::optional<std::map<graph::ValueId, int64_t>> tensorBytes;
  /// The point of the kernel's schedule space it lowered (npu/schedule/Space.h); kernels without
  /// a space record their strategy only.
  Schedule schedule;

  bool ok() const { return !reject; }
  /// The bytes of `dramBytes` that activation tensor `v` of `wholeBytes` accounts for.
  int64_t bytesOf(graph::ValueId v, int64_t wholeBytes) const {
    if (!tensorBytes)
      return wholeBytes;
    auto it = tensorBytes->find(v);
    return it == tensorBytes->end() ? 0 : it->second;
  }
  /// The reject's message, "" when there is none (reports, CPU placement reasons).
  const std::string &rejectText() const;
  static Kernel rejected(RejectKind kind, std::string message);
};

/// Options a kernel reads.
struct KernelOptions {
  bool doubleBuffer = true;
  bool naiveTiling = false; // matmul kernels: tensor-unit-sized tiles, one output row at a time
  /// Batched tensor-unit groups may run the images inside the output-channel blocks, loading
  /// each weight block once per batch (TensorUnit.h `nin`); false: the images outermost.
  bool batchWeightReuse = true;
  /// The point to lower instead of the default heuristic's (a forced or replayed schedule);
  /// its strategy must be one of the plan's (strategiesFor).
  std::optional<Schedule> schedule;
  /// Schedules forced by the user (`npuc compile --schedule`), by group key; KernelSelect
  /// looks each group up and sets `schedule`.
  std::shared_ptr<const ScheduleFile> forced;
  /// Schedules the tuner found, by group key (CompileOptions::tuned): soft points, taken where
  /// they are legal in the group's context and ignored with a warning elsewhere (KernelSelect).
  std::shared_ptr<const ScheduleFile> tuned;
};

// Conv/Gemm/MatMul groups with constant weights (the tensor unit, or for a depthwise conv the
// vector unit): schedule spaces (npu/kernels/KernelSpaces.h), lowered through KernelSelect.h.
/// MatMul of two activations, batched (Plan.h BatchMatmulParams; LowerBatchMatmul.cpp).
Kernel lowerBatchMatmulKernel(const GroupPlan &p, const graph::Graph &g, Builder &b,
                              const DramCtx &d, const KernelOptions &o);
Kernel lowerPoolKernel(const GroupPlan &p, const graph::Graph &g, Builder &b, const DramCtx &d,
                       const KernelOptions &o);
Kernel lowerGlobalPoolKernel(const GroupPlan &p, const graph::Graph &g, Builder &b,
                             const DramCtx &d, const KernelOptions &o);
Kernel lowerEltwiseKernel(const GroupPlan &p, const graph::Graph &g, Builder &b, const DramCtx &d,
                          const KernelOptions &o);
Kernel lowerConcatKernel(const GroupPlan &p, const graph::Graph &g, Builder &b, const DramCtx &d,
                         const KernelOptions &o);
/// Any group through its reference loop nest and emit-npu (LowerLoopNest.cpp): inputs whole in
/// L1, or in chunks of the outer loop (LoopNestTile.cpp: double-buffered when `o` allows and two
/// chunks fit); rejects when scalar or no chunk fits.
Kernel lowerLoopNestKernel(const graph::Graph &g, const graph::FusedGroup &grp, Builder &b,
                           const DramCtx &d, const KernelOptions &o);

/// Whether the vector unit works on a tensor view where it lives: a tensor resident in L1
/// between groups (npu/pipeline/Resident.h). Kernels then apply the epilogue straight into a
/// resident output and read a resident residual where it is, instead of copying it through a tile
/// buffer with the feed engine's `mov` (which would queue behind the next tile's operand moves).
inline bool inPlace(const Hw &hw, const View &v) {
  return v.level != hw.dram && hw.vectorReaches(v.level);
}

/// The epilogue's operands, staged on chip by the kernel.
struct EpilogueInputs {
  std::vector<View> operand; // per epilogue op: its Const/Tensor operand view (level -1: none)
};

/// Reserves the L1 constant vectors (fp32, C values or 1) and broadcast tensor operands (fp16, C
/// values or 1, loaded from the tensor's DRAM address) of the epilogue and returns the TIR that
/// loads them once; fills `consts` with each op's base view (s0 = 1 or 0, s1 = s2 = 0) at channel
/// 0. Returns the reason when L1 has no room (the kernel's reject: capacity), else nullopt.
std::optional<Reject> stageEpilogueConstants(const GroupPlan &p, Builder &b, const DramCtx &d,
                                             std::vector<View> &consts,
                                             std::vector<tir::Stmt> &prologue);

/// The staged Const/Broadcast operand views offset to channel `c0` (a tile's first channel);
/// other ops get a default view, for the kernel to fill (Tensor operands) or leave (None).
std::vector<View> operandsAtChannel(const GroupPlan &p, const std::vector<View> &consts,
                                    const tir::Expr &c0);

/// Applies the epilogue: `src` (fp16 in L1 or fp32 in acc) -> `acc` (fp32 scratch) -> `out`
/// (fp16 in L1). `ops[i]` is op i's operand view already offset to this tile's channels.
/// With no epilogue ops, copies src to out.
tir::Stmt applyEpilogue(const GroupPlan &p, const Builder &b, const View &src, const View &acc,
                        const View &out, const std::vector<View> &ops, const Dims &d);

/// Appends the epilogue of a tile (`src`/`acc` as in applyEpilogue) and its store to `ydst`, the
/// tile's place in the output's home: an output resident on chip is written there directly, any
/// other goes through the L1 tile `out` and a store.
void appendEpilogueAndStore(const GroupPlan &p, const Builder &b, const View &src, const View &acc,
                            const View &out, const View &ydst, const std::vector<View> &ops,
                            const Dims &d, std::vector<tir::Stmt> &body);

/// Vector ops the epilogue issues per element of the output (for cost and roofline).
int64_t epilogueOpsPerElement(const GroupPlan &p);

/// The plan with the conv's bias (if any) as the first epilogue op, an fp32 per-channel add on
/// the accumulator, ahead of the fused ops.
GroupPlan withBiasEpilogue(const GroupPlan &p);

/// int8 targets: the plan's epilogue (bias included) for an int32 accumulator: dequantised by
/// `dequant[c]` = s_in * s_w[c], the fused ops in fp32 with each residual's own scale, and
/// requantised into int8 with the output's scale (plan.quant). A null `dequant`: the epilogue
/// starts on values in the input's scale (the vector kernels' int8 input, or fp32 sums of it).
GroupPlan withQuantEpilogue(const GroupPlan &p, const std::vector<float> *dequant);

/// Loads the Tensor operands (residuals) of the epilogue for a tile of `pixels` x `tcc` channels
/// starting at element `elem0` (NPU layout, channel stride `C`) into `rbufs` (copy `it`), and
/// points their operand views in `ops` there; a resident operand is read where it lives. Then
/// savedOperands() for the saved chain values.
void stageTensorOperands(const GroupPlan &p, const Builder &b, const DramCtx &d,
                         const std::vector<OnChip> &rbufs, const tir::Expr &it,
                         const tir::Expr &elem0, int64_t C, const tir::Expr &tcc,
                         const tir::Expr &pixels, std::vector<View> &ops,
                         std::vector<tir::Stmt> &out);

/// Points the views in `ops` of the epilogue's saves and Saved operands at their tile buffers:
/// `rbufs` (copy `it`, `tcc` channels per pixel) holds one buffer per Tensor operand, then one per
/// save, each in epilogue order.
void savedOperands(const GroupPlan &p, const std::vector<OnChip> &rbufs, const tir::Expr &it,
                   const tir::Expr &tcc, isa::ElemType act, std::vector<View> &ops);

/// Number of tile buffers the epilogue needs: one per Tensor operand (residual) it reads and one
/// per chain value it saves.
int tensorOperands(const GroupPlan &p);
/// Number of Tensor operands (residuals) the epilogue reads from their homes, tile by tile: the
/// DRAM traffic of tensorOperands (a saved value never leaves the chip).
int residualOperands(const GroupPlan &p);

/// DRAM bytes of the epilogue's Broadcast operands (each loaded once): part of a kernel's
/// compulsory traffic, like its residuals.
int64_t broadcastOperandBytes(const GroupPlan &p, int64_t elemBytes);

} // namespace npuc::npu
