// SpaceSupport.h - what the schedule spaces of the batched matmul, vector, concat and loop-nest
// kernels share: the scratch placement their questions run in, and the buffer-count decision.
#pragma once

#include "npu/schedule/Space.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace npuc::npu {

/// A DramCtx that places nothing (every address and constant at 0) with the context's tensor
/// levels: a space decides from levels and capacities, never from addresses.
DramCtx dryDram(const SpaceContext &ctx);

/// The name of the buffer-count decision and its candidates: 2 (double buffering, when the
/// context allows it) then 1.
inline constexpr const char *kBuffers = "buffers";
std::vector<int64_t> bufferValues(const SpaceContext &ctx);

/// The L1 bytes a kernel's tiles may take in the context once the epilogue's constants of `p` are
/// staged (into `l1Free`), or the Reject when those constants do not fit.
std::optional<Reject> l1AfterEpilogueConstants(const GroupPlan &p, const SpaceContext &ctx,
                                               int64_t &l1Free);

/// The options a point is lowered with: its buffer count, the context's ablation switch.
KernelOptions pointOptions(const SpaceContext &ctx, const Schedule &s);

/// 1, 2, ..., n.
std::vector<int64_t> upTo(int64_t n);
/// The tile candidates of a dimension of `total`: step, 2 step, 3 step, ... below total, then
/// total (a tensor unit's rows or columns at a time).
std::vector<int64_t> multiplesBelow(int64_t step, int64_t total);
/// first, 2 first, 4 first, ... below total, then total (fewer candidates for long dimensions).
std::vector<int64_t> doublingsBelow(int64_t first, int64_t total);
/// The largest t in [1, hi] with fits(t), 0 when fits(1) is false; `fits` must be monotone
/// (true up to some t, false above).
int64_t largestFitting(int64_t hi, const std::function<bool(int64_t)> &fits);

/// A capacity Reject for a point of `strategy` whose buffers do not fit.
Reject doesNotFit(Strategy strategy, const Schedule &s, const std::string &what);

} // namespace npuc::npu
