// Depthwise.h - the vector unit's depthwise conv kernel's space, shared by its decisions and
// cost (npu/kernels/DepthwiseSpace.cpp) and its lowering to TIR (npu/kernels/LowerDepthwise.cpp).
//
// A point: `buffers` copies of the input, accumulator, output and residual tiles; `tc` channels
// and `toh` output rows (x the full output width) per tile.
#pragma once

#include "npu/schedule/Space.h"

#include <vector>

namespace npuc::npu {

class DepthwiseSpace : public KernelSpace {
public:
  DepthwiseSpace(const GroupPlan &plan, const graph::Graph &g, const SpaceContext &ctx);
  Strategy strategy() const override { return Strategy::DepthwiseVector; }
  std::vector<Decision> decisions() const override;
  std::optional<Reject> whyIllegal(const Schedule &s) const override;
  Expected<Schedule, Reject> defaultPoint() const override;
  double cost(const Schedule &s) const override;
  Kernel lower(const Schedule &s, Builder &b, const DramCtx &d) const override;

  bool fits(int nb, int64_t tc, int64_t toh) const;
  double cost(int nb, int64_t tc, int64_t toh) const;

private:
  std::vector<int64_t> tcCandidates() const;
  int64_t rowsFor(int64_t toh) const { return (toh - 1) * plan_.conv.SH + kh_; }
  /// The fp32 weights [KH*KW][C] as bytes (int8 targets: the quantised ones, dequantised).
  std::vector<uint8_t> weightBytes() const;

  friend struct DepthwiseLowering;
  GroupPlan plan_;
  GroupPlan p_; // with the bias (and int8: the requantising) epilogue
  const graph::Graph &g_;
  SpaceContext ctx_;
  std::optional<Reject> pre_;
  bool useMac_ = false;
  int64_t taps_ = 1, kh_ = 1, kw_ = 1, Wp_ = 1, l1Free_ = 0, accFree_ = 0;
  int nres_ = 0;
};

} // namespace npuc::npu
