// Vector.h - the decisions of the vector-unit kernels (npu/kernels/LowerVector.cpp): window pooling
// (channels and output rows per tile), global average pooling (channels and pixels per tile) and
// elementwise chains (pixels per tile), each with its buffer count. The models judge a tiling
// against the target's capacities and field limits and the L1 the group has left once its
// epilogue constants (and a pool's divisors) are staged; they are pure (no Builder).
#pragma once

#include "npu/kernels/Kernels.h"

#include <optional>
#include <vector>

namespace npuc::npu {

/// The estimated cycles of a tiled stream on the vector unit: `tiles` tiles that together load
/// `inBytes` and store `outBytes` through DRAM and run `vecElems` element-ops on the vector unit.
/// Double-buffered, the busiest of DRAM and the vector unit sets the pace and the other's share
/// of one tile is exposed once; single-buffered, they add up. Each tile pays the DRAM latency
/// once for its load and once for its store (exposed only when single-buffered).
double streamCost(const Hw &hw, int nb, int64_t tiles, double inBytes, double outBytes,
                  double vecElems);

struct PoolTiling {
  int64_t tc = 0, toh = 0; // channels and output rows per tile
  bool operator==(const PoolTiling &) const = default;
};

struct PoolModel {
  /// `p`: the plan with the epilogue the kernel runs (withQuantEpilogue on int8 targets).
  PoolModel(const GroupPlan &p, const Hw &hw, int64_t l1Free, bool doubleBuffer);
  const Hw &hw;
  const PoolParams &q;
  int nb, nres;
  int64_t eb, Wp, opsPerElem, l1Free;

  int64_t rowsFor(int64_t toh) const { return (toh - 1) * q.SH + q.KH; }
  bool fits(const PoolTiling &x) const;
  double cost(const PoolTiling &x) const;
  /// The channel tiles the heuristic tries, largest first: C halved while above 16, then one
  /// less at a time.
  std::vector<int64_t> tcValues() const;
  /// The heuristic: the first tc whose single output row fits, then as many rows as fit.
  std::optional<PoolTiling> heuristic() const;
};

struct GlobalPoolTiling {
  int64_t tc = 0, tp = 0; // channels and pixels per tile
  bool operator==(const GlobalPoolTiling &) const = default;
};

struct GlobalPoolModel {
  /// `p`: the plan with the epilogue the kernel runs (the mean's scale first, int8 requantised).
  GlobalPoolModel(const GroupPlan &p, const Hw &hw, int64_t C, int64_t P, int64_t l1Free,
                  bool doubleBuffer);
  const Hw &hw;
  int64_t N = 1, C, P;
  int nb, nres;
  int64_t eb, opsPerElem, l1Free;

  bool fits(const GlobalPoolTiling &x) const;
  double cost(const GlobalPoolTiling &x) const;
  /// min(C, the size fields) halved down to 1; pixel tiles: powers of two below P, and P.
  std::vector<int64_t> tcValues() const;
  std::vector<int64_t> tpValues() const;
  /// The heuristic: the first tc whose one-pixel tile fits, then the largest tp of tpValues.
  std::optional<GlobalPoolTiling> heuristic() const;
};

struct EltwiseTiling {
  int64_t tp = 0; // pixels (rows of C channels) per tile
  bool operator==(const EltwiseTiling &) const = default;
};

struct EltwiseModel {
  /// `p`: the plan with the epilogue the kernel runs (withQuantEpilogue on int8 targets).
  EltwiseModel(const GroupPlan &p, const Hw &hw, int64_t l1Free, bool doubleBuffer);
  const Hw &hw;
  int64_t C, P;
  int nb, nres;
  int64_t eb, opsPerElem, l1Free;

  bool fits(const EltwiseTiling &x) const;
  double cost(const EltwiseTiling &x) const;
  /// Powers of two below P, and P.
  std::vector<int64_t> tpValues() const;
  /// The heuristic: the largest tp of tpValues that fits.
  std::optional<EltwiseTiling> heuristic() const;
};

/// The schedules of tilings (decisions: buffers and the tiling's fields by name).
Schedule poolSchedule(const PoolTiling &x, bool doubleBuffer);
Schedule globalPoolSchedule(const GlobalPoolTiling &x, bool doubleBuffer);
Schedule eltwiseSchedule(const EltwiseTiling &x, bool doubleBuffer);

/// The kernels with a forced tiling (the heuristic's when empty); a tiling that does not fit
/// is rejected like a shape no tiling fits.
Kernel lowerPoolTiling(const GroupPlan &p, const graph::Graph &g, Builder &b, const DramCtx &d,
                       const KernelOptions &o, const std::optional<PoolTiling> &forced);
Kernel lowerGlobalPoolTiling(const GroupPlan &p, const graph::Graph &g, Builder &b,
                             const DramCtx &d, const KernelOptions &o,
                             const std::optional<GlobalPoolTiling> &forced);
Kernel lowerEltwiseTiling(const GroupPlan &p, const graph::Graph &g, Builder &b, const DramCtx &d,
                          const KernelOptions &o, const std::optional<EltwiseTiling> &forced);

/// The plan each vector kernel runs: int8 targets requantise (withQuantEpilogue); the global
/// pool's mean is a scale ahead of the fused ops.
GroupPlan poolKernelPlan(const GroupPlan &plan, const Hw &hw);
GroupPlan globalPoolKernelPlan(const GroupPlan &plan, const Hw &hw, int64_t pixels);
GroupPlan eltwiseKernelPlan(const GroupPlan &plan, const Hw &hw);

} // namespace npuc::npu
