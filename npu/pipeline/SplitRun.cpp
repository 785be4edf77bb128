// SplitRun.cpp - what batch splitting and depth-first runs share: planning a variant's kernels
// and residency, and a part's DRAM view (SplitRun.h).
#include "npu/pipeline/SplitRun.h"

#include "support/Error.h"

#include <algorithm>
#include <fmt/format.h>

namespace npuc::npu {

using graph::ValueId;

std::set<ValueId> SplitRun::residentRoots() const {
  std::set<ValueId> out;
  if (variants.empty())
    return out;
  for (const auto &[root, at] : variants[0].rp.l1Addr)
    if (std::all_of(variants.begin() + 1, variants.end(),
                    [&](const SplitVariant &v) { return v.rp.l1Addr.count(root) > 0; }))
      out.insert(root);
  return out;
}

ValueId SplitRun::rootIn(const SplitVariant &var, ValueId v) const {
  for (auto it = var.views.find(v); it != var.views.end(); it = var.views.find(v))
    v = it->second.first;
  return rootOf(v);
}

const SplitRun *SplitPlan::startingAt(size_t step) const {
  for (const SplitRun &r : runs)
    if (r.first == step)
      return &r;
  return nullptr;
}

bool SplitPlan::covers(size_t step) const {
  return std::any_of(runs.begin(), runs.end(),
                     [&](const SplitRun &r) { return r.first <= step && step < r.end; });
}

std::unique_ptr<graph::Graph> withSubBatch(const graph::Graph &g, const std::vector<int> &ids,
                                           int64_t N, int64_t b) {
  auto gb = std::make_unique<graph::Graph>(g);
  for (graph::Value &v : gb->values)
    if (!v.isConstant() && !v.shape.empty() && v.shape[0] == N)
      v.shape[0] = b;
  for (int id : ids)
    for (graph::NodeId nid : gb->groups.at(size_t(id)).nodes) {
      graph::Node &n = gb->node(nid);
      if (n.kind != graph::OpKind::Reshape || n.inputs.size() < 2)
        continue;
      const graph::Value &s = gb->value(n.inputs[1]);
      if (!s.i64 || s.i64->empty() || s.i64->front() != N)
        continue;
      std::vector<int64_t> dims = *s.i64;
      dims[0] = b;
      const Shape shape = s.shape;
      n.inputs[1] = gb->addConstantI64(s.name + ".subbatch", shape, std::move(dims));
    }
  return gb;
}

std::map<ValueId, std::pair<ValueId, int64_t>>
groupValuesAt(const graph::Graph &g, const std::vector<int> &ids,
              const std::function<int64_t(ValueId)> &offset) {
  std::map<ValueId, std::pair<ValueId, int64_t>> out;
  for (int id : ids) {
    const graph::FusedGroup &grp = g.groups.at(size_t(id));
    for (const std::vector<ValueId> *vs : {&grp.inputs, &grp.outputs})
      for (ValueId v : *vs)
        if (!g.value(v).isConstant())
          out[v] = {v, offset(v)};
  }
  return out;
}

std::string planVariantKernels(SplitVariant &v, const std::vector<int> &ids,
                               const std::vector<GroupPlan> &whole, const Hw &hw,
                               const std::function<ValueId(ValueId)> &standsFor) {
  v.plans.clear();
  for (size_t k = 0; k < ids.size(); ++k) {
    const graph::FusedGroup &grp = v.g->groups.at(size_t(ids[k]));
    v.plans.push_back(planGroup(*v.g, grp, hw));
    GroupPlan &p = v.plans.back();
    if (!p.reject.empty())
      return p.reject;
    if (p.kind != whole[k].kind)
      return fmt::format("group '{}' plans another kernel at part size", grp.name);
    p.quant = whole[k].quant;
    for (ValueId x : grp.inputs)
      if (ValueId s = standsFor(x); s != x)
        if (auto it = whole[k].quant.tensors.find(s); it != whole[k].quant.tensors.end())
          p.quant.tensors[x] = it->second;
  }
  return "";
}

void planVariantResidency(SplitVariant &v, const std::vector<int> &ids, const ResidencyInput &base,
                          const std::set<ValueId> &segmentPinned, const Hw &hw) {
  ResidencyInput ri = base;
  const SplitVariant *var = &v;
  ri.rootOf = [var, root = base.rootOf](ValueId x) {
    for (auto it = var->views.find(x); it != var->views.end(); it = var->views.find(x))
      x = it->second.first;
    return root(x);
  };
  ri.g = v.g.get();
  ri.groupIds = ids;
  ri.plans = v.plans;
  ri.pinned.clear();
  ri.splitPinned.clear();
  const Liveness live = computeLiveness(*v.g, ids, ri.rootOf);
  ri.life = live.life;
  for (ValueId x : live.inputs)
    ri.pinned.insert(ri.rootOf(x));
  for (ValueId x : live.escaping)
    ri.pinned.insert(ri.rootOf(x));
  for (const auto &[root, span] : ri.life)
    if (segmentPinned.count(root))
      ri.pinned.insert(root);
  v.rp = planResidency(ri, hw);
  v.residentL1Bytes.assign(ids.size(), 0);
  for (const auto &[root, at] : v.rp.l1Addr)
    for (int64_t k = ri.life.at(root).first; k < ri.life.at(root).second; ++k)
      v.residentL1Bytes[size_t(k)] += numElements(v.g->value(root).shape) * hw.actBytes();
}

DramCtx partDram(const SplitRun &run, const Hw &hw, size_t j,
                 std::function<int64_t(ValueId)> dramAddr,
                 std::function<int64_t(const ConstBytes &)> addConst,
                 std::unordered_map<std::string, int64_t> &placed) {
  const SplitRun *r = &run;
  const SplitPart *part = &run.parts.at(j);
  const SplitVariant *var = &run.variants.at(part->variant);
  const Hw *h = &hw;
  auto *consts = &placed;
  DramCtx d;
  d.addrOf = [r, part, var, dramAddr](ValueId v) -> int64_t {
    int64_t offset = 0; // a view's bytes lie inside the value it views
    for (auto it = var->views.find(v); it != var->views.end(); it = var->views.find(v)) {
      offset += it->second.second;
      v = it->second.first;
    }
    if (auto it = var->rp.l1Addr.find(r->rootOf(v)); it != var->rp.l1Addr.end())
      return it->second + offset; // the same L1 bytes for every part of the variant
    auto at = part->dram.find(v);
    NPUC_ASSERT(at != part->dram.end(), fmt::format("split run: part [{}, {}) has no DRAM bytes "
                                                    "for value {}",
                                                    part->lo, part->hi, v));
    return dramAddr(at->second.first) + at->second.second + offset;
  };
  // Constants are read-only: the first lowering of some bytes places them, the later ones (other
  // parts, other variants lowering the same weights the same way) find them by their bytes.
  d.addConst = [consts, addConst](const ConstBytes &c) -> int64_t {
    const std::vector<uint8_t> &bytes = c.bytes();
    std::string key(bytes.begin(), bytes.end());
    if (auto it = consts->find(key); it != consts->end())
      return it->second;
    return (*consts)[std::move(key)] = addConst(c);
  };
  d.levelOf = [r, var, h](ValueId v) {
    return var->rp.l1Addr.count(r->rootIn(*var, v)) ? h->l1 : h->dram;
  };
  return d;
}

} // namespace npuc::npu
