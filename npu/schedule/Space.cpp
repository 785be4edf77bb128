// Space.cpp - what every kernel space shares: enumeration, decision checks, and the registry
// from strategies to the families' spaces (npu/kernels/KernelSpaces.h).
#include "npu/schedule/Space.h"

#include "npu/kernels/KernelSpaces.h"
#include "support/Error.h"

#include <fmt/format.h>

#include <algorithm>
#include <random>

namespace npuc::npu {

SpaceContext SpaceContext::of(const Builder &b, const DramCtx &d, const KernelOptions &o,
                              bool fromTop) {
  SpaceContext c;
  c.hw = &b.hw();
  c.window = b.window();
  c.fromTop = fromTop;
  c.levelOf = d.levelOf;
  c.doubleBuffer = o.doubleBuffer;
  c.naiveTiling = o.naiveTiling;
  c.batchWeightReuse = o.batchWeightReuse;
  return c;
}

std::vector<Schedule> KernelSpace::enumerate(size_t limit) const {
  const std::vector<Decision> ds = decisions();
  std::vector<Schedule> out;
  for (const Decision &d : ds)
    if (d.values.empty())
      return out; // a decision with no candidate: an empty space
  std::vector<size_t> at(ds.size(), 0);
  Schedule s;
  s.strategy = strategy();
  for (bool more = true; more;) {
    for (size_t i = 0; i < ds.size(); ++i)
      s.decisions[ds[i].name] = ds[i].values[at[i]];
    if (!whyIllegal(s))
      out.push_back(s);
    more = false; // odometer over the decisions, the last one fastest
    for (size_t i = ds.size(); i-- > 0;) {
      if (++at[i] < ds[i].values.size()) {
        more = true;
        break;
      }
      at[i] = 0;
    }
  }
  return sample(std::move(out), limit);
}

std::vector<Schedule> KernelSpace::sample(std::vector<Schedule> out, size_t limit) const {
  if (limit == 0 || out.size() <= limit)
    return out;
  // A fixed-seed sample that keeps the enumeration order (mt19937's sequence is the same on
  // every platform; the distributions of <random> are not, so they are not used).
  std::mt19937 rng(15);
  std::vector<size_t> idx(out.size());
  for (size_t i = 0; i < idx.size(); ++i)
    idx[i] = i;
  for (size_t i = idx.size() - 1; i > 0; --i)
    std::swap(idx[i], idx[rng() % (i + 1)]);
  idx.resize(limit);
  std::vector<Schedule> sample;
  if (Expected<Schedule, Reject> d = defaultPoint(); d)
    sample.push_back(*d);
  std::sort(idx.begin(), idx.end());
  for (size_t i : idx)
    if (sample.size() < limit && (sample.empty() || !(out[i] == sample.front())))
      sample.push_back(out[i]);
  return sample;
}

Reject KernelSpace::badDecision(const Schedule &s, const std::string &name) const {
  for (const Decision &d : decisions())
    if (d.name == name) {
      std::string v = s.has(name) ? std::to_string(s.decisions.at(name)) : "missing";
      return kernelReject(RejectKind::Unsupported,
                          fmt::format("{}: decision '{}' = {} is not one of its values [{}]",
                                      strategyName(strategy()), name, v,
                                      fmt::join(d.values, ", ")));
    }
  return kernelReject(RejectKind::Unsupported,
                      fmt::format("{}: no decision '{}'", strategyName(strategy()), name));
}

std::optional<Reject> KernelSpace::checkShape(const Schedule &s) const {
  if (s.strategy != strategy())
    return kernelReject(RejectKind::Unsupported,
                        fmt::format("the point's strategy is '{}', this space's '{}'",
                                    strategyName(s.strategy), strategyName(strategy())));
  const std::vector<Decision> ds = decisions();
  for (const Decision &d : ds)
    if (!s.has(d.name) ||
        std::find(d.values.begin(), d.values.end(), s.decisions.at(d.name)) == d.values.end())
      return badDecision(s, d.name);
  for (const auto &[name, v] : s.decisions)
    if (std::none_of(ds.begin(), ds.end(), [&](const Decision &d) { return d.name == name; })) {
      std::vector<std::string> names;
      for (const Decision &d : ds)
        names.push_back(d.name);
      return kernelReject(RejectKind::Unsupported,
                          fmt::format("{}: no decision '{}' (its decisions: {})",
                                      strategyName(strategy()), name, fmt::join(names, ", ")));
    }
  return std::nullopt;
}

std::unique_ptr<KernelSpace> makeSpace(Strategy strategy, const GroupPlan &p, const graph::Graph &g,
                                       const SpaceContext &ctx) {
  switch (strategy) {
  case Strategy::TensorUnit:
    return makeTensorUnitSpace(p, g, ctx);
  case Strategy::DepthwiseVector:
    return makeDepthwiseSpace(p, g, ctx);
  case Strategy::BatchMatmul:
    return makeBatchMatmulSpace(p, g, ctx);
  case Strategy::Attention:
    return makeAttentionSpace(p, g, ctx);
  case Strategy::Pool:
    return makePoolSpace(p, g, ctx);
  case Strategy::GlobalPool:
    return makeGlobalPoolSpace(p, g, ctx);
  case Strategy::Eltwise:
    return makeEltwiseSpace(p, g, ctx);
  case Strategy::Concat:
    return makeConcatSpace(p, g, ctx);
  case Strategy::LoopNest:
    return makeLoopNestSpace(p, g, ctx);
  case Strategy::View:
    return makeViewSpace(p, g, ctx);
  }
  return nullptr;
}

Strategy defaultStrategyOf(KernelKind kind) {
  switch (kind) {
  case KernelKind::Matmul:
    return Strategy::TensorUnit;
  case KernelKind::BatchMatmul:
    return Strategy::BatchMatmul;
  case KernelKind::Attention:
    return Strategy::Attention;
  case KernelKind::Pool:
    return Strategy::Pool;
  case KernelKind::GlobalAvgPool:
    return Strategy::GlobalPool;
  case KernelKind::Eltwise:
    return Strategy::Eltwise;
  case KernelKind::Concat:
    return Strategy::Concat;
  case KernelKind::View:
    return Strategy::View;
  case KernelKind::LoopNest:
    return Strategy::LoopNest;
  }
  return Strategy::LoopNest;
}

std::vector<Strategy> strategiesFor(const GroupPlan &p, const Hw &hw) {
  std::vector<Strategy> s = {defaultStrategyOf(p.kind)};
  // The vector unit needs `mac`, or on int8 targets `mul` + `add` (fp16 targets without `mac`
  // keep the tensor unit).
  if (p.kind == KernelKind::Matmul && p.depthwise &&
      (hw.vectorHas(isa::VecOp::Mac) || (hw.quantised() && hw.vectorHas(isa::VecOp::Add))))
    s.push_back(Strategy::DepthwiseVector);
  return s;
}

} // namespace npuc::npu
