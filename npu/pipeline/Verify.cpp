// Verify.cpp - the segment plan's invariants, checked between the pipeline's phases.
//
// Each check runs once the phase that establishes it has run, so a later phase that breaks
// what an earlier one established is caught where it happens. Cross-feature rules live here
// too (a batch-split run touches no tensor stored in a chosen layout): the phases that make
// the decisions also guard them, and the verifier proves that the guards held.
#include "npu/pipeline/Pipeline.h"

#include <algorithm>
#include <fmt/format.h>
#include <tuple>

namespace npuc::npu {

namespace {

using Problems = std::vector<std::string>;

std::string quoted(const SegmentPlan &p, graph::ValueId v) {
  return "'" + p.g->value(v).name + "'";
}

std::vector<graph::ValueId> ioOf(const graph::FusedGroup &grp) {
  std::vector<graph::ValueId> v = grp.inputs;
  v.insert(v.end(), grp.outputs.begin(), grp.outputs.end());
  return v;
}

// Views alias values of equal byte size.
void checkAliases(const SegmentPlan &p, Problems &out) {
  for (const auto &[view, of] : p.aliasOf)
    if (p.bytesOf(view) != p.bytesOf(of))
      out.push_back(fmt::format("view {} ({} bytes) aliases {} of another size ({} bytes)",
                                quoted(p, view), p.bytesOf(view), quoted(p, of), p.bytesOf(of)));
}

// Every value a step reads or writes is live at that step; what the host writes is live from
// the first step, what it reads to the end.
void checkLifetimes(const SegmentPlan &p, Problems &out) {
  const int64_t steps = static_cast<int64_t>(p.groupIds.size());
  auto lifeOf = [&](graph::ValueId v) -> const Span * {
    auto it = p.live.life.find(p.rootOf(v));
    return it == p.live.life.end() ? nullptr : &it->second;
  };
  for (size_t i = 0; i < p.groupIds.size(); ++i)
    for (graph::ValueId v : ioOf(p.group(i))) {
      const Span *s = lifeOf(v);
      if (!s)
        out.push_back(fmt::format("{} (step {}, group '{}') has no lifetime", quoted(p, v), i,
                                  p.group(i).name));
      else if (!(s->first <= int64_t(i) && int64_t(i) < s->second))
        out.push_back(fmt::format("the lifetime [{}, {}) of {} does not cover its use at step {} "
                                  "(group '{}')",
                                  s->first, s->second, quoted(p, v), i, p.group(i).name));
    }
  for (const DramTensor &x : p.seg.inputs)
    if (const Span *s = lifeOf(x.value); s && s->first != 0)
      out.push_back(fmt::format("the host writes {} before the run, but its lifetime starts at "
                                "step {}",
                                quoted(p, x.value), s->first));
  for (const DramTensor &x : p.seg.outputs)
    if (const Span *s = lifeOf(x.value); s && s->second != steps)
      out.push_back(fmt::format("the host reads {} after the run, but its lifetime ends at step {}",
                                quoted(p, x.value), s->second));
}

// Runs are disjoint and in order, touch no tensor stored in a chosen layout, and every DRAM
// tensor they touch is live over the whole run (the next sub-batch still reads it).
void checkSplitRuns(const SegmentPlan &p, Problems &out) {
  size_t prevEnd = 0;
  for (const SplitRun &run : p.split.runs) {
    const std::string where = fmt::format("split run over steps [{}, {})", run.first, run.end);
    if (run.first < prevEnd || run.end <= run.first || run.end > p.groupIds.size())
      out.push_back(where + " overlaps another run or lies outside the segment");
    prevEnd = run.end;
    for (size_t i = run.first; i < run.end && i < p.groupIds.size(); ++i)
      for (graph::ValueId v : ioOf(p.group(i)))
        if (p.chosen.layout.count(v) || p.chosen.layout.count(p.rootOf(v)))
          out.push_back(fmt::format("{} touches {} (group '{}'), which is stored in a layout "
                                    "chosen to cancel layout ops",
                                    where, quoted(p, v), p.group(i).name));
    for (const auto &[root, span] : p.live.life)
      if (span.first < int64_t(run.end) && int64_t(run.first) < span.second &&
          (span.first > int64_t(run.first) || span.second < int64_t(run.end)))
        out.push_back(fmt::format("{} is live over steps [{}, {}), only part of the {}",
                                  quoted(p, root), span.first, span.second, where));
  }
}

// Two residents live at once do not share L1 bytes. Only pairs whose lifetimes overlap are
// compared (residents by first step, each against those starting before it ends), so that a
// segment of thousands of short-lived residents is not checked pair by pair.
void checkResidentOverlaps(const SegmentPlan &p, Problems &out) {
  struct Res {
    Span life;
    graph::ValueId root;
    int64_t at, end;
  };
  std::vector<Res> rs;
  for (const auto &[root, at] : p.rp.l1Addr)
    if (auto span = p.live.life.find(root); span != p.live.life.end())
      rs.push_back({span->second, root, at, at + p.bytesOf(root)});
  std::sort(rs.begin(), rs.end(), [](const Res &x, const Res &y) {
    return std::tie(x.life.first, x.root) < std::tie(y.life.first, y.root);
  });
  std::vector<std::pair<graph::ValueId, graph::ValueId>> clash;
  for (size_t i = 0; i < rs.size(); ++i)
    for (size_t j = i + 1; j < rs.size() && rs[j].life.first < rs[i].life.second; ++j) {
      const Res &a = rs[i], &b = rs[j];
      if (b.life.first < a.life.second && a.life.first < b.life.second && a.at < b.end &&
          b.at < a.end)
        clash.emplace_back(std::min(a.root, b.root), std::max(a.root, b.root));
    }
  std::sort(clash.begin(), clash.end());
  for (const auto &[x, y] : clash)
    out.push_back(fmt::format("residents {} and {} share L1 bytes while both live", quoted(p, x),
                              quoted(p, y)));
}

// Residents: not host-visible, outside every window of the steps they are live at, and never
// live across a batch-split run; two residents live at once do not share L1 bytes.
void checkResidents(const SegmentPlan &p, Problems &out) {
  const int l1 = p.hw.l1;
  for (const graph::ValueId root : p.split.residentRoots)
    if (p.hostRoots.count(root))
      out.push_back(fmt::format("{} stays in L1 in a batch-split run, but the host reads or "
                                "writes it",
                                quoted(p, root)));
  for (const auto &[root, at] : p.rp.l1Addr) {
    const int64_t end = at + p.bytesOf(root);
    if (p.hostRoots.count(root))
      out.push_back(
          fmt::format("{} is resident in L1, but the host reads or writes it", quoted(p, root)));
    auto span = p.live.life.find(root);
    if (span == p.live.life.end()) {
      out.push_back(fmt::format("resident {} has no lifetime", quoted(p, root)));
      continue;
    }
    for (int64_t i = span->second.first; i < span->second.second; ++i) {
      auto step = [&] { return fmt::format("step {} (group '{}')", i, p.group(size_t(i)).name); };
      if (p.split.covers(size_t(i)))
        out.push_back(fmt::format("resident {} stays in L1 across a batch-split run at {}",
                                  quoted(p, root), step()));
      const Window &w = p.rp.window.at(size_t(i));
      auto r = w.range.find(l1);
      if (r == w.range.end())
        out.push_back(fmt::format("{} tiles in the whole of L1 while resident {} is live at "
                                  "[{}, {})",
                                  step(), quoted(p, root), at, end));
      else if (r->second.first < end && at < r->second.second)
        out.push_back(fmt::format("{}: its L1 window [{}, {}) overlaps resident {} at [{}, {})",
                                  step(), r->second.first, r->second.second, quoted(p, root), at,
                                  end));
    }
  }
  checkResidentOverlaps(p, out);
}

// Every live buffer has exactly one home (a DRAM region, the whole batch's L1, or a split
// run's L1), and DRAM regions of buffers live at the same step do not overlap.
void checkHomes(const SegmentPlan &p, Problems &out) {
  const std::set<graph::ValueId> inDram(p.dramRoots.begin(), p.dramRoots.end());
  for (const auto &[root, span] : p.live.life) {
    const int homes = int(inDram.count(root)) + int(p.rp.l1Addr.count(root)) +
                      int(p.split.residentRoots.count(root));
    if (homes != 1)
      out.push_back(fmt::format("{} has {} homes (DRAM {}, L1 {}, a batch-split run's L1 {})",
                                quoted(p, root), homes, inDram.count(root), p.rp.l1Addr.count(root),
                                p.split.residentRoots.count(root)));
    if (homes >= 1 && !p.split.residentRoots.count(root) && !p.addr.count(root))
      out.push_back(fmt::format("{} has no address", quoted(p, root)));
  }
  struct Region {
    int64_t lo, hi;
    graph::ValueId v;
  };
  std::vector<Region> rs;
  for (graph::ValueId v : p.dramRoots)
    if (auto a = p.addr.find(v); a != p.addr.end())
      rs.push_back({a->second, a->second + p.bytesOf(v), v});
  std::sort(rs.begin(), rs.end(), [](const Region &a, const Region &b) {
    return std::tie(a.lo, a.v) < std::tie(b.lo, b.v);
  });
  for (size_t i = 0; i < rs.size(); ++i) {
    if (rs[i].hi > p.seg.constBase)
      out.push_back(fmt::format("{} at DRAM [{}, {}) reaches into the constants at {}",
                                quoted(p, rs[i].v), rs[i].lo, rs[i].hi, p.seg.constBase));
    for (size_t j = i + 1; j < rs.size() && rs[j].lo < rs[i].hi; ++j) {
      const Span &a = p.live.life.at(rs[i].v), &b = p.live.life.at(rs[j].v);
      if (a.first < b.second && b.first < a.second)
        out.push_back(fmt::format("{} at DRAM [{}, {}) and {} at [{}, {}) overlap while both are "
                                  "live (steps [{}, {}) and [{}, {}))",
                                  quoted(p, rs[i].v), rs[i].lo, rs[i].hi, quoted(p, rs[j].v),
                                  rs[j].lo, rs[j].hi, a.first, a.second, b.first, b.second));
    }
  }
}

} // namespace

std::vector<std::string> verifyPlan(const SegmentPlan &p) {
  Problems out;
  if (p.reached(Phase::PlanGroups) && p.plans.size() != p.groupIds.size())
    out.push_back(fmt::format("{} plans for {} steps", p.plans.size(), p.groupIds.size()));
  if (p.reached(Phase::Liveness)) {
    checkAliases(p, out);
    checkLifetimes(p, out);
  }
  if (p.reached(Phase::BatchSplit))
    checkSplitRuns(p, out);
  if (p.reached(Phase::Residency))
    checkResidents(p, out);
  if (p.reached(Phase::Dram))
    checkHomes(p, out);
  return out;
}

} // namespace npuc::npu
