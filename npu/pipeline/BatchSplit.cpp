// BatchSplit.cpp - which runs of groups execute sub-batch by sub-batch, and their emission
// (BatchSplit.h).
#include "npu/pipeline/BatchSplit.h"

#include "graph/Passes.h"
#include "graph/ShapeInference.h"
#include "support/Error.h"

#include <algorithm>
#include <fmt/format.h>
#include <unordered_map>

namespace npuc::npu {

namespace {

using graph::ValueId;

// Ops that never mix images when their operands are laid out per image (the checks below see
// to the operands and axes). Ops not listed are taken as mixing (conservative).
bool computesEachImageAlone(graph::OpKind k) {
  using graph::OpKind;
  switch (k) {
  case OpKind::Conv:
  case OpKind::MaxPool:
  case OpKind::AveragePool:
  case OpKind::GlobalAveragePool:
  case OpKind::GlobalMaxPool:
  case OpKind::Relu:
  case OpKind::Clip:
  case OpKind::Sigmoid:
  case OpKind::Tanh:
  case OpKind::LeakyRelu:
  case OpKind::HardSigmoid:
  case OpKind::HardSwish:
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::Mul:
  case OpKind::Div:
  case OpKind::Max:
  case OpKind::Min:
  case OpKind::Exp:
  case OpKind::Identity:
  case OpKind::Dropout:
  case OpKind::BatchNormalization:
  case OpKind::Gemm:
  case OpKind::MatMul:
  case OpKind::Concat:
  case OpKind::Softmax:
  case OpKind::Flatten:
  case OpKind::Reshape:
  case OpKind::Transpose:
  case OpKind::Squeeze:
  case OpKind::Unsqueeze:
    return true;
  default:
    return false;
  }
}

// Whether node `n` computes each image from the same image alone along axis 0 of batch `N`:
// every activation it reads or writes has the batch as its leading dim, every constant it
// reads is the same for all images (no leading dim N), and the op does not mix along axis 0.
// Ops not listed are taken as mixing (conservative: the group then keeps the whole batch).
std::string perImageReason(const graph::Graph &g, const graph::Node &n, int64_t N) {
  if (!computesEachImageAlone(n.kind))
    return fmt::format("{} '{}' is not known to compute each image alone", n.kind, n.name);
  const size_t rank = g.value(n.outputs.at(0)).shape.size();
  for (ValueId v : n.outputs)
    if (g.value(v).shape.empty() || g.value(v).shape[0] != N)
      return fmt::format("{} '{}': output '{}' has no leading batch dim {}", n.kind, n.name,
                         g.value(v).name, N);
  int activations = 0;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const ValueId v = n.inputs[i];
    if (v == graph::kNoValue)
      continue;
    const graph::Value &x = g.value(v);
    if (x.isConstant()) {
      // Weights, parameters and shape operands (Reshape's, rewritten) are not per image; an
      // elementwise, Concat or batched MatMul operand must be the same for every image:
      // broadcast along axis 0 (lower rank, or a leading 1).
      const bool mapped = graph::isElementwiseOp(n.kind) || n.kind == graph::OpKind::Concat ||
                          n.kind == graph::OpKind::PRelu || n.kind == graph::OpKind::MatMul;
      if (mapped && x.shape.size() >= rank && !x.shape.empty() && x.shape[0] != 1)
        return fmt::format("{} '{}': constant '{}' differs per image", n.kind, n.name, x.name);
      continue;
    }
    ++activations;
    if (x.shape.size() != rank &&
        !(n.kind == graph::OpKind::Flatten || n.kind == graph::OpKind::Reshape ||
          n.kind == graph::OpKind::Squeeze || n.kind == graph::OpKind::Unsqueeze))
      return fmt::format("{} '{}': '{}' broadcasts along the batch", n.kind, n.name, x.name);
    if (x.shape.empty() || x.shape[0] != N)
      return fmt::format("{} '{}': input '{}' has no leading batch dim {}", n.kind, n.name, x.name,
                         N);
  }
  auto axis = [&](int64_t a) { return a < 0 ? a + int64_t(rank) : a; };
  if ((n.kind == graph::OpKind::Concat && axis(n.attrInt("axis", 0)) == 0) ||
      (n.kind == graph::OpKind::Softmax && axis(n.attrInt("axis", -1)) == 0) ||
      (n.kind == graph::OpKind::Flatten && n.attrInt("axis", 1) == 0))
    return fmt::format("{} '{}' works along the batch axis", n.kind, n.name);
  if (n.kind == graph::OpKind::Transpose) {
    const std::vector<int64_t> perm = n.attrInts("perm");
    if (perm.empty() || perm[0] != 0)
      return fmt::format("Transpose '{}' moves the batch axis", n.name);
  }
  if (n.kind == graph::OpKind::Squeeze || n.kind == graph::OpKind::Unsqueeze)
    for (int64_t a : n.attrInts("axes"))
      if (a == 0)
        return fmt::format("{} '{}' works on axis 0", n.kind, n.name);
  // A MatMul of two activations is per image only as a batched product (rank >= 3 each); a
  // Gemm reads rows of A per image unless A is transposed.
  if (n.kind == graph::OpKind::MatMul && activations > 1 && rank < 3)
    return fmt::format("MatMul '{}' multiplies across the batch", n.name);
  if (n.kind == graph::OpKind::Gemm && (n.attrInt("transA", 0) != 0 || activations > 1))
    return fmt::format("Gemm '{}' mixes rows across the batch", n.name);
  return "";
}

// The cost model's figures for one run of steps at one sub-batch size b: the DRAM bytes its
// intermediates kept in L1 save, the bytes its kernels move more at b images, and the net gain.
struct Gain {
  int64_t gain = 0, b = 0, saved = 0, extra = 0;
};

// One planBatchSplit: its input, and what each step of the planning leaves for the next. The
// steps, in order: which groups compute each image alone (markPerImageSteps), the cost model over
// every block of such groups and sub-batch size (costBlock, costSubBatch), the disjoint runs of
// largest gain (chooseRuns), and each chosen run planned for real and kept only when its
// simulation agrees (planRun, tryRun).
class SplitPlanner {
public:
  SplitPlanner(const BatchSplitInput &in, const Hw &hw, int64_t batch)
      : in_(in), hw_(hw), g_(*in.g), steps_(in.groupIds.size()), N_(batch),
        cap_(hw.capacity(hw.l1)), eb_(hw.actBytes()), perImage_(steps_, true),
        best_(steps_ + 1, std::vector<Gain>(steps_ + 1)), whole_(steps_) {
    for (size_t i = 0; i < steps_; ++i)
      stepOf_[in.groupIds[i]] = i;
  }

  SplitPlan plan() {
    markPerImageSteps();
    for (size_t s0 = 0; s0 < steps_;) {
      if (!perImage_[s0]) {
        ++s0;
        continue;
      }
      size_t e0 = s0;
      while (e0 < steps_ && perImage_[e0])
        ++e0;
      if (e0 - s0 >= 2) // else no intermediate to keep
        costBlock(s0, e0);
      s0 = e0;
    }
    const std::vector<std::pair<size_t, size_t>> chosen = chooseRuns();
    if (chosen.empty())
      out_.notes.push_back(fmt::format(
          "batch {}: no run of groups gains: at no sub-batch size do the intermediates kept in L1 "
          "save more DRAM traffic than the run's kernels move more at that size (weights "
          "reloaded per sub-batch)",
          N_));
    for (const auto &[s, e] : chosen)
      planRun(s, e);
    return std::move(out_);
  }

private:
  const graph::FusedGroup &group(size_t step) const {
    return g_.groups.at(size_t(in_.groupIds[step]));
  }

  // Which steps compute each image alone (views included: they alias, per image too). A group
  // touching a tensor stored in a chosen layout keeps the whole batch (BatchSplitInput).
  void markPerImageSteps() {
    for (size_t i = 0; i < steps_; ++i)
      for (graph::NodeId n : group(i).nodes)
        if (std::string why = perImageReason(g_, g_.node(n), N_); perImage_[i] && !why.empty()) {
          perImage_[i] = false;
          out_.notes.push_back(
              fmt::format("group '{}' keeps the whole batch: {}", group(i).name, why));
        }
    for (size_t i = 0; i < steps_; ++i) {
      const graph::FusedGroup &grp = group(i);
      for (const std::vector<ValueId> *vs : {&grp.inputs, &grp.outputs})
        for (ValueId v : *vs)
          if (perImage_[i] &&
              (in_.chosenLayout.count(v) || in_.chosenLayout.count(in_.rootOf(v)))) {
            perImage_[i] = false;
            out_.notes.push_back(fmt::format("group '{}' keeps the whole batch: '{}' is stored in "
                                             "a layout chosen to cancel layout ops",
                                             grp.name, g_.value(v).name));
          }
    }
  }

  // Each group of `ids` simulated alone in the residency planner's trials (timing only).
  std::vector<StepCost> simulate(const graph::Graph &gg, const std::vector<int> &ids,
                                 const std::vector<GroupPlan> &plans) const {
    ResidencyInput ri;
    ri.g = &gg;
    ri.groupIds = ids;
    ri.plans = plans;
    ri.rootOf = in_.rootOf;
    ri.ko = in_.ko;
    ri.crossGroupPrefetch = in_.crossGroupPrefetch;
    ri.jobs = in_.jobs;
    return simulateSteps(ri, hw_);
  }

  // The cost model over a maximal block [s0, e0) of per-image steps: each step simulated alone at
  // the whole batch (whole_), then every sub-batch size b dividing N. An intermediate the
  // residency analysis keeps at b images (over the block) saves its whole-batch traffic, unless
  // it is kept at N images as well; it counts for a run that holds its producer and every
  // consumer.
  void costBlock(size_t s0, size_t e0) {
    const std::vector<int> block(in_.groupIds.begin() + long(s0), in_.groupIds.begin() + long(e0));
    const std::vector<StepCost> w = simulate(
        g_, block,
        std::vector<GroupPlan>(in_.plans.begin() + long(s0), in_.plans.begin() + long(e0)));
    std::copy(w.begin(), w.end(), whole_.begin() + long(s0));
    std::map<ValueId, int64_t> atN; // kept anyway at the whole batch
    for (const graph::ResidentTensor &r : graph::findResidentTensors(g_, block, cap_, eb_))
      atN[r.value] = r.dramBytesSaved;
    for (int64_t b = 1; b < N_; ++b)
      if (N_ % b == 0)
        costSubBatch(s0, e0, block, b, atN);
  }

  // Against the savings at b images, each step's extra traffic: its kernel simulated alone (whole
  // of L1, no residency) at b images times N/b, less at N images. That is mostly weights loaded
  // once per sub-batch (a kernel that puts the batch into M and keeps its weights on chip);
  // kernels that loop over the images with their weights reloaded per image anyway (the convs)
  // pay nothing, and smaller tiles can even re-read less (negative). Records, per run [s, e) of
  // the block, the gain = savings - extra traffic when positive (options_) and the best (best_).
  void costSubBatch(size_t s0, size_t e0, const std::vector<int> &block, int64_t b,
                    const std::map<ValueId, int64_t> &atN) {
    std::unique_ptr<graph::Graph> gb = withSubBatch(g_, block, N_, b);
    struct Saving {
      size_t from, to; // producer step, last consumer step
      int64_t bytes;
    };
    std::vector<Saving> sv;
    for (const graph::ResidentTensor &r : graph::findResidentTensors(*gb, block, cap_, eb_)) {
      const int64_t all = r.dramBytesSaved * (N_ / b);
      const int64_t extra = all - (atN.count(r.value) ? atN.at(r.value) : 0);
      if (extra > 0)
        sv.push_back({stepOf_.at(r.producer), stepOf_.at(r.consumers.back()), extra});
    }
    if (sv.empty())
      return; // nothing to gain at this size: spare the simulations
    std::vector<GroupPlan> plans;
    bool planned = true;
    for (size_t i = s0; i < e0; ++i) {
      plans.push_back(planGroup(*gb, gb->groups.at(size_t(in_.groupIds[i])), hw_));
      planned = planned && plans.back().reject.empty() && plans.back().kind == in_.plans[i].kind;
      plans.back().quant = in_.plans[i].quant;
    }
    if (!planned)
      return;
    const std::vector<StepCost> sub = simulate(*gb, block, plans);
    std::vector<int64_t> extra(steps_, 0);
    const int64_t never = INT64_MAX / int64_t(4 * steps_); // a step that does not emit
    for (size_t i = s0; i < e0; ++i) {
      const StepCost &x = sub[i - s0];
      extra[i] = x.emitted && whole_[i].emitted ? N_ / b * x.dram - whole_[i].dram : never;
    }
    for (size_t s = s0; s < e0; ++s)
      for (size_t e = s + 2; e <= e0; ++e) {
        int64_t saved = 0, more = 0;
        for (const Saving &x : sv)
          if (s <= x.from && x.to < e)
            saved += x.bytes;
        for (size_t i = s; i < e; ++i)
          more += extra[i];
        if (saved - more > 0)
          options_[{s, e}].push_back({saved - more, b, saved, more});
        if (saved - more > best_[s][e].gain)
          best_[s][e] = {saved - more, b, saved, more};
      }
  }

  // Disjoint runs of largest total gain, in step order: dp[e] = the best over steps [0, e).
  std::vector<std::pair<size_t, size_t>> chooseRuns() const {
    std::vector<int64_t> dp(steps_ + 1, 0);
    std::vector<size_t> from(steps_ + 1, steps_ + 1); // start of the run ending at e (or none)
    for (size_t e = 1; e <= steps_; ++e) {
      dp[e] = dp[e - 1];
      for (size_t s = 0; s + 2 <= e; ++s)
        if (best_[s][e].gain > 0 && dp[s] + best_[s][e].gain > dp[e]) {
          dp[e] = dp[s] + best_[s][e].gain;
          from[e] = s;
        }
    }
    std::vector<std::pair<size_t, size_t>> chosen;
    for (size_t e = steps_; e > 0;) {
      if (from[e] > steps_) {
        --e;
        continue;
      }
      chosen.emplace_back(from[e], e);
      e = from[e];
    }
    std::reverse(chosen.begin(), chosen.end());
    return chosen;
  }

  // A chosen run, planned for real at its sub-batch size; when the simulation turns it down, at
  // the next sub-batch size the model finds gaining (larger sub-batches: fewer kernel restarts,
  // fewer tensors that fit).
  void planRun(size_t s, size_t e) {
    std::vector<Gain> tries = options_.at({s, e});
    std::stable_sort(tries.begin(), tries.end(),
                     [](const Gain &x, const Gain &y) { return x.gain > y.gain; });
    for (const Gain &c : tries)
      if (tryRun(s, e, c))
        return;
  }

  // Plans run [s, e) at c.b images and keeps it (true) when the simulation finds it moves fewer
  // DRAM bytes and is not slower; otherwise a note says why (false).
  bool tryRun(size_t s, size_t e, const Gain &c) {
    SplitRun run;
    run.kind = SplitKind::Batch;
    run.first = s;
    run.end = e;
    run.batch = N_;
    run.subBatch = c.b;
    run.rootOf = in_.rootOf;
    run.crossGroupPrefetch = in_.crossGroupPrefetch;
    const std::vector<int> ids(in_.groupIds.begin() + long(s), in_.groupIds.begin() + long(e));
    SplitVariant &v = run.variants.emplace_back();
    v.g = withSubBatch(g_, ids, N_, c.b);
    const std::string names = fmt::format("groups '{}' .. '{}'", group(s).name, group(e - 1).name);
    const std::vector<GroupPlan> whole(in_.plans.begin() + long(s), in_.plans.begin() + long(e));
    if (std::string reject = planVariantKernels(v, ids, whole, hw_, [](ValueId x) { return x; });
        !reject.empty()) {
      out_.notes.push_back(fmt::format("{} not split: {}", names, reject));
      return false;
    }
    ResidencyInput base;
    base.g = &g_;
    base.rootOf = in_.rootOf;
    base.ko = in_.ko;
    base.crossGroupPrefetch = in_.crossGroupPrefetch;
    planVariantResidency(v, ids, base, in_.pinned, hw_);
    if (std::string why = judge(run, c); !why.empty()) {
      out_.notes.push_back(fmt::format("{} not split ({}): {}", names, why, run.entry.reason));
      return false;
    }
    // Image i of a tensor in the NPU layout (NHWC or row-major) starts at i x its bytes per
    // image: sub-batch j's images start j x subBatch images in.
    for (int64_t j = 0; j < N_ / c.b; ++j) {
      SplitPart &part = run.parts.emplace_back();
      part.lo = j * c.b;
      part.hi = part.lo + c.b;
      part.dram = groupValuesAt(*v.g, ids, [&](ValueId x) {
        return part.lo * numElements(v.g->value(x).shape) / c.b * eb_;
      });
    }
    for (ValueId root : run.residentRoots())
      out_.residentRoots.insert(root);
    out_.runs.push_back(std::move(run));
    return true;
  }

  // Fills the run's report and returns "" when it is worth splitting, else why not. Both
  // schedules simulated, each group alone (timing only, as residency's trials): the whole batch
  // with the whole of L1 (less what its residency would keep anyway), against every sub-batch in
  // its window with the run's residents.
  std::string judge(SplitRun &run, const Gain &c) const {
    const std::vector<int> ids(in_.groupIds.begin() + long(run.first),
                               in_.groupIds.begin() + long(run.end));
    const int64_t subs = N_ / c.b;
    int64_t kept = 0;
    SplitVariant &v = run.variants.at(0);
    for (ResidencyEntry &re : v.rp.entries)
      if (re.dropped.empty()) {
        re.dramBytesSaved *= subs; // each sub-batch's copy of it stays on chip
        kept += re.dramBytesSaved;
      }
    // What the whole batch keeps in L1 anyway over the same groups (the model's estimate).
    int64_t anyway = 0;
    for (const graph::ResidentTensor &r : graph::findResidentTensors(g_, ids, cap_, eb_))
      anyway += r.dramBytesSaved;
    int64_t wholeDram = -anyway, wholeCycles = 0, splitDram = 0, splitCycles = 0;
    bool emitted = true;
    for (size_t i = run.first; i < run.end; ++i) {
      const StepCost &x = whole_[i];
      wholeDram += x.dram;
      wholeCycles += x.cycles;
      emitted = emitted && x.emitted;
    }
    for (const StepCost &x : v.rp.steps) {
      splitDram += subs * x.dram;
      splitCycles += subs * x.cycles;
      emitted = emitted && x.emitted;
    }
    run.entry.groups = ids;
    run.entry.batch = N_;
    run.entry.subBatch = c.b;
    run.entry.dramBytesSaved = kept;
    run.entry.extraDramBytes = c.extra;
    run.entry.reason = fmt::format(
        "{} image(s) per sub-batch, {} sub-batches: intermediates kept in L1 save {} DRAM bytes "
        "(cost model: {:+} net of {:+} bytes the kernels move more per sub-batch); simulated "
        "alone, the whole batch moves {} DRAM bytes in {} cycles, the sub-batches {} in {}",
        c.b, subs, kept, c.gain, c.extra, wholeDram, wholeCycles, splitDram, splitCycles);
    if (!emitted)
      return "a kernel does not emit";
    if (splitDram >= wholeDram)
      return "no DRAM traffic saved";
    if (splitCycles > wholeCycles && !in_.evenIfSlower)
      return "slower";
    return "";
  }

  const BatchSplitInput &in_;
  const Hw &hw_;
  const graph::Graph &g_;
  const size_t steps_;
  const int64_t N_;
  const int64_t cap_, eb_;              // L1's capacity, an activation element's bytes
  std::map<int, size_t> stepOf_;        // group id -> step
  std::vector<bool> perImage_;          // markPerImageSteps
  std::vector<std::vector<Gain>> best_; // [s][e]: the best gain of run [s, e)
  std::vector<StepCost> whole_;         // each step alone at the whole batch
  std::map<std::pair<size_t, size_t>, std::vector<Gain>> options_; // every gaining b per run
  SplitPlan out_;
};

// The batch: the leading dim of the first group's first activation input (1 when there is
// nothing to split: fewer than two groups).
int64_t segmentBatch(const BatchSplitInput &in) {
  const graph::Graph &g = *in.g;
  if (in.groupIds.size() < 2)
    return 1;
  const graph::FusedGroup &g0 = g.groups.at(size_t(in.groupIds[0]));
  if (g0.inputs.empty() || g.value(g0.inputs[0]).shape.empty())
    return 1;
  return g.value(g0.inputs[0]).shape[0];
}

} // namespace

SplitPlan planBatchSplit(const BatchSplitInput &in, const Hw &hw) {
  const int64_t N = segmentBatch(in);
  if (N <= 1)
    return {}; // batch 1: nothing to split (and no cost for batch-1 compiles)
  return SplitPlanner(in, hw, N).plan();
}

} // namespace npuc::npu
