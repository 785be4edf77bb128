// AttentionSpace.cpp - the schedule space of the fused attention kernel (LowerAttention.cpp).
//
// Decisions: buffers (2|1), tm (query rows per block, 1..M), tn (score columns per tile: the
// array's columns times powers of 2 below S, and S), tk (the first product's k-chunk: multiples
// of the array's rows below K, and K), tk2 (the second product's k-chunk: the array's rows times
// powers of 2 below S, and S), kv (0: K and V streamed per block; 1 or 2: whole in L1 per batch,
// in that many copies). A point is legal when every buffer fits its level in the L1 the epilogue
// constants leave, and every size and stride its field (AttnModel).
#include "npu/kernels/Attention.h"
#include "npu/kernels/KernelSpaces.h"
#include "npu/kernels/SpaceSupport.h"

namespace npuc::npu {

namespace {

class AttentionSpace final : public KernelSpace {
public:
  AttentionSpace(const GroupPlan &p, const graph::Graph &g, const SpaceContext &ctx)
      : p_(p), g_(g), ctx_(ctx) {
    if (p.bmm.M <= 0 || p.bmm.K <= 0 || p.bmm.N <= 0 || p.attn.pv.N <= 0 || p.bmm.batches() <= 0) {
      fixed_ = kernelReject(RejectKind::Unsupported, "an empty matrix product");
      return;
    }
    fixed_ = l1AfterEpilogueConstants(p, ctx, l1Free_);
  }

  Strategy strategy() const override { return Strategy::Attention; }

  std::vector<Decision> decisions() const override {
    const AttnModel m = model(1);
    return {{kBuffers, bufferValues(ctx_)}, {"tm", upTo(p_.bmm.M)}, {"tn", m.tnValues()},
            {"tk", m.tkValues()},           {"tk2", m.tk2Values()}, {"kv", {0, 1, 2}}};
  }

  std::optional<Reject> whyIllegal(const Schedule &s) const override {
    if (fixed_)
      return fixed_;
    if (std::optional<Reject> r = checkShape(s))
      return r;
    if (!model(s.get(kBuffers)).fits(tiling(s)))
      return doesNotFit(strategy(), s,
                        "the on-chip levels (a block's scores and the K and V panels in L1, both "
                        "products' slices in L0, the accumulator tiles) or the size and stride "
                        "fields");
    return std::nullopt;
  }

  Expected<Schedule, Reject> defaultPoint() const override {
    if (fixed_)
      return unexpected(*fixed_);
    const int64_t nb = bufferValues(ctx_).front();
    if (std::optional<AttnTiling> x = model(nb).heuristic())
      return attentionSchedule(*x, nb == 2);
    return unexpected(kernelReject(RejectKind::Capacity, model(nb).noTiling()));
  }

  double cost(const Schedule &s) const override { return model(s.get(kBuffers)).cost(tiling(s)); }

  Kernel lower(const Schedule &s, Builder &b, const DramCtx &d) const override {
    return lowerAttentionTiling(p_, g_, b, d, pointOptions(ctx_, s), tiling(s));
  }

private:
  AttnModel model(int64_t buffers) const { return AttnModel(p_, *ctx_.hw, l1Free_, buffers == 2); }
  static AttnTiling tiling(const Schedule &s) {
    return {s.get("tm"), s.get("tn"), s.get("tk"), s.get("tk2"), static_cast<int>(s.get("kv"))};
  }

  GroupPlan p_;
  const graph::Graph &g_;
  SpaceContext ctx_;
  std::optional<Reject> fixed_; // the epilogue constants do not fit: no point is legal
  int64_t l1Free_ = 0;
};

} // namespace

Schedule attentionSchedule(const AttnTiling &x, bool doubleBuffer) {
  Schedule s;
  s.strategy = Strategy::Attention;
  s.set(kBuffers, doubleBuffer ? 2 : 1)
      .set("tm", x.tm)
      .set("tn", x.tn)
      .set("tk", x.tk)
      .set("tk2", x.tk2)
      .set("kv", x.kv);
  return s;
}

std::unique_ptr<KernelSpace> makeAttentionSpace(const GroupPlan &p, const graph::Graph &g,
                                                const SpaceContext &ctx) {
  return std::make_unique<AttentionSpace>(p, g, ctx);
}

} // namespace npuc::npu
