// BatchMatmulSpace.cpp - the schedule space of the batched matmul kernel (LowerBatchMatmul.cpp).
//
// Decisions: buffers (2|1), tm (output rows per tile, 1..M), tn (output columns per tile:
// multiples of the array's columns below N, and N), tk (the k-chunk through L0: multiples of the
// array's rows below K, and K). A point is legal when every buffer fits its level with that many
// copies in the L1 the epilogue constants leave, and every size and stride its field (BmmModel).
#include "npu/kernels/BatchMatmul.h"
#include "npu/kernels/KernelSpaces.h"
#include "npu/kernels/SpaceSupport.h"

namespace npuc::npu {

namespace {

class BatchMatmulSpace final : public KernelSpace {
public:
  BatchMatmulSpace(const GroupPlan &p, const graph::Graph &g, const SpaceContext &ctx)
      : p_(p), g_(g), ctx_(ctx) {
    const BatchMatmulParams &q = p.bmm;
    if (q.M <= 0 || q.K <= 0 || q.N <= 0 || q.batches() <= 0) {
      fixed_ = kernelReject(RejectKind::Unsupported, "an empty matrix product");
      return;
    }
    fixed_ = l1AfterEpilogueConstants(p, ctx, l1Free_);
  }

  Strategy strategy() const override { return Strategy::BatchMatmul; }

  std::vector<Decision> decisions() const override {
    const BmmModel m = model(1);
    return {{kBuffers, bufferValues(ctx_)},
            {"tm", upTo(p_.bmm.M)},
            {"tn", m.tnValues()},
            {"tk", m.tkValues()}};
  }

  std::optional<Reject> whyIllegal(const Schedule &s) const override {
    if (fixed_)
      return fixed_;
    if (std::optional<Reject> r = checkShape(s))
      return r;
    if (!model(s.get(kBuffers)).fits(tiling(s)))
      return doesNotFit(strategy(), s,
                        "the on-chip levels (A and B panels in L1, slices in L0, the "
                        "accumulator tile) or the size and stride fields");
    return std::nullopt;
  }

  Expected<Schedule, Reject> defaultPoint() const override {
    if (fixed_)
      return unexpected(*fixed_);
    // Double buffers when the context allows them; KernelSelect retries single-buffered (a
    // space without double buffering) when they do not fit, and says so in the tiling text.
    const int64_t nb = bufferValues(ctx_).front();
    if (std::optional<BmmTiling> x = model(nb).heuristic(ctx_.naiveTiling))
      return batchMatmulSchedule(*x, nb == 2);
    return unexpected(kernelReject(RejectKind::Capacity, model(nb).noTiling()));
  }

  double cost(const Schedule &s) const override { return model(s.get(kBuffers)).cost(tiling(s)); }

  Kernel lower(const Schedule &s, Builder &b, const DramCtx &d) const override {
    return lowerBatchMatmulTiling(p_, g_, b, d, pointOptions(ctx_, s), tiling(s));
  }

private:
  BmmModel model(int64_t buffers) const { return BmmModel(p_, *ctx_.hw, l1Free_, buffers == 2); }
  static BmmTiling tiling(const Schedule &s) { return {s.get("tm"), s.get("tn"), s.get("tk")}; }

  GroupPlan p_;
  const graph::Graph &g_;
  SpaceContext ctx_;
  std::optional<Reject> fixed_; // the epilogue constants do not fit: no point is legal
  int64_t l1Free_ = 0;
};

} // namespace

Schedule batchMatmulSchedule(const BmmTiling &x, bool doubleBuffer) {
  Schedule s;
  s.strategy = Strategy::BatchMatmul;
  s.set(kBuffers, doubleBuffer ? 2 : 1).set("tm", x.tm).set("tn", x.tn).set("tk", x.tk);
  return s;
}

std::unique_ptr<KernelSpace> makeBatchMatmulSpace(const GroupPlan &p, const graph::Graph &g,
                                                  const SpaceContext &ctx) {
  return std::make_unique<BatchMatmulSpace>(p, g, ctx);
}

} // namespace npuc::npu
