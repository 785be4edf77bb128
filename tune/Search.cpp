// Search.cpp - sampling, evolution and model-ranked proposals over one task's space (Search.h).
#include "tune/Search.h"

#include "support/Error.h"

#include <algorithm>
#include <numeric>

namespace npuc::tune {

namespace {

// A sketch whose random points are mostly illegal, or whose random points are all measured
// already, draws from a fixed-seed sample of at most this many legal points (all of them when
// there are fewer: its proposals then end exactly when every legal point is measured). Only
// tiny spaces are enumerated at once: enumerating checks every point of the decisions' product,
// and the loop-nest kernel's checks cost milliseconds each.
constexpr size_t kEnumerateLimit = 4096;
constexpr double kEnumerateAtOnce = 64; // a product this small is enumerated outright
// Enumerating checks every point of the product (the tensor-unit space: each check rebuilds its
// decision lists), which took minutes on a ResNet-50 layer's space of ~10^6 points; larger
// spaces than this stay with random draws. AlexNet conv1's tensor-unit space on npu-32x32
// (85,536 points, 0.14% of random draws legal) enumerates in about a second.
constexpr double kEnumerateAtMost = 100000;
constexpr size_t kSparseTries = 32; // random points drawn before judging a space sparse
// A point whose analytic estimate is this many times the task's best measured cycles is not
// worth a measurement: the loop-nest kernel's points of a ResNet conv estimate 50x its
// tensor-unit default, and one of them takes minutes to compile and bank-place (millions of
// vector instructions). The estimates are off by tens of percent, not by this factor.
constexpr double kPruneFactor = 4;
constexpr int kRepairs = 8; // second decisions a mutation tries when its change alone is illegal
// Random draws per pool point before a round gives up (each whyIllegal of the tensor-unit space
// costs tens of microseconds; a large sparse space accepts a few percent of its draws).
constexpr size_t kDrawsPerPoint = 32;

} // namespace

struct TaskSearch::Sketch {
  npu::GroupPlan plan; // the space refers to it
  std::unique_ptr<npu::KernelSpace> space;
  std::vector<npu::Decision> decisions;
  std::unique_ptr<Featurizer> features; // refers to *space
  size_t tries = 0, legal = 0;          // random points drawn and found legal
  bool enumerated = false;              // draws from `points` instead of at random
  std::vector<npu::Schedule> points;
  bool dead = false;  // nothing left to draw
  double product = 0; // points in the decisions' product
  /// whyIllegal's verdicts so far, by Schedule::str(): the loop-nest kernel's checks cost
  /// milliseconds, and random draws and evolution meet the same points again.
  std::map<std::string, bool> legalMemo;
  bool isLegal(const npu::Schedule &s) {
    auto [it, fresh] = legalMemo.try_emplace(s.str(), false);
    if (fresh)
      it->second = !space->whyIllegal(s);
    return it->second;
  }
  /// Draws from the space's legal points from now on (enumerate: all of them, or a fixed-seed
  /// sample of kEnumerateLimit).
  void enumerateOnce();
};

void TaskSearch::Sketch::enumerateOnce() {
  enumerated = true;
  points = space->enumerate(kEnumerateLimit);
  for (const npu::Schedule &s : points)
    legalMemo[s.str()] = true;
}

TaskSearch::TaskSearch(const driver::CompiledModel &m, const npu::Hw &hw, const Task &t,
                       std::vector<float> taskFeatures, uint64_t seed, SearchOptions o)
    : taskFeatures_(std::move(taskFeatures)), o_(o),
      rng_(seed ^ t.key.group ^ (t.key.target << 1)) {
  const graph::FusedGroup &grp = m.graph.groups.at(static_cast<size_t>(t.group));
  const npu::GroupPlan plan = npu::planGroup(m.graph, grp, hw);
  for (npu::Strategy st : t.sketches) {
    auto k = std::make_unique<Sketch>();
    k->plan = planFor(st, plan, grp);
    k->space = npu::makeSpace(st, k->plan, m.graph, measuringContext(hw));
    if (!k->space)
      continue; // a family without a space: its default is its only point
    k->decisions = k->space->decisions();
    k->features = std::make_unique<Featurizer>(*k->space, taskFeatures_);
    k->product = 1;
    for (const npu::Decision &d : k->decisions)
      k->product *= static_cast<double>(d.values.size());
    if (k->product <= kEnumerateAtOnce)
      k->enumerateOnce();
    k->dead = k->product == 0 || (k->enumerated && k->points.empty());
    sketches_.push_back(std::move(k));
  }
}

TaskSearch::~TaskSearch() = default;

TaskSearch::Sketch *TaskSearch::sketchOf(npu::Strategy s) const {
  for (const std::unique_ptr<Sketch> &k : sketches_)
    if (k->space->strategy() == s)
      return k.get();
  return nullptr;
}

void TaskSearch::observe(const npu::Schedule &s, std::optional<int64_t> cycles) {
  if (!seen_.insert(s.str()).second)
    return;
  if (!cycles)
    return;
  // Stable: among equal cycles the earlier measurement stays first.
  auto at = std::upper_bound(good_.begin(), good_.end(), *cycles,
                             [](int64_t c, const auto &e) { return c < e.first; });
  good_.insert(at, {*cycles, s});
  if (!best_ || *cycles < *best_) {
    best_ = cycles;
    bestSchedule_ = s;
  }
}

std::optional<npu::Schedule> TaskSearch::randomPoint(Sketch &k) {
  if (k.dead)
    return std::nullopt;
  if (k.enumerated) { // a random point of the list not measured yet
    std::vector<size_t> open;
    for (size_t i = 0; i < k.points.size(); ++i)
      if (!measured(k.points[i]))
        open.push_back(i);
    if (open.empty()) {
      k.dead = true;
      return std::nullopt;
    }
    return k.points[open[pick(open.size())]];
  }
  npu::Schedule s;
  s.strategy = k.space->strategy();
  for (const npu::Decision &d : k.decisions)
    s.set(d.name, d.values[pick(d.values.size())]);
  ++k.tries;
  if (!k.isLegal(s)) {
    if (k.tries >= kSparseTries && k.legal * 10 < k.tries &&
        k.product <= kEnumerateAtMost) // sparse: draw from a sample
      k.enumerateOnce();
    return std::nullopt;
  }
  ++k.legal;
  return s;
}

std::optional<npu::Schedule> TaskSearch::mutate(const npu::Schedule &parent) {
  Sketch *k = sketchOf(parent.strategy);
  if (!k)
    return std::nullopt;
  std::vector<size_t> open; // decisions with a choice
  for (size_t i = 0; i < k->decisions.size(); ++i)
    if (k->decisions[i].values.size() > 1)
      open.push_back(i);
  if (open.empty())
    return std::nullopt;
  const npu::Decision &d = k->decisions[open[pick(open.size())]];
  const auto cur = std::find(d.values.begin(), d.values.end(), parent.get(d.name));
  const size_t at = static_cast<size_t>(cur - d.values.begin());
  size_t to = pick(d.values.size());
  if (cur != d.values.end() && rng_() % 2 == 0) // a neighbouring value
    to = (rng_() % 2 == 0 && at > 0) || at + 1 == d.values.size() ? at - 1 : at + 1;
  npu::Schedule s = parent;
  s.set(d.name, d.values[to]);
  // Decisions are coupled (the tensor unit's k-chunk depends on its channel block and folded
  // kernel rows): when the one change is illegal, a few repairs of one more decision each.
  for (int repair = 0; !k->isLegal(s) && repair < kRepairs; ++repair) {
    s = parent;
    s.set(d.name, d.values[to]);
    const npu::Decision &e = k->decisions[open[pick(open.size())]];
    s.set(e.name, e.values[pick(e.values.size())]);
  }
  if (!k->isLegal(s))
    return std::nullopt;
  return s;
}

std::optional<npu::Schedule> TaskSearch::crossover(const npu::Schedule &a, const npu::Schedule &b) {
  Sketch *k = sketchOf(a.strategy);
  if (!k || b.strategy != a.strategy)
    return std::nullopt;
  npu::Schedule s = a;
  for (const npu::Decision &d : k->decisions)
    if (rng_() % 2 == 0 && b.has(d.name))
      s.set(d.name, b.get(d.name));
  if (!k->isLegal(s))
    return std::nullopt;
  return s;
}

bool TaskSearch::hopeless(const npu::Schedule &s) const {
  return best_ && sketchOf(s.strategy)->space->cost(s) > kPruneFactor * double(*best_);
}

std::vector<npu::Schedule> TaskSearch::candidatePool(size_t size) {
  std::vector<npu::Schedule> pool;
  std::set<std::string> inPool;
  auto add = [&](std::optional<npu::Schedule> s) {
    if (s && !measured(*s) && inPool.insert(s->str()).second && !hopeless(*s))
      pool.push_back(std::move(*s));
  };
  // Half from evolution of the best measured points, when there are any.
  const size_t parents = std::min(good_.size(), o_.population);
  const size_t evolved = parents == 0 ? 0 : size / 2;
  for (size_t tries = 0; pool.size() < evolved && tries < evolved * 8; ++tries) {
    const npu::Schedule &a = good_[pick(parents)].second;
    const npu::Schedule &b = good_[pick(parents)].second;
    add(rng_() % 2 == 0 && parents > 1 ? crossover(a, b) : mutate(a));
  }
  // The rest at random, from the sketches that have points left.
  for (int round = 0; round < 2 && pool.size() < size; ++round) {
    for (size_t tries = 0; pool.size() < size && tries < size * kDrawsPerPoint; ++tries) {
      std::vector<Sketch *> live;
      for (const std::unique_ptr<Sketch> &k : sketches_)
        if (!k->dead)
          live.push_back(k.get());
      if (live.empty())
        break;
      add(randomPoint(*live[pick(live.size())]));
    }
    // Nothing new at random: the sketches' points are mostly measured. Enumerate them, so that
    // the search ends exactly when no legal point is left.
    for (const std::unique_ptr<Sketch> &k : sketches_)
      if (!k->enumerated && !k->dead && pool.empty() && k->product <= kEnumerateAtMost)
        k->enumerateOnce();
  }
  return pool;
}

bool TaskSearch::exhausted() const {
  for (const std::unique_ptr<Sketch> &k : sketches_)
    if (!k->dead)
      return false;
  return true;
}

std::optional<std::vector<float>> TaskSearch::features(const npu::Schedule &s) const {
  Sketch *k = sketchOf(s.strategy);
  if (!k || !k->isLegal(s))
    return std::nullopt;
  return (*k->features)(s);
}

std::vector<npu::Schedule> TaskSearch::propose(size_t n, const CostModel &model) {
  std::vector<npu::Schedule> pool = candidatePool(n * o_.poolPerProposal);
  if (pool.size() <= n)
    return pool;
  std::vector<std::vector<float>> feats;
  for (const npu::Schedule &s : pool) {
    std::optional<std::vector<float>> f = features(s);
    NPUC_ASSERT(f, "the pool holds legal points of the sketches");
    feats.push_back(std::move(*f));
  }
  const std::vector<double> score = model.predict(feats);
  std::vector<size_t> order(pool.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return score[a] < score[b]; });
  const size_t explore = static_cast<size_t>(static_cast<double>(n) * o_.epsilon + 0.5);
  std::vector<npu::Schedule> out;
  for (size_t i = 0; i < n - explore; ++i)
    out.push_back(pool[order[i]]);
  std::vector<size_t> rest(order.begin() + static_cast<long>(n - explore), order.end());
  for (size_t i = 0; i < explore && !rest.empty(); ++i) {
    const size_t j = pick(rest.size());
    out.push_back(pool[rest[j]]);
    rest.erase(rest.begin() + static_cast<long>(j));
  }
  return out;
}

} // namespace npuc::tune
