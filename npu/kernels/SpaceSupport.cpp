// SpaceSupport.cpp - helpers of the batched matmul, vector, concat and loop-nest spaces.
#include "npu/kernels/SpaceSupport.h"

#include <fmt/format.h>

namespace npuc::npu {

DramCtx dryDram(const SpaceContext &ctx) {
  return DramCtx{[](graph::ValueId) { return int64_t(0); },
                 [](const ConstBytes &) { return int64_t(0); }, ctx.levelOf};
}

std::vector<int64_t> bufferValues(const SpaceContext &ctx) {
  if (ctx.doubleBuffer)
    return {2, 1};
  return {1};
}

std::optional<Reject> l1AfterEpilogueConstants(const GroupPlan &p, const SpaceContext &ctx,
                                               int64_t &l1Free) {
  Builder b(*ctx.hw, ctx.fromTop, ctx.window);
  std::vector<View> consts;
  std::vector<tir::Stmt> prologue;
  std::optional<Reject> r = stageEpilogueConstants(p, b, dryDram(ctx), consts, prologue);
  l1Free = b.freeBytes(ctx.hw->l1);
  return r;
}

KernelOptions pointOptions(const SpaceContext &ctx, const Schedule &s) {
  KernelOptions o;
  o.doubleBuffer = s.get(kBuffers) == 2;
  o.naiveTiling = ctx.naiveTiling;
  o.batchWeightReuse = ctx.batchWeightReuse;
  return o;
}

std::vector<int64_t> upTo(int64_t n) {
  std::vector<int64_t> v;
  for (int64_t i = 1; i <= n; ++i)
    v.push_back(i);
  return v;
}

std::vector<int64_t> multiplesBelow(int64_t step, int64_t total) {
  std::vector<int64_t> v;
  for (int64_t x = step; x < total; x += step)
    v.push_back(x);
  v.push_back(total);
  return v;
}

std::vector<int64_t> doublingsBelow(int64_t first, int64_t total) {
  std::vector<int64_t> v;
  for (int64_t x = first; x < total; x *= 2)
    v.push_back(x);
  v.push_back(total);
  return v;
}

int64_t largestFitting(int64_t hi, const std::function<bool(int64_t)> &fits) {
  if (!fits(1))
    return 0;
  int64_t lo = 1;
  while (lo < hi) {
    const int64_t mid = (lo + hi + 1) / 2;
    if (fits(mid))
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

Reject doesNotFit(Strategy strategy, const Schedule &s, const std::string &what) {
  return kernelReject(RejectKind::Capacity,
                      fmt::format("{}: {} does not fit {}", strategyName(strategy), s.str(), what));
}

} // namespace npuc::npu
