// Attention.h - the fused attention kernel's decisions (npu/kernels/LowerAttention.cpp): a block
// of tm query rows whose scores stay in L1, the score tile (tm x tn) and the k-chunk tk of the
// first product, the k-chunk tk2 of the second (score columns per slice), whether K and V stream
// per block or stay whole in L1 per batch (kv: 0, or 1 or 2 copies), and the buffer count, judged
// against the target's capacities and the L1 the epilogue constants leave.
#pragma once

#include "npu/kernels/Kernels.h"

#include <optional>
#include <string>
#include <vector>

namespace npuc::npu {

struct AttnTiling {
  int64_t tm = 0, tn = 0, tk = 0, tk2 = 0;
  int kv = 0; // 0: K and V streamed per block; 1, 2: whole in L1 per batch, in that many copies
  bool operator==(const AttnTiling &) const = default;
};

/// The feasibility and the cost model of the fused kernel's tilings. Pure: no Builder, no
/// placement; `l1Free` is what L1 holds after the epilogue constants.
struct AttnModel {
  AttnModel(const GroupPlan &p, const Hw &hw, int64_t l1Free, bool doubleBuffer);
  const Hw &hw;
  const BatchMatmulParams &q;  // scores = A x B
  const BatchMatmulParams &pv; // Y = P x V
  int64_t M, K, S, D, Bt;      // rows, the first product's K, score columns, output columns
  int nb, nres, nresDram;
  int64_t opsPerElem, l1Free;

  bool fits(const AttnTiling &x) const;
  double cost(const AttnTiling &x) const;
  std::vector<int64_t> tnValues() const;  // the array's columns times powers of 2 below S, and S
  std::vector<int64_t> tkValues() const;  // multiples of the array's rows below K, and K
  std::vector<int64_t> tk2Values() const; // the array's rows times powers of 2 below S, and S
  /// The largest tm that fits with the other decisions, 0 when none.
  int64_t largestTm(int64_t tn, int64_t tk, int64_t tk2, int kv) const;
  /// The heuristic's choice: per (kv, tn, tk, tk2) the largest tm, the cheapest of those.
  std::optional<AttnTiling> heuristic() const;
  std::string noTiling() const;
};

/// The schedule of a tiling (strategy Attention; decisions buffers, tm, tn, tk, tk2, kv).
Schedule attentionSchedule(const AttnTiling &x, bool doubleBuffer);

/// Lowers the fused attention with tiling `forced`, or the heuristic's when empty.
Kernel lowerAttentionTiling(const GroupPlan &p, const graph::Graph &g, Builder &b, const DramCtx &d,
                            const KernelOptions &o, const std::optional<AttnTiling> &forced);

} // namespace npuc::npu
