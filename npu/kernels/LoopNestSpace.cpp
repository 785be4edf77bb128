// LoopNestSpace.cpp - the schedule space of the loop-nest kernel (LowerLoopNest.cpp,
// LoopNestTile.cpp): the group's reference nest through emit-npu, its tensors staged whole or its
// outer loop in chunks.
//
// Decisions: chunked (0: whole tensors in L1; 1: chunks), depth (which loop is chunked, 1 = the
// nests' first real loop; 0 with whole tensors), rows (that loop's rows per chunk: the divisors
// of its extent and the extent halved repeatedly, and 1; 0 with whole tensors) and buffers (the
// copies of the per-chunk staging buffers; 1 with whole tensors). Whether a point can run is
// known before compiling the nest only in part: whyIllegal checks what the staged and
// intermediate buffers need of L1, the staging DMAs against the token queue and (chunks) that
// every region is a box or an interval and no two chunks write the same element; what
// compilation allocates beyond that, and whether the instructions encode, is lower()'s Reject.
// defaultPoint() is the search's choice: it lowers the group once in a scratch builder.
#include "npu/kernels/LoopNest.h"
#include "npu/kernels/KernelSpaces.h"
#include "npu/kernels/SpaceSupport.h"
#include "npu/kernels/Vector.h"

#include <algorithm>
#include <fmt/format.h>
#include <set>

namespace npuc::npu {

using loopnest::Chunking;
using loopnest::LoopNestPoint;

namespace {

class LoopNestSpace final : public KernelSpace {
public:
  LoopNestSpace(const GroupPlan &p, const graph::Graph &g, const SpaceContext &ctx)
      : g_(g), ctx_(ctx), grp_(p.group), prep_(std::make_unique<loopnest::Prepared>()) {
    NPUC_ASSERT(grp_, "planGroup records the group of a loop-nest plan");
    if (std::string why = loopnest::prepare(g, *grp_, *ctx.hw, *prep_); !why.empty()) {
      fixed_ = kernelReject(RejectKind::Unsupported, "loop-nest kernel: " + why);
      return;
    }
    chunks_ = std::make_unique<loopnest::ChunkedPath>(g, *grp_, *ctx.hw, *prep_);
    l1Free_ = Builder(*ctx.hw, ctx.fromTop, ctx.window).freeBytes(ctx.hw->l1);
  }

  Strategy strategy() const override { return Strategy::LoopNest; }

  std::vector<Decision> decisions() const override {
    std::vector<int64_t> depths = {0}, rows = {0};
    std::set<int64_t, std::greater<>> all;
    for (size_t d = 1; chunks_ && d <= chunks_->depths(); ++d) {
      depths.push_back(static_cast<int64_t>(d));
      for (int64_t T : chunks_->rowsAt(d))
        all.insert(T);
    }
    rows.insert(rows.end(), all.begin(), all.end());
    std::vector<int64_t> buffers = bufferValues(ctx_);
    return {{kBuffers, buffers}, {"chunked", {0, 1}}, {"depth", depths}, {"rows", rows}};
  }

  std::optional<Reject> whyIllegal(const Schedule &s) const override {
    if (fixed_)
      return fixed_;
    if (std::optional<Reject> r = checkShape(s))
      return r;
    const LoopNestPoint x = point(s);
    const Hw &hw = *ctx_.hw;
    auto bad = [&](RejectKind kind, const std::string &why) {
      return kernelReject(kind, fmt::format("loop-nest: {}: {}", s.str(), why));
    };
    if (!x.chunked) {
      if (s.get("depth") != 0 || s.get("rows") != 0 || s.get(kBuffers) != 1)
        return bad(RejectKind::Unsupported, "whole tensors take depth 0, rows 0 and 1 buffer");
      if (const int64_t least = loopnest::wholeLeastBytes(*prep_, hw); least > l1Free_)
        return bad(RejectKind::Capacity,
                   fmt::format("whole tensors need at least {} bytes of L1, the group has {}",
                               least, l1Free_));
      if (loopnest::wholeStagingDmas(g_, *prep_, hw, dryDram(ctx_)) > hw.t->tokenQueueDepth)
        return bad(RejectKind::Capacity, "whole tensors' staging DMAs exceed the token queue");
      return std::nullopt;
    }
    const std::vector<int64_t> rows = chunks_->rowsAt(x.chunking.depth);
    if (std::find(rows.begin(), rows.end(), x.chunking.T) == rows.end())
      return bad(RejectKind::Unsupported,
                 fmt::format("rows {} is not a chunk size at depth {} (those: [{}])", x.chunking.T,
                             x.chunking.depth, fmt::join(rows, ", ")));
    if (std::string why = chunks_->check(x.chunking, l1Free_, dryDram(ctx_)); !why.empty())
      return bad(why.rfind("cannot tile", 0) == 0 ? RejectKind::Unsupported : RejectKind::Capacity,
                 why);
    return std::nullopt;
  }

  Expected<Schedule, Reject> defaultPoint() const override {
    if (fixed_)
      return unexpected(*fixed_);
    // The search itself, in a scratch builder: whether whole tensors fit is only known once the
    // nest is compiled (what emit-npu allocates), and which chunking lowers likewise.
    Builder b(*ctx_.hw, ctx_.fromTop, ctx_.window);
    KernelOptions o;
    o.doubleBuffer = ctx_.doubleBuffer;
    LoopNestPoint chosen;
    Kernel k = loopnest::lowerLoopNestPoint(g_, *grp_, b, dryDram(ctx_), o, std::nullopt, &chosen);
    if (k.reject)
      return unexpected(*k.reject);
    return loopnest::loopNestSchedule(chosen);
  }

  double cost(const Schedule &s) const override {
    const LoopNestPoint x = point(s);
    if (x.chunked)
      return chunks_->cost(x.chunking, l1Free_, dryDram(ctx_));
    int64_t in = 0, out = 0;
    for (const loopnest::Staged &st : prep_->staged) {
      const int64_t n = numElements(g_.value(st.value).shape);
      (st.role == loopnest::Staged::Role::Output ? out : in) +=
          n * (st.role == loopnest::Staged::Role::Const ? 4 : 2);
    }
    return streamCost(*ctx_.hw, 1, 1, double(in), double(out), double(chunks_->work()));
  }

  Kernel lower(const Schedule &s, Builder &b, const DramCtx &d) const override {
    KernelOptions o;
    o.doubleBuffer = ctx_.doubleBuffer;
    return loopnest::lowerLoopNestPoint(g_, *grp_, b, d, o, point(s));
  }

private:
  static LoopNestPoint point(const Schedule &s) {
    LoopNestPoint x;
    x.chunked = s.get("chunked") != 0;
    x.chunking = Chunking{static_cast<size_t>(s.get("depth")), s.get("rows"),
                          static_cast<int>(s.get(kBuffers))};
    return x;
  }

  const graph::Graph &g_;
  SpaceContext ctx_;
  const graph::FusedGroup *grp_;
  std::unique_ptr<loopnest::Prepared> prep_;
  std::unique_ptr<loopnest::ChunkedPath> chunks_; // refers to *prep_
  std::optional<Reject> fixed_;
  int64_t l1Free_ = 0;
};

} // namespace

std::unique_ptr<KernelSpace> makeLoopNestSpace(const GroupPlan &p, const graph::Graph &g,
                                               const SpaceContext &ctx) {
  return std::make_unique<LoopNestSpace>(p, g, ctx);
}

Schedule loopnest::loopNestSchedule(const LoopNestPoint &x) {
  Schedule s;
  s.strategy = Strategy::LoopNest;
  s.set("chunked", x.chunked ? 1 : 0);
  s.set("depth", x.chunked ? static_cast<int64_t>(x.chunking.depth) : 0);
  s.set("rows", x.chunked ? x.chunking.T : 0);
  s.set(kBuffers, x.chunked ? x.chunking.buffers : 1);
  return s;
}

} // namespace npuc::npu
