// ConcatSpace.cpp - the schedule spaces of the Concat kernel (LowerConcat.cpp) and of views.
//
// Concat: buffers (2|1) and elems, the elements one L1 tile buffer holds (the largest legal
// size halved down to 1): whole rows of an input's block per tile when a row fits, else pieces
// of one row. A point is legal when `buffers` copies of the tile fit the free L1 and the tile is
// no larger than the largest input's block. A Concat of empty tensors copies nothing and, like
// a view (layout ops whose transforms cancel: no code), has an empty space of one point.
#include "npu/kernels/Concat.h"
#include "npu/kernels/KernelSpaces.h"
#include "npu/kernels/SpaceSupport.h"

#include <algorithm>

namespace npuc::npu {

namespace {

class ConcatSpace final : public KernelSpace {
public:
  ConcatSpace(const GroupPlan &p, const graph::Graph &g, const SpaceContext &ctx)
      : p_(p), g_(g), ctx_(ctx) {
    const Hw &hw = *ctx.hw;
    for (const ConcatParams::Part &part : p.concat.parts)
      levels_.push_back(g.value(part.value).isConstant() ? hw.dram : ctx.level(part.value));
    const Builder b(hw, ctx.fromTop, ctx.window); // no fixed buffers: the whole window
    l1Free_ = b.freeBytes(hw.l1);
  }

  Strategy strategy() const override { return Strategy::Concat; }

  std::vector<Decision> decisions() const override {
    if (model(1).largest == 0)
      return {}; // nothing to copy
    std::vector<int64_t> elems;
    for (int64_t nb : bufferValues(ctx_))
      for (int64_t e : model(nb).elemValues())
        elems.push_back(e);
    std::sort(elems.begin(), elems.end(), std::greater<>());
    elems.erase(std::unique(elems.begin(), elems.end()), elems.end());
    return {{kBuffers, bufferValues(ctx_)}, {"elems", elems}};
  }

  std::optional<Reject> whyIllegal(const Schedule &s) const override {
    if (std::optional<Reject> r = checkShape(s))
      return r;
    if (s.decisions.empty())
      return std::nullopt;
    if (!model(s.get(kBuffers)).fits({s.get("elems")}))
      return doesNotFit(strategy(), s, "the free L1 (or exceeds the largest input's block)");
    return std::nullopt;
  }

  Expected<Schedule, Reject> defaultPoint() const override {
    if (model(1).largest == 0)
      return empty();
    // Double buffers when the context allows them; KernelSelect retries single-buffered (a
    // space without double buffering) when they do not fit, and says so in the tiling text.
    const int64_t nb = bufferValues(ctx_).front();
    if (std::optional<ConcatTiling> x = model(nb).heuristic())
      return concatSchedule(*x, nb == 2);
    return unexpected(kernelReject(RejectKind::Capacity, "no room in L1 for a Concat tile"));
  }

  double cost(const Schedule &s) const override {
    if (s.decisions.empty())
      return 0;
    return model(s.get(kBuffers)).cost({s.get("elems")});
  }

  Kernel lower(const Schedule &s, Builder &b, const DramCtx &d) const override {
    if (s.decisions.empty())
      return lowerConcatTiling(p_, g_, b, d, KernelOptions{}, std::nullopt);
    return lowerConcatTiling(p_, g_, b, d, pointOptions(ctx_, s), ConcatTiling{s.get("elems")});
  }

private:
  ConcatModel model(int64_t buffers) const {
    return ConcatModel(p_, *ctx_.hw, levels_, ctx_.level(p_.output), l1Free_, buffers == 2);
  }
  Schedule empty() const {
    Schedule s;
    s.strategy = strategy();
    return s;
  }

  GroupPlan p_;
  const graph::Graph &g_;
  SpaceContext ctx_;
  std::vector<int> levels_; // where each part lives
  int64_t l1Free_ = 0;
};

class ViewSpace final : public KernelSpace {
public:
  Strategy strategy() const override { return Strategy::View; }
  std::vector<Decision> decisions() const override { return {}; }
  std::optional<Reject> whyIllegal(const Schedule &s) const override { return checkShape(s); }
  Expected<Schedule, Reject> defaultPoint() const override {
    Schedule s;
    s.strategy = Strategy::View;
    return s;
  }
  double cost(const Schedule &) const override { return 0; }
  Kernel lower(const Schedule &s, Builder &, const DramCtx &) const override {
    Kernel k;
    k.body = tir::seq({});
    k.tiling = "view: aliases its input (no data movement)";
    k.schedule = s;
    return k;
  }
};

} // namespace

Schedule concatSchedule(const ConcatTiling &x, bool doubleBuffer) {
  Schedule s;
  s.strategy = Strategy::Concat;
  s.set(kBuffers, doubleBuffer ? 2 : 1).set("elems", x.elems);
  return s;
}

std::unique_ptr<KernelSpace> makeConcatSpace(const GroupPlan &p, const graph::Graph &g,
                                             const SpaceContext &ctx) {
  return std::make_unique<ConcatSpace>(p, g, ctx);
}

std::unique_ptr<KernelSpace> makeViewSpace(const GroupPlan &, const graph::Graph &,
                                           const SpaceContext &) {
  return std::make_unique<ViewSpace>();
}

} // namespace npuc::npu
