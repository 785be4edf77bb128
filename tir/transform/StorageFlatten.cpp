// StorageFlatten.cpp - strided flat layouts for allocated buffers (StorageFlatten.h).
#include "tir/transform/StorageFlatten.h"

#include "support/Error.h"
#include "tir/Bound.h"
#include "tir/Eval.h"
#include "tir/IRMutator.h"
#include "tir/Linear.h"
#include "tir/Simplify.h"

#include <fmt/ranges.h>

#include <set>
#include <unordered_map>

namespace npuc::tir {
namespace {

class Flattener : public IRMutator {
public:
  Flattener(int64_t align, const std::set<const BufferNode *> &skip) : align_(align), skip_(skip) {}
  std::set<const BufferNode *> failed; // buffers with an access that cannot be split

  Buffer mutateBuffer(const Buffer &b) override {
    auto it = map_.find(b.get());
    return it == map_.end() ? b : it->second;
  }

protected:
  Stmt mutateAllocate(const AllocateNode *op, const Stmt &self) override {
    const Buffer &b = op->buffer;
    // A buffer without elements has no rows to lay out.
    if (b->shape.size() >= 2 && b->numElements() > 0 && !skip_.count(b.get())) {
      const int64_t w = b->shape.back(), rows = b->numElements() / w;
      int64_t wp = w, size = 0;
      if ((w % align_ != 0 && __builtin_mul_overflow(w / align_ + 1, align_, &wp)) ||
          __builtin_mul_overflow(rows, wp, &size))
        npuc::fail("storage-flatten: buffer '{}' ({}[{}]) with its rows padded to a multiple of {} "
                   "elements has more elements than a 64-bit index can address",
                   b->name, toString(b->dtype), fmt::join(b->shape, ", "), align_);
      map_[b.get()] = Buffer::make(b->name, b->dtype, {size}, b->scope);
      width_[b.get()] = {w, wp};
    }
    return IRMutator::mutateAllocate(op, self);
  }
  Stmt mutateFor(const ForNode *op, const Stmt &self) override {
    const auto *mn = op->min.as<IntImmNode>();
    const auto *ex = op->extent.as<IntImmNode>();
    if (mn && ex && ex->value >= 1)
      bounds_.bind(op->var, mn->value, ex->value);
    loops_.push_back(op->var);
    Stmt s = IRMutator::mutateFor(op, self);
    loops_.pop_back();
    bounds_.unbind(op->var);
    return s;
  }
  Expr mutateLoad(const LoadNode *op, const Expr &self) override {
    Expr e = IRMutator::mutateLoad(op, self);
    const auto *l = e.as<LoadNode>();
    Expr idx = restride(op->buffer, l->index);
    return idx.same(l->index) ? e : load(l->buffer, idx);
  }
  Stmt mutateStore(const StoreNode *op, const Stmt &self) override {
    Stmt s = IRMutator::mutateStore(op, self);
    const auto *st = s.as<StoreNode>();
    Expr idx = restride(op->buffer, st->index);
    return idx.same(st->index) ? s : store(st->buffer, st->value, idx);
  }

private:
  int64_t align_;
  const std::set<const BufferNode *> &skip_;
  std::unordered_map<const BufferNode *, Buffer> map_;
  std::unordered_map<const BufferNode *, std::pair<int64_t, int64_t>> width_; // W, W'
  BoundAnalyzer bounds_;
  std::vector<Var> loops_;

  // index = row * W + col -> row * W' + col.
  Expr restride(const Buffer &b, const Expr &index) {
    auto it = width_.find(b.get());
    if (it == width_.end())
      return index;
    const auto [w, wp] = it->second;
    Expr row = imm(0), col = imm(0), rest = index;
    for (const Var &v : loops_) {
      int64_t c = 0;
      Expr r;
      if (!linearIn(rest, v.node(), c, r)) {
        failed.insert(b.get());
        return index;
      }
      rest = r;
      if (c % w == 0)
        row = row + v * imm(c / w);
      else
        col = col + v * imm(c);
    }
    const auto *k = rest.as<IntImmNode>();
    if (!k) {
      failed.insert(b.get());
      return index;
    }
    row = simplify(row + imm(floorDivInt(k->value, w)));
    col = simplify(col + imm(k->value - floorDivInt(k->value, w) * w));
    Interval ic = bounds_.bound(col);
    if (ic.lo < 0 || ic.hi >= w || ic.lo == Interval::kNegInf || ic.hi == Interval::kPosInf) {
      failed.insert(b.get());
      return index;
    }
    return simplify(row * imm(wp) + col);
  }
};

} // namespace

PrimFunc storageFlatten(const PrimFunc &f, int64_t rowAlign) {
  // First find the buffers some access of which cannot be split, then flatten the others.
  std::set<const BufferNode *> skip;
  Flattener probe(rowAlign, skip);
  probe.mutate(f.body);
  skip = probe.failed;
  Flattener flat(rowAlign, skip);
  PrimFunc out = f;
  out.body = flat.mutate(f.body);
  return out;
}

} // namespace npuc::tir
