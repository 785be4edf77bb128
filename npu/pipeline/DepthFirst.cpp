// DepthFirst.cpp - band geometry, band graphs, and which chains run depth-first (DepthFirst.h).
#include "npu/pipeline/DepthFirst.h"

#include "graph/Passes.h"
#include "support/Error.h"
#include "support/IntMath.h"

#include <algorithm>
#include <fmt/format.h>

namespace npuc::npu {

using graph::NodeId;
using graph::OpKind;
using graph::ValueId;

namespace {

constexpr int kH = 2; // the rows axis of an NCHW tensor

bool windowed(OpKind k) {
  return k == OpKind::Conv || k == OpKind::MaxPool || k == OpKind::AveragePool;
}

// Ops that map each output row from the same row of their operands (with the checks of
// rowLocalReason on broadcasting and axes): elementwise maps of any arity, and channel joins.
bool rowwise(OpKind k) {
  if (graph::isElementwiseOp(k) || graph::isExtUnaryOp(k) || graph::isExtBroadcastOp(k))
    return true;
  switch (k) {
  case OpKind::LeakyRelu:
  case OpKind::HardSigmoid:
  case OpKind::HardSwish:
  case OpKind::PRelu:
  case OpKind::Identity:
  case OpKind::Dropout:
  case OpKind::BatchNormalization:
  case OpKind::Concat:
    return true;
  default:
    return false;
  }
}

// The window of a windowed node along H: kernel extent, stride, dilation, top pad.
struct Window1d {
  int64_t k = 1, s = 1, d = 1, pad = 0;
};

Window1d windowOf(const graph::Graph &g, const graph::Node &n) {
  Window1d w;
  if (n.kind == OpKind::Conv)
    w.k = g.value(n.inputs.at(1)).shape.at(2);
  else
    w.k = n.attrInts("kernel_shape").at(0);
  w.s = n.attrInts("strides", {1, 1}).at(0);
  w.d = n.kind == OpKind::Conv ? n.attrInts("dilations", {1, 1}).at(0) : 1;
  w.pad = n.attrInts("pads", {0, 0, 0, 0}).at(0);
  return w;
}

} // namespace

std::string rowLocalReason(const graph::Graph &g, const graph::Node &n) {
  const std::string who = fmt::format("{} '{}'", graph::opName(n.kind), n.name);
  if (!windowed(n.kind) && !rowwise(n.kind))
    return who + " does not compute each output row from a window of rows";
  if (n.outputs.size() != 1 && !(n.kind == OpKind::Dropout || n.kind == OpKind::MaxPool))
    return who + " has more than one output";
  for (size_t i = 1; i < n.outputs.size(); ++i)
    if (n.outputs[i] != graph::kNoValue)
      return who + " has a second output";
  const Shape &y = g.value(n.outputs[0]).shape;
  if (y.size() != 4)
    return fmt::format("{}: output '{}' is not an NCHW tensor", who, g.value(n.outputs[0]).name);
  if (windowed(n.kind)) {
    if (n.attrString("auto_pad", "NOTSET") != "NOTSET")
      return who + " pads by auto_pad";
    if (n.attrInt("ceil_mode", 0) != 0)
      return who + " rounds its output size up (ceil_mode)";
  }
  if (n.kind == OpKind::Concat && n.attrInt("axis", 0) != 1 && n.attrInt("axis", 0) != -3)
    return who + " concatenates along another axis than channels";
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const ValueId v = n.inputs[i];
    if (v == graph::kNoValue)
      continue;
    const graph::Value &x = g.value(v);
    if (x.isConstant()) {
      // Parameters (weights, scales, BatchNorm's vectors) do not vary along H; an elementwise
      // constant operand must not either (it broadcasts along H: rank below 2 or H of 1).
      if (rowwise(n.kind) && n.kind != OpKind::BatchNormalization && x.shape.size() >= 2 &&
          x.shape[x.shape.size() - 2] != 1)
        return fmt::format("{}: constant '{}' varies along the rows", who, x.name);
      continue;
    }
    if (windowed(n.kind) && i > 0) // only the windowed input has rows
      return fmt::format("{}: operand '{}' is not constant", who, x.name);
    if (x.shape.size() != 4 || x.shape[0] != y[0])
      return fmt::format("{}: input '{}' is not an NCHW tensor of the output's batch", who, x.name);
    if (!windowed(n.kind) && x.shape[kH] != y[kH])
      return fmt::format("{}: input '{}' broadcasts along the rows", who, x.name);
  }
  return "";
}

Expected<BandGeometry, std::string>
bandGeometry(const graph::Graph &g, const std::vector<NodeId> &nodes, ValueId out, RowRange band) {
  std::set<ValueId> produced;
  for (NodeId n : nodes)
    produced.insert(g.node(n).outputs[0]);
  BandGeometry geo;
  geo.rows[out] = band;
  std::map<ValueId, std::vector<ChainRead>> needs; // chain values: every read, with its rows
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    const graph::Node &n = g.node(*it);
    const ValueId y = n.outputs[0];
    if (y != out) { // its readers all come later: the union of their rows, crops for the rest
      auto nd = needs.find(y);
      if (nd == needs.end())
        return unexpected(fmt::format("'{}' is read after the chain", g.value(y).name));
      RowRange hull = nd->second.front().rows;
      for (const ChainRead &rd : nd->second)
        hull = {std::min(hull.lo, rd.rows.lo), std::max(hull.hi, rd.rows.hi)};
      geo.rows[y] = hull;
      for (const ChainRead &rd : nd->second)
        if (!(rd.rows == hull))
          geo.crops.push_back(rd);
    }
    const RowRange r = geo.rows.at(y);
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const ValueId x = n.inputs[i];
      if (x == graph::kNoValue || g.value(x).isConstant())
        continue;
      RowRange need = r;
      if (windowed(n.kind)) {
        const Window1d w = windowOf(g, n);
        const int64_t u0 = r.lo * w.s - w.pad, u1 = (r.hi - 1) * w.s - w.pad + (w.k - 1) * w.d + 1;
        need = {std::max<int64_t>(u0, 0), std::min(u1, g.value(x).shape[kH])};
        if (need.size() <= 0)
          return unexpected(fmt::format("{} '{}' reads no row of '{}' for output rows [{}, {})",
                                        graph::opName(n.kind), n.name, g.value(x).name, r.lo,
                                        r.hi));
        geo.pads[*it] = {need.lo - u0, u1 - need.hi};
      }
      if (produced.count(x))
        needs[x].push_back({*it, i, x, need});
      else
        geo.reads.push_back({*it, i, x, need});
    }
  }
  return geo;
}

namespace {

// Numbers the distinct (value, rows) of `rds` in order of first appearance.
std::vector<size_t> distinctReads(const std::vector<ChainRead> &rds) {
  std::map<std::tuple<ValueId, int64_t, int64_t>, size_t> index;
  std::vector<size_t> out;
  for (const ChainRead &rd : rds)
    out.push_back(index.emplace(std::make_tuple(rd.value, rd.rows.lo, rd.rows.hi), index.size())
                      .first->second);
  return out;
}

size_t distinctCount(const std::vector<size_t> &idx) {
  return idx.empty() ? 0 : *std::max_element(idx.begin(), idx.end()) + 1;
}

// One value per distinct (value, rows) of `rds`, numbered from `first` (distinctReads' order) and
// named `<name>.<tag><lo>_<hi>`, the rows of its value; each read reads it.
void addReadValues(graph::Graph &bg, const graph::Graph &g, const std::vector<ChainRead> &rds,
                   size_t first, const char *tag) {
  const std::vector<size_t> idx = distinctReads(rds);
  for (size_t i = 0; i < rds.size(); ++i) {
    const ChainRead &rd = rds[i];
    const ValueId id = ValueId(first + idx[i]);
    if (size_t(id) == bg.values.size()) {
      const graph::Value &x = g.value(rd.value);
      Shape shape = x.shape;
      shape[kH] = rd.rows.size();
      bg.addValue(fmt::format("{}.{}{}_{}", x.name, tag, rd.rows.lo, rd.rows.hi), shape, x.dtype);
    }
    bg.node(rd.node).inputs[rd.operand] = id;
  }
}

} // namespace

std::vector<size_t> readCopies(const BandGeometry &geo) {
  return distinctReads(geo.reads);
}

std::vector<size_t> cropCopies(const BandGeometry &geo) {
  return distinctReads(geo.crops);
}

std::map<ValueId, std::pair<ValueId, int64_t>> bandCrops(const graph::Graph &g,
                                                         const BandGeometry &geo) {
  std::map<ValueId, std::pair<ValueId, int64_t>> out;
  const size_t first = g.values.size() + distinctCount(readCopies(geo));
  const std::vector<size_t> crop = cropCopies(geo);
  for (size_t i = 0; i < geo.crops.size(); ++i) {
    const ChainRead &rd = geo.crops[i];
    out[ValueId(first + crop[i])] = {rd.value, rd.rows.lo - geo.rows.at(rd.value).lo};
  }
  return out;
}

std::map<ValueId, std::pair<ValueId, int64_t>> bandInputs(const graph::Graph &g,
                                                          const BandGeometry &geo) {
  std::map<ValueId, std::pair<ValueId, int64_t>> out;
  const std::vector<size_t> copy = readCopies(geo);
  for (size_t i = 0; i < geo.reads.size(); ++i)
    out[ValueId(g.values.size() + copy[i])] = {geo.reads[i].value, geo.reads[i].rows.lo};
  return out;
}

std::unique_ptr<graph::Graph> bandGraph(const graph::Graph &g, const std::vector<int> &ids,
                                        const BandGeometry &geo) {
  auto bg = std::make_unique<graph::Graph>(g);
  for (const auto &[v, r] : geo.rows)
    bg->value(v).shape[kH] = r.size();
  for (const auto &[n, tb] : geo.pads) {
    graph::Node &node = bg->node(n);
    std::vector<int64_t> pads = node.attrInts("pads", {0, 0, 0, 0});
    pads[0] = tb.first;
    pads[2] = tb.second;
    node.attrs["pads"] = pads;
  }
  const size_t copies = distinctCount(readCopies(geo));
  addReadValues(*bg, g, geo.reads, g.values.size(), "rows");
  addReadValues(*bg, g, geo.crops, g.values.size() + copies, "crop");
  for (int id : ids)
    graph::computeGroupBoundary(*bg, bg->groups.at(size_t(id)));
  return bg;
}

namespace {

// What makes two bands' kernels the same: every value's row count, every window's pads, every
// read's and crop's rows (a crop's relative to its value's band), and which reads share a copy.
std::vector<int64_t> geometryKey(const BandGeometry &geo) {
  std::vector<int64_t> key;
  for (const auto &[v, r] : geo.rows)
    key.push_back(r.size());
  for (const auto &[n, tb] : geo.pads) {
    key.push_back(tb.first);
    key.push_back(tb.second);
  }
  for (const ChainRead &rd : geo.reads)
    key.push_back(rd.rows.size());
  for (size_t copy : readCopies(geo))
    key.push_back(int64_t(copy));
  for (const ChainRead &rd : geo.crops) {
    key.push_back(rd.rows.lo - geo.rows.at(rd.value).lo);
    key.push_back(rd.rows.size());
  }
  for (size_t copy : cropCopies(geo))
    key.push_back(int64_t(copy));
  return key;
}

// A candidate chain: steps [s, e), its intermediates' DRAM bytes that whole-tensor residency
// does not keep (the estimate the choice weighs).
struct Chain {
  size_t s = 0, e = 0;
  int64_t spill = 0; // intermediates' DRAM bytes whole-tensor residency does not keep
  int64_t rows = 0;  // the band height of largest estimated saving
  int64_t net = 0;   // that saving (netSaving)
};

// One planDepthFirst: which steps may join a chain (markRowLocal), the candidate chains and their
// estimates (candidates), the disjoint ones of largest total (choose), and each tried at band
// heights (tryChain, tryBands) and kept only when its simulation agrees (judge).
class DepthFirstPlanner {
public:
  DepthFirstPlanner(const DepthFirstInput &in, const Hw &hw)
      : in_(in), hw_(hw), g_(*in.g), steps_(in.groupIds.size()), cap_(hw.capacity(hw.l1)),
        eb_(hw.actBytes()), rowLocal_(steps_, false), uses_(g_.useLists()) {
    for (size_t i = 0; i < steps_; ++i)
      for (NodeId n : group(i).nodes)
        stepOfNode_[n] = i;
  }

  // Rounds of choice: the disjoint candidates of largest total, each tried; a chain that fails
  // leaves the candidates (its shorter or shifted neighbours may fit), one that succeeds takes
  // its steps, and the next round chooses again among what is left, until a round tries nothing
  // new or kMaxTries chains have been tried (each try simulates the chain's groups per variant).
  SplitPlan plan() {
    constexpr int kMaxTries = 24;
    markRowLocal();
    std::vector<Chain> cands = candidates();
    std::vector<std::pair<size_t, size_t>> taken;
    int tries = 0;
    for (bool fresh = true; fresh && tries < kMaxTries;) {
      fresh = false;
      for (const Chain &c : choose(cands)) {
        if (tries++ >= kMaxTries)
          break;
        fresh = true;
        if (tryChain(c))
          taken.emplace_back(c.s, c.e);
        cands.erase(std::remove_if(cands.begin(), cands.end(),
                                   [&](const Chain &x) {
                                     if (x.s == c.s && x.e == c.e)
                                       return true;
                                     for (const auto &[s, e] : taken)
                                       if (x.s < e && s < x.e)
                                         return true;
                                     return false;
                                   }),
                    cands.end());
      }
    }
    return std::move(out_);
  }

private:
  const graph::FusedGroup &group(size_t step) const {
    return g_.groups.at(size_t(in_.groupIds[step]));
  }

  void markRowLocal() {
    for (size_t i = 0; i < steps_; ++i) {
      if (in_.taken.count(i) || in_.plans[i].kind == KernelKind::View ||
          group(i).outputs.size() != 1)
        continue;
      bool ok = true;
      for (NodeId n : group(i).nodes)
        ok = ok && rowLocalReason(g_, g_.node(n)).empty();
      for (const std::vector<ValueId> *vs : {&group(i).inputs, &group(i).outputs})
        for (ValueId v : *vs)
          ok = ok && !in_.chosenLayout.count(v) && !in_.chosenLayout.count(in_.rootOf(v)) &&
               in_.rootOf(v) == v;
      rowLocal_[i] = ok;
    }
  }

  std::vector<NodeId> nodesOf(size_t s, size_t e) const {
    std::vector<NodeId> nodes;
    for (size_t i = s; i < e; ++i)
      nodes.insert(nodes.end(), group(i).nodes.begin(), group(i).nodes.end());
    return nodes;
  }

  // "" when steps [s, e) form a chain: only the last step's output is read after it (or by the
  // host), and rows propagate (every window reads a row) for the whole output and for one-row
  // bands at the top and in the middle.
  std::string chainReason(size_t s, size_t e) const {
    const ValueId out = group(e - 1).outputs[0];
    for (size_t i = s; i + 1 < e; ++i) {
      const ValueId v = group(i).outputs[0];
      if (in_.pinned.count(v) || g_.isGraphOutput(v))
        return fmt::format("'{}' is read by the host", g_.value(v).name);
      for (NodeId c : uses_.at(size_t(v)))
        if (auto it = stepOfNode_.find(c); it == stepOfNode_.end() || it->second >= e)
          return fmt::format("'{}' is read after the chain", g_.value(v).name);
    }
    const int64_t H = g_.value(out).shape[kH];
    for (RowRange band : {RowRange{0, H}, RowRange{0, 1}, RowRange{H / 2, H / 2 + 1}})
      if (auto geo = bandGeometry(g_, nodesOf(s, e), out, band); !geo)
        return geo.error();
    return "";
  }

  // Every chain of 2..kMaxChain row-local steps, with the bytes of its intermediates the
  // whole-tensor residency analysis does not propose to keep (written once, read once).
  std::vector<Chain> candidates() {
    constexpr size_t kMaxChain = 8;
    std::vector<Chain> out;
    for (size_t s = 0; s < steps_; ++s) {
      if (!rowLocal_[s])
        continue;
      for (size_t e = s + 2; e <= std::min(steps_, s + kMaxChain) && rowLocal_[e - 1]; ++e) {
        if (!chainReason(s, e).empty())
          continue;
        const std::vector<int> ids(in_.groupIds.begin() + long(s), in_.groupIds.begin() + long(e));
        std::set<ValueId> kept;
        for (const graph::ResidentTensor &r : graph::findResidentTensors(g_, ids, cap_, eb_))
          kept.insert(r.value);
        Chain c{s, e};
        for (size_t i = s; i + 1 < e; ++i)
          if (ValueId v = group(i).outputs[0]; !kept.count(v))
            c.spill += 2 * numElements(g_.value(v).shape) * eb_;
        if (in_.forceRows > 0) {
          // Forced bands weigh every chain by its length, so that the longest ones win.
          c.rows = in_.forceRows;
          c.net = int64_t(e - s);
          out.push_back(c);
        } else if (c.spill > 0 && bestHeight(c))
          out.push_back(c);
      }
    }
    return out;
  }

  // What running chain `c` in bands of `h` rows saves, in DRAM bytes, by the estimate: the
  // spilled intermediates, less the chain's weights loaded once more per band, the input rows
  // read again for the halos, and the halo rows recomputed (their MACs at the array's peak, in
  // the DRAM bytes as many cycles would move). An inner band stands for all of them.
  int64_t netSaving(const Chain &c, int64_t h) const {
    const ValueId out = group(c.e - 1).outputs[0];
    const int64_t N = g_.value(out).shape[0], H = g_.value(out).shape[kH], bands = ceilDiv(H, h);
    auto geo = bandGeometry(g_, nodesOf(c.s, c.e), out, {H / 2 - h / 2, H / 2 - h / 2 + h});
    if (!geo)
      return 0;
    int64_t weights = 0, halo = 0;
    double macs = 0;
    for (size_t i = c.s; i < c.e; ++i)
      for (NodeId n : group(i).nodes)
        for (ValueId x : g_.node(n).inputs)
          if (x != graph::kNoValue && g_.value(x).isConstant() && g_.value(x).shape.size() >= 2)
            weights += numElements(g_.value(x).shape) * eb_;
    for (const ChainRead &rd : geo->reads) {
      const Shape &sh = g_.value(rd.value).shape;
      halo += N * std::max<int64_t>(0, rd.rows.size() * bands - sh[kH]) * sh[1] * sh[3] * eb_;
    }
    for (size_t i = c.s; i + 1 < c.e; ++i) {
      const ValueId v = group(i).outputs[0];
      const int64_t Hv = g_.value(v).shape[kH];
      const int64_t again = std::max<int64_t>(0, geo->rows.at(v).size() * bands - Hv);
      macs += double(graph::groupMacs(g_, group(i))) * double(again) / double(Hv);
    }
    const isa::Target &t = *hw_.t;
    const double recompute = macs / double(t.tensor.peakMacsPerCycle()) * t.dram.bytesPerCycle;
    return c.spill - (N * bands - 1) * weights - halo - int64_t(recompute);
  }

  // The band height of largest estimated saving among those whose intermediates fit half of L1
  // (an inner band's, the largest) in at most kMaxBands bands: false when none saves anything.
  // Each band emits every kernel of the chain again: past kMaxBands the per-kernel overheads
  // (pipeline fill, constants' first loads) outweigh what L1 saves.
  bool bestHeight(Chain &c) const {
    constexpr int64_t kMaxBands = 64;
    const int64_t H = g_.value(group(c.e - 1).outputs[0]).shape[kH];
    for (int64_t h = H - 1; h >= 1 && ceilDiv(H, h) <= kMaxBands; h = h > 8 ? h * 7 / 8 : h - 1) {
      if (bandBytes(c, H / 2 - h / 2, h) > cap_ / 2)
        continue;
      if (const int64_t net = netSaving(c, h); net > c.net) {
        c.net = net;
        c.rows = h;
      }
    }
    return c.net > 0;
  }

  // Disjoint chains of largest total estimated saving, in step order (dp over the steps).
  std::vector<Chain> choose(const std::vector<Chain> &cands) const {
    std::vector<int64_t> dp(steps_ + 1, 0);
    std::vector<int> from(steps_ + 1, -1); // the chain ending at e, or -1
    for (size_t e = 1; e <= steps_; ++e) {
      dp[e] = dp[e - 1];
      for (size_t c = 0; c < cands.size(); ++c)
        if (cands[c].e == e && dp[cands[c].s] + cands[c].net > dp[e]) {
          dp[e] = dp[cands[c].s] + cands[c].net;
          from[e] = int(c);
        }
    }
    std::vector<Chain> chosen;
    for (size_t e = steps_; e > 0;) {
      if (from[e] < 0) {
        --e;
        continue;
      }
      chosen.push_back(cands[size_t(from[e])]);
      e = chosen.back().s;
    }
    std::reverse(chosen.begin(), chosen.end());
    return chosen;
  }

  // The L1 bytes a band of `rows` output rows starting at `lo` needs for the chain's
  // intermediates: the most live at any step (each from its producer to its last reader).
  int64_t bandBytes(const Chain &c, int64_t lo, int64_t rows) const {
    const ValueId out = group(c.e - 1).outputs[0];
    auto geo = bandGeometry(g_, nodesOf(c.s, c.e), out, {lo, lo + rows});
    if (!geo)
      return INT64_MAX;
    std::vector<int64_t> live(c.e - c.s, 0);
    for (size_t i = c.s; i + 1 < c.e; ++i) {
      const ValueId v = group(i).outputs[0];
      const Shape &sh = g_.value(v).shape;
      size_t last = i;
      for (NodeId r : uses_.at(size_t(v)))
        last = std::max(last, stepOfNode_.at(r));
      for (size_t k = i; k <= last; ++k)
        live[k - c.s] += geo->rows.at(v).size() * sh[1] * sh[3] * eb_;
    }
    return *std::max_element(live.begin(), live.end());
  }

  // The chain at its band height, then at half of it (more bands, less L1: a kernel that did not
  // tile around the band's residents may). True when the chain runs depth-first.
  bool tryChain(const Chain &c) {
    const int64_t H = g_.value(group(c.e - 1).outputs[0]).shape[kH];
    const std::string names =
        fmt::format("groups '{}' .. '{}'", group(c.s).name, group(c.e - 1).name);
    if (in_.forceRows > 0)
      return tryBands(c, std::min(in_.forceRows, H), names);
    for (int64_t h : {c.rows, c.rows / 2})
      if (h >= 1 && tryBands(c, h, names))
        return true;
    return false;
  }

  bool tryBands(const Chain &c, int64_t bandRows, const std::string &names);
  std::string judge(SplitRun &run, const Chain &c) const;

  const DepthFirstInput &in_;
  const Hw &hw_;
  const graph::Graph &g_;
  const size_t steps_;
  const int64_t cap_, eb_;
  std::vector<bool> rowLocal_;
  std::vector<std::vector<NodeId>> uses_;
  std::map<NodeId, size_t> stepOfNode_;
  SplitPlan out_;
};

// The chain by bands of `bandRows` output rows: each band's geometry, one variant per distinct
// shape, planned and given residency, then judged.
bool DepthFirstPlanner::tryBands(const Chain &c, int64_t bandRows, const std::string &names) {
  const std::vector<int> ids(in_.groupIds.begin() + long(c.s), in_.groupIds.begin() + long(c.e));
  const std::vector<NodeId> nodes = nodesOf(c.s, c.e);
  const ValueId out = group(c.e - 1).outputs[0];
  const int64_t N = g_.value(out).shape[0], H = g_.value(out).shape[kH];
  // Each image's bands are planned on the graph at one image (its tensors' own rows).
  std::unique_ptr<graph::Graph> one = N > 1 ? withSubBatch(g_, ids, N, 1) : nullptr;
  const graph::Graph &g1 = one ? *one : g_;
  SplitRun run;
  run.kind = SplitKind::Rows;
  run.first = c.s;
  run.end = c.e;
  run.rootOf = in_.rootOf;
  run.crossGroupPrefetch = in_.crossGroupPrefetch;
  const std::vector<GroupPlan> whole(in_.plans.begin() + long(c.s), in_.plans.begin() + long(c.e));
  ResidencyInput base;
  base.g = &g_;
  base.rootOf = in_.rootOf;
  base.ko = in_.ko;
  base.crossGroupPrefetch = in_.crossGroupPrefetch;
  base.jobs = in_.jobs;
  std::map<std::vector<int64_t>, size_t> variantOf; // a band's shape -> its variant
  auto rowBytes = [&](ValueId v) {                  // NHWC: a row is W x C elements
    const Shape &s = g_.value(v).shape;
    return s[1] * s[3] * eb_;
  };
  auto imageBytes = [&](ValueId v) { return numElements(g_.value(v).shape) / N * eb_; };
  for (int64_t img = 0; img < N; ++img)
    for (int64_t lo = 0; lo < H; lo += bandRows) {
      Expected<BandGeometry, std::string> geo =
          bandGeometry(g_, nodes, out, {lo, std::min(H, lo + bandRows)});
      if (!geo) {
        out_.notes.push_back(fmt::format("{} not run depth-first: band [{}, {}): {}", names, lo,
                                         std::min(H, lo + bandRows), geo.error()));
        return false;
      }
      SplitPart &part = run.parts.emplace_back();
      part.lo = lo;
      part.hi = std::min(H, lo + bandRows);
      part.image = img;
      const std::map<ValueId, std::pair<ValueId, int64_t>> inputOf = bandInputs(g1, *geo);
      auto [it, fresh] = variantOf.emplace(geometryKey(*geo), run.variants.size());
      part.variant = it->second;
      if (fresh) {
        SplitVariant &v = run.variants.emplace_back();
        v.g = bandGraph(g1, ids, *geo);
        for (const auto &[crop, at] : bandCrops(g1, *geo))
          v.views[crop] = {at.first, at.second * rowBytes(at.first)};
        // A copy of a chain input, or a crop of a chain value, has that value's scale (int8).
        auto standsFor = [&inputOf, &v](ValueId x) {
          if (auto i = inputOf.find(x); i != inputOf.end())
            return i->second.first;
          auto c = v.views.find(x);
          return c == v.views.end() ? x : c->second.first;
        };
        if (std::string why = planVariantKernels(v, ids, whole, hw_, standsFor); !why.empty()) {
          out_.notes.push_back(
              fmt::format("{} not run depth-first (bands of {} rows): {}", names, bandRows, why));
          return false;
        }
        planVariantResidency(v, ids, base, in_.pinned, hw_);
      }
      // Where the band's DRAM bytes lie: its reads' rows, its values' rows, in the segment's
      // tensors.
      for (const auto &[copy, src] : inputOf)
        part.dram[copy] = {src.first,
                           img * imageBytes(src.first) + src.second * rowBytes(src.first)};
      for (const auto &[v, r] : geo->rows)
        part.dram[v] = {v, img * imageBytes(v) + r.lo * rowBytes(v)};
    }
  run.rows.rows = H;
  run.rows.images = N;
  run.rows.bandRows = bandRows;
  run.rows.bands = int64_t(run.parts.size()) / N;
  if (std::string why = judge(run, c); !why.empty()) {
    out_.notes.push_back(
        fmt::format("{} not run depth-first ({}): {}", names, why, run.rows.reason));
    return false;
  }
  // Each band of a variant keeps its residents: their savings count once per band.
  for (size_t k = 0; k < run.variants.size(); ++k) {
    const int64_t uses = std::count_if(run.parts.begin(), run.parts.end(),
                                       [&](const SplitPart &p) { return p.variant == k; });
    for (ResidencyEntry &re : run.variants[k].rp.entries)
      re.dramBytesSaved *= uses;
  }
  for (ValueId root : run.residentRoots())
    out_.residentRoots.insert(root);
  out_.runs.push_back(std::move(run));
  return true;
}

// Fills the run's report and returns "" when it is worth running by bands, else why not.
std::string DepthFirstPlanner::judge(SplitRun &run, const Chain &c) const {
  const std::vector<int> ids(in_.groupIds.begin() + long(c.s), in_.groupIds.begin() + long(c.e));
  ResidencyInput ri;
  ri.g = &g_;
  ri.groupIds = ids;
  ri.plans = std::vector<GroupPlan>(in_.plans.begin() + long(c.s), in_.plans.begin() + long(c.e));
  ri.rootOf = in_.rootOf;
  ri.ko = in_.ko;
  ri.crossGroupPrefetch = in_.crossGroupPrefetch;
  ri.jobs = in_.jobs;
  DepthFirstEntry &e = run.rows;
  e.groups = ids;
  bool emitted = true;
  for (const StepCost &x : simulateSteps(ri, hw_)) {
    e.wholeDramBytes += x.dram;
    e.wholeCycles += x.cycles;
    e.recomputedMacs -= x.macs;
    e.recomputedVectorElements -= x.vectorElements;
    emitted = emitted && x.emitted;
  }
  // What whole-tensor residency would keep: inside the chain (its estimate) against the whole,
  // and across the chain's boundaries (a run's inputs and outputs stay in DRAM) against the bands.
  const std::vector<int> around(in_.groupIds.begin() + long(c.s > 0 ? c.s - 1 : 0),
                                in_.groupIds.begin() + long(std::min(steps_, c.e + 1)));
  const ValueId out = group(c.e - 1).outputs[0];
  int64_t lost = 0;
  for (const graph::ResidentTensor &r : graph::findResidentTensors(g_, around, cap_, eb_)) {
    const bool inside = r.producer != in_.groupIds[c.e - 1] &&
                        std::find(ids.begin(), ids.end(), r.producer) != ids.end();
    if (inside)
      e.wholeDramBytes -= r.dramBytesSaved;
    else if (r.value == out || std::find(ids.begin(), ids.end(), r.consumers.front()) != ids.end())
      lost += r.dramBytesSaved;
  }
  std::map<ValueId, std::pair<int64_t, int64_t>> span; // per chain value: rows computed, extent
  for (const SplitPart &part : run.parts) {
    const SplitVariant &v = run.variants[part.variant];
    for (const StepCost &x : v.rp.steps) {
      e.bandDramBytes += x.dram;
      e.bandCycles += x.cycles;
      e.recomputedMacs += x.macs;
      e.recomputedVectorElements += x.vectorElements;
      emitted = emitted && x.emitted;
    }
  }
  e.bandDramBytes += lost;
  for (const SplitPart &part : run.parts)
    for (const auto &[v, at] : part.dram)
      if (v == at.first) { // a value of the chain (not a read of an input)
        const int64_t rows = run.variants[part.variant].g->value(v).shape[kH];
        span[v].first += rows;
        span[v].second = e.images * g_.value(v).shape[kH];
      }
  for (const auto &[v, rs] : span)
    e.recomputedRows += std::max<int64_t>(0, rs.first - rs.second);
  e.reason = fmt::format(
      "{}{} band(s) of {} of {} output rows, {} kernel variant(s), {} rows recomputed; simulated "
      "alone, the whole tensors move {} DRAM bytes in {} cycles, the bands {} in {}{}",
      e.images > 1 ? fmt::format("{} images, each in ", e.images) : "", e.bands, e.bandRows, e.rows,
      run.variants.size(), e.recomputedRows, e.wholeDramBytes, e.wholeCycles, e.bandDramBytes,
      e.bandCycles,
      lost > 0
          ? fmt::format(" (with {} bytes residency keeps across the chain's ends otherwise)", lost)
          : "");
  if (!emitted)
    return "a kernel does not emit";
  if (in_.forceRows > 0)
    return ""; // the user's band height, whatever it costs
  if (e.bandDramBytes >= e.wholeDramBytes)
    return "no DRAM traffic saved";
  if (e.bandCycles > e.wholeCycles)
    return "slower";
  return "";
}

} // namespace

SplitPlan planDepthFirst(const DepthFirstInput &in, const Hw &hw) {
  if (in.groupIds.size() < 2)
    return {};
  return DepthFirstPlanner(in, hw).plan();
}

} // namespace npuc::npu
