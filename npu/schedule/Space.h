// Space.h - the contract every NPU kernel family implements: its schedule space for one group.
//
// A KernelSpace is built for one group (its GroupPlan) on one target in one context: the on-chip
// window and residency the segment gives the group, and whether double buffering is allowed. It
// then answers three questions, each on its own so that a search (the auto-tuner, a design-space
// sweep, a test) can drive it from outside:
//   (a) the space: decisions() names each decision and its candidate values; whyIllegal(point)
//       says why a point breaks a constraint between decisions or does not fit the context
//       (nullopt: legal); enumerate() lists the legal points (all of them, or a fixed-seed
//       sample of at most `limit` when the space is larger);
//   (b) cost(point): the family's analytical estimate in cycles. Pure: no Builder, no constants
//       placed, the same value for the same point every time;
//   (c) lower(point, builder, dram): the kernel (TIR) of that point, its buffers reserved in the
//       builder and its constants placed through `dram`. Lowering a legal point cannot fail for
//       lack of room (the space checked that), only for reasons the space could not see.
// defaultPoint() is the point the family's heuristic picks (the default compile lowers it), or
// the Reject when no point is legal.
//
// Implementing a space (npu/kernels/): derive from KernelSpace, compute in the constructor what
// every question needs (the free bytes of each level after the kernel's fixed buffers, in a
// scratch Builder over ctx.window with a DramCtx that places nothing), register the strategy in
// makeSpace (Space.cpp), and add the strategy to strategiesFor when it is a new choice for a
// plan kind. Decision names are short and stable (they are the JSON keys of schedule files):
// "toc", "tk", "toh", "buffers", ...; booleans are 0/1.
#pragma once

#include "npu/kernels/Kernels.h"
#include "npu/Reject.h"
#include "npu/schedule/Schedule.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace npuc::npu {

/// Where the group runs: what the segment gives it and what the options allow.
struct SpaceContext {
  const Hw *hw = nullptr;
  Window window;        // the group's range of each on-chip level (Builder)
  bool fromTop = false; // its buffers are placed downward from each level's top
  /// Where each tensor lives (DRAM, or L1 when resident between groups); addresses and
  /// constants are not needed to decide, so the space places none.
  std::function<int(graph::ValueId)> levelOf;
  bool doubleBuffer = true; // 2 buffers may be chosen (KernelOptions::doubleBuffer)
  bool naiveTiling = false; // the ablation's fixed tiles (KernelOptions::naiveTiling)
  bool batchWeightReuse = true; // KernelOptions::batchWeightReuse

  int level(graph::ValueId v) const { return levelOf ? levelOf(v) : hw->dram; }
  /// The context a kernel sees when lowered with `o` into `b` over `d`.
  static SpaceContext of(const Builder &b, const DramCtx &d, const KernelOptions &o, bool fromTop);
};

/// One decision of a space and its candidate values on their own (constraints between
/// decisions and the context's capacities are whyIllegal's).
struct Decision {
  std::string name;
  std::vector<int64_t> values;
};

class KernelSpace {
public:
  virtual ~KernelSpace() = default;
  virtual Strategy strategy() const = 0;

  // (a) The space.
  virtual std::vector<Decision> decisions() const = 0;
  /// nullopt when `s` is a legal point here, else why not (for a forced point: the message
  /// names the decision and its legal values).
  virtual std::optional<Reject> whyIllegal(const Schedule &s) const = 0;
  bool legal(const Schedule &s) const { return !whyIllegal(s); }
  /// Every legal point, in decisions() order (the cartesian product filtered by whyIllegal);
  /// with `limit` > 0 and more legal points than that, a fixed-seed sample of `limit` of them
  /// (always including defaultPoint()).
  virtual std::vector<Schedule> enumerate(size_t limit = 0) const;
  virtual Expected<Schedule, Reject> defaultPoint() const = 0;

  // (b) The cost estimate of a legal point (cycles).
  virtual double cost(const Schedule &s) const = 0;

  // (c) Lowering of a legal point.
  virtual Kernel lower(const Schedule &s, Builder &b, const DramCtx &d) const = 0;

protected:
  /// The Reject for a point whose decision `name` is not one of its legal values (or missing).
  Reject badDecision(const Schedule &s, const std::string &name) const;
  /// nullopt when `s` has this space's strategy and exactly its decisions with candidate values.
  std::optional<Reject> checkShape(const Schedule &s) const;
  /// `all` itself, or with `limit` > 0 and more points than that, a fixed-seed sample of `limit`
  /// of them in their order, defaultPoint() first (for enumerate()).
  std::vector<Schedule> sample(std::vector<Schedule> all, size_t limit) const;
};

/// The space of `strategy` for the group, or nullptr when the family has no space (yet).
std::unique_ptr<KernelSpace> makeSpace(Strategy strategy, const GroupPlan &p, const graph::Graph &g,
                                       const SpaceContext &ctx);

/// The strategies that may run a plan, in the order the default tries them (a depthwise conv:
/// the tensor unit, then the vector unit where its ops allow).
std::vector<Strategy> strategiesFor(const GroupPlan &p, const Hw &hw);

/// The strategy a plan's kernel kind implies when no choice is made (the default sketch).
Strategy defaultStrategyOf(KernelKind kind);

} // namespace npuc::npu
