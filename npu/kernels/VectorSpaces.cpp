// VectorSpaces.cpp - the schedule spaces of the vector-unit kernels (LowerVector.cpp).
//
// Window pooling: buffers (2|1), tc (channels per tile: C halved while above 16, then one less
// at a time, as the heuristic tries them), toh (output rows per tile, 1..OH). Global average
// pooling: buffers, tc (min(C, the size fields) halved down to 1), tp (pixels per tile: powers of
// two below the pixel count, and the count). Elementwise chains: buffers, tp (likewise). A point
// is legal when its tiles fit L1 and the accumulator with that many copies in what the fixed
// buffers (epilogue constants, a pool's divisors) leave, and its extents the size fields.
#include "npu/kernels/KernelSpaces.h"
#include "npu/kernels/SpaceSupport.h"
#include "npu/kernels/Vector.h"

namespace npuc::npu {

namespace {

// What the three spaces share: the kernel's plan, the L1 its fixed buffers leave (placed in a
// scratch builder over the context's window), and the buffer decision.
class VectorSpace : public KernelSpace {
public:
  VectorSpace(const GroupPlan &p, const graph::Graph &g, const SpaceContext &ctx)
      : plan_(p), g_(g), ctx_(ctx) {}

  std::optional<Reject> whyIllegal(const Schedule &s) const override {
    if (fixed_)
      return fixed_;
    if (std::optional<Reject> r = checkShape(s))
      return r;
    if (!fits(s))
      return doesNotFit(strategy(), s, "L1 and the accumulator, or the size fields");
    return std::nullopt;
  }

  Expected<Schedule, Reject> defaultPoint() const override {
    if (fixed_)
      return unexpected(*fixed_);
    // Double buffers when the context allows them; KernelSelect retries single-buffered (a
    // space without double buffering) when they do not fit, and says so in the tiling text.
    if (std::optional<Schedule> s = heuristic(bufferValues(ctx_).front() == 2))
      return *s;
    return unexpected(kernelReject(RejectKind::Capacity, noTiling()));
  }

protected:
  // The epilogue constants of the kernel's plan `k` placed: the L1 left, or the reject.
  void stageFixed(const GroupPlan &k, bool divisors) {
    Builder b(*ctx_.hw, ctx_.fromTop, ctx_.window);
    std::vector<View> consts;
    std::vector<tir::Stmt> prologue;
    fixed_ = stageEpilogueConstants(k, b, dryDram(ctx_), consts, prologue);
    OnChip divbuf{"divisor_l1", ctx_.hw->l1, k.pool.OH * k.pool.OW * 4, 1};
    if (!fixed_ && divisors && !b.reserve(divbuf))
      fixed_ = kernelReject(RejectKind::Capacity, "no room in L1 for the pooling divisors");
    l1Free_ = b.freeBytes(ctx_.hw->l1);
  }
  virtual bool fits(const Schedule &s) const = 0;
  virtual std::optional<Schedule> heuristic(bool doubleBuffer) const = 0;
  virtual std::string noTiling() const = 0;

  GroupPlan plan_;
  const graph::Graph &g_;
  SpaceContext ctx_;
  std::optional<Reject> fixed_;
  int64_t l1Free_ = 0;
};

class PoolSpace final : public VectorSpace {
public:
  PoolSpace(const GroupPlan &p, const graph::Graph &g, const SpaceContext &ctx)
      : VectorSpace(p, g, ctx), kplan_(poolKernelPlan(p, *ctx.hw)) {
    stageFixed(kplan_, !p.pool.isMax);
  }
  Strategy strategy() const override { return Strategy::Pool; }
  std::vector<Decision> decisions() const override {
    return {{kBuffers, bufferValues(ctx_)},
            {"tc", model(true).tcValues()},
            {"toh", upTo(plan_.pool.OH)}};
  }
  double cost(const Schedule &s) const override {
    return model(s.get(kBuffers) == 2).cost(tiling(s));
  }
  Kernel lower(const Schedule &s, Builder &b, const DramCtx &d) const override {
    return lowerPoolTiling(plan_, g_, b, d, pointOptions(ctx_, s), tiling(s));
  }

private:
  PoolModel model(bool db) const { return PoolModel(kplan_, *ctx_.hw, l1Free_, db); }
  static PoolTiling tiling(const Schedule &s) { return {s.get("tc"), s.get("toh")}; }
  bool fits(const Schedule &s) const override {
    return model(s.get(kBuffers) == 2).fits(tiling(s));
  }
  std::optional<Schedule> heuristic(bool db) const override {
    if (std::optional<PoolTiling> x = model(db).heuristic())
      return poolSchedule(*x, db);
    return std::nullopt;
  }
  std::string noTiling() const override {
    return "no tiling of a " + std::to_string(plan_.pool.W) +
           "-wide pooling row fits the on-chip buffers";
  }
  GroupPlan kplan_;
};

class GlobalPoolSpace final : public VectorSpace {
public:
  GlobalPoolSpace(const GroupPlan &p, const graph::Graph &g, const SpaceContext &ctx)
      : VectorSpace(p, g, ctx) {
    const Shape &x = g.value(p.input).shape;
    N_ = x[0];
    C_ = x[1];
    P_ = x[2] * x[3];
    kplan_ = globalPoolKernelPlan(p, *ctx.hw, P_);
    stageFixed(kplan_, false);
  }
  Strategy strategy() const override { return Strategy::GlobalPool; }
  std::vector<Decision> decisions() const override {
    const GlobalPoolModel m = model(true);
    return {{kBuffers, bufferValues(ctx_)}, {"tc", m.tcValues()}, {"tp", m.tpValues()}};
  }
  double cost(const Schedule &s) const override {
    return model(s.get(kBuffers) == 2).cost(tiling(s));
  }
  Kernel lower(const Schedule &s, Builder &b, const DramCtx &d) const override {
    return lowerGlobalPoolTiling(plan_, g_, b, d, pointOptions(ctx_, s), tiling(s));
  }

private:
  GlobalPoolModel model(bool db) const {
    GlobalPoolModel m(kplan_, *ctx_.hw, C_, P_, l1Free_, db);
    m.N = N_;
    return m;
  }
  static GlobalPoolTiling tiling(const Schedule &s) { return {s.get("tc"), s.get("tp")}; }
  bool fits(const Schedule &s) const override {
    return model(s.get(kBuffers) == 2).fits(tiling(s));
  }
  std::optional<Schedule> heuristic(bool db) const override {
    if (std::optional<GlobalPoolTiling> x = model(db).heuristic())
      return globalPoolSchedule(*x, db);
    return std::nullopt;
  }
  std::string noTiling() const override {
    return "no tiling of the global pool fits the on-chip buffers";
  }
  int64_t N_ = 1, C_ = 1, P_ = 1;
  GroupPlan kplan_;
};

class EltwiseSpace final : public VectorSpace {
public:
  EltwiseSpace(const GroupPlan &p, const graph::Graph &g, const SpaceContext &ctx)
      : VectorSpace(p, g, ctx), kplan_(eltwiseKernelPlan(p, *ctx.hw)) {
    stageFixed(kplan_, false);
  }
  Strategy strategy() const override { return Strategy::Eltwise; }
  std::vector<Decision> decisions() const override {
    return {{kBuffers, bufferValues(ctx_)}, {"tp", model(true).tpValues()}};
  }
  double cost(const Schedule &s) const override {
    return model(s.get(kBuffers) == 2).cost(tiling(s));
  }
  Kernel lower(const Schedule &s, Builder &b, const DramCtx &d) const override {
    return lowerEltwiseTiling(plan_, g_, b, d, pointOptions(ctx_, s), tiling(s));
  }

private:
  EltwiseModel model(bool db) const { return EltwiseModel(kplan_, *ctx_.hw, l1Free_, db); }
  static EltwiseTiling tiling(const Schedule &s) { return {s.get("tp")}; }
  bool fits(const Schedule &s) const override {
    return model(s.get(kBuffers) == 2).fits(tiling(s));
  }
  std::optional<Schedule> heuristic(bool db) const override {
    if (std::optional<EltwiseTiling> x = model(db).heuristic())
      return eltwiseSchedule(*x, db);
    return std::nullopt;
  }
  std::string noTiling() const override {
    return "an elementwise row of " + std::to_string(kplan_.channels) +
           " channels does not fit the on-chip buffers";
  }
  GroupPlan kplan_;
};

} // namespace

Schedule poolSchedule(const PoolTiling &x, bool doubleBuffer) {
  Schedule s;
  s.strategy = Strategy::Pool;
  s.set(kBuffers, doubleBuffer ? 2 : 1).set("tc", x.tc).set("toh", x.toh);
  return s;
}

Schedule globalPoolSchedule(const GlobalPoolTiling &x, bool doubleBuffer) {
  Schedule s;
  s.strategy = Strategy::GlobalPool;
  s.set(kBuffers, doubleBuffer ? 2 : 1).set("tc", x.tc).set("tp", x.tp);
  return s;
}

Schedule eltwiseSchedule(const EltwiseTiling &x, bool doubleBuffer) {
  Schedule s;
  s.strategy = Strategy::Eltwise;
  s.set(kBuffers, doubleBuffer ? 2 : 1).set("tp", x.tp);
  return s;
}

std::unique_ptr<KernelSpace> makePoolSpace(const GroupPlan &p, const graph::Graph &g,
                                           const SpaceContext &ctx) {
  return std::make_unique<PoolSpace>(p, g, ctx);
}
std::unique_ptr<KernelSpace> makeGlobalPoolSpace(const GroupPlan &p, const graph::Graph &g,
                                                 const SpaceContext &ctx) {
  return std::make_unique<GlobalPoolSpace>(p, g, ctx);
}
std::unique_ptr<KernelSpace> makeEltwiseSpace(const GroupPlan &p, const graph::Graph &g,
                                              const SpaceContext &ctx) {
  return std::make_unique<EltwiseSpace>(p, g, ctx);
}

} // namespace npuc::npu
