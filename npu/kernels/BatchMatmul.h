// BatchMatmul.h - the batched matmul kernel's decisions (npu/kernels/LowerBatchMatmul.cpp): the
// output tile (tm rows x tn columns), the k-chunk tk that goes through L0 at a time, and the buffer
// count, judged against the target's capacities and the L1 the group has left once its epilogue
// constants are staged.
#pragma once

#include "npu/kernels/Kernels.h"

#include <optional>
#include <string>
#include <vector>

namespace npuc::npu {

/// Sizes of the blocks a dimension of `total` splits into with tile `t` (the last one narrower).
std::vector<int64_t> blocks(int64_t total, int64_t t);

struct BmmTiling {
  int64_t tm = 0, tn = 0, tk = 0;
  bool operator==(const BmmTiling &) const = default;
};

/// The feasibility and the cost model of a batched matmul's tilings. Pure: no Builder, no
/// placement; `l1Free` is what L1 holds after the epilogue constants.
struct BmmModel {
  BmmModel(const GroupPlan &p, const Hw &hw, int64_t l1Free, bool doubleBuffer);
  const Hw &hw;
  const BatchMatmulParams &q;
  int64_t M, K, N, Bt;
  int nb, nres; // nres: tile buffers of the epilogue (residuals and saves)
  int nresDram; // the residuals among them, read from their homes per tile
  int64_t opsPerElem, l1Free;

  /// Every buffer of the tiling fits its level (nb copies), and every size and stride its field.
  bool fits(const BmmTiling &x) const;
  /// Estimated cycles (the busiest resource, plus one tile of the others when double-buffered).
  double cost(const BmmTiling &x) const;
  /// The candidate column tiles (multiples of the array's columns, and N) and k-chunks
  /// (multiples of its rows, and K); any tm from 1 to M.
  std::vector<int64_t> tnValues() const;
  std::vector<int64_t> tkValues() const;
  /// The largest tm that fits with (tn, tk), 0 when none.
  int64_t largestTm(int64_t tn, int64_t tk) const;
  /// The heuristic's choice: per (tn, tk) the largest tm, the cheapest of those (ties within
  /// 0.1% to the largest tile); `naive`: array-sized tiles, one row (the ablation baseline).
  std::optional<BmmTiling> heuristic(bool naive) const;
  /// The reject text when no tiling fits.
  std::string noTiling() const;
};

/// `d` with the constants among `read` (a product's constant operands, a constant epilogue
/// tensor such as an attention mask) placed as fp16 row-major bytes in DRAM, where the operand
/// views read them (the analysis set their strides row-major).
DramCtx withConstantOperands(const std::vector<graph::ValueId> &read, const graph::Graph &g,
                             const DramCtx &d, const Hw &hw);
/// A product's operands and its epilogue's own-strided tensors (BatchMatmulParams::residuals).
std::vector<graph::ValueId> productOperands(const BatchMatmulParams &q);

/// Operand `o` of a product (A, B, the output, or an epilogue tensor read through `o`'s strides)
/// as a view of its home at batch (b0, b1) and element offset `at` within the batch, with element
/// strides `s0` and `s1`.
View productView(const BatchMatmulParams::Operand &o, const DramCtx &d, const Hw &hw,
                 const tir::Expr &b0, const tir::Expr &b1, const tir::Expr &at, int64_t s0,
                 int64_t s1);

/// The epilogue operands of a product's output tile at batch (b0, b1), rows [m0, m0 + mcur),
/// columns [n0, n0 + ncur): each Tensor operand (a residual, a mask) loaded into its tile buffer
/// of `rbufs` (copy `it`) through its own strides (BatchMatmulParams::residuals) or, of the
/// output's shape, through `q.y`'s, the loads appended to `out`; returns every epilogue op's
/// operand view for this tile (constants at column n0, saved values' buffers).
std::vector<View> stageProductEpilogue(const GroupPlan &p, const BatchMatmulParams &q,
                                       const std::vector<View> &consts,
                                       const std::vector<OnChip> &rbufs, const Builder &b,
                                       const DramCtx &d, const tir::Expr &b0, const tir::Expr &b1,
                                       const tir::Expr &m0, const tir::Expr &n0,
                                       const tir::Expr &it, const tir::Expr &mcur,
                                       const tir::Expr &ncur, std::vector<tir::Stmt> &out);

/// The schedule of a tiling (strategy BatchMatmul; decisions buffers, tm, tn, tk).
Schedule batchMatmulSchedule(const BmmTiling &x, bool doubleBuffer);

/// Lowers the batched matmul with tiling `forced`, or the heuristic's when empty.
Kernel lowerBatchMatmulTiling(const GroupPlan &p, const graph::Graph &g, Builder &b,
                              const DramCtx &d, const KernelOptions &o,
                              const std::optional<BmmTiling> &forced);

} // namespace npuc::npu
