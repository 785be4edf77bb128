// Epilogue.cpp - pointwise tail fusion into a register tile (see Epilogue.h).
#include "cpu_fallback/Epilogue.h"

#include "tir/IRMutator.h"
#include "tir/IRVisitor.h"
#include "tir/Linear.h"
#include "tir/Simplify.h"
#include "tir/Substitute.h"

#include <map>
#include <set>

namespace npuc::cpu {
namespace {

using namespace npuc::tir;

/// Whether `idx` is the row-major index of `shape` at the coordinates the loop variables give
/// (vars[i] runs over dimension dims[i]; dimensions without a variable are extent 1).
bool rowMajor(const Expr &idx, const std::vector<Var> &vars, const std::vector<size_t> &dims,
              const std::vector<int64_t> &shape) {
  std::vector<int64_t> stride(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;)
    stride[d - 1] = stride[d] * shape[d];
  Expr rest = idx;
  for (size_t i = 0; i < vars.size(); ++i) {
    int64_t coeff = 0;
    Expr r;
    if (!linearIn(rest, vars[i].node(), coeff, r) || coeff != stride[dims[i]])
      return false;
    rest = r;
  }
  rest = simplify(rest);
  return rest.kind() == NodeKind::IntImm && rest.as<IntImmNode>()->value == 0;
}

/// Loads of the given buffers, all of which must be at the row-major element of the nest.
class ProducedLoads : public IRVisitor {
public:
  const std::set<const BufferNode *> &produced;
  const std::vector<Var> &vars;
  const std::vector<size_t> &dims;
  const std::vector<int64_t> &shape;
  bool ok = true;
  ProducedLoads(const std::set<const BufferNode *> &p, const std::vector<Var> &v,
                const std::vector<size_t> &d, const std::vector<int64_t> &s)
      : produced(p), vars(v), dims(d), shape(s) {}
  void visitLoad(const LoadNode *op) override {
    if (produced.count(op->buffer.get()) && !rowMajor(op->index, vars, dims, shape))
      ok = false;
    IRVisitor::visitLoad(op);
  }
};

class LoadedBuffers : public IRVisitor {
public:
  std::set<const BufferNode *> read;
  void visitLoad(const LoadNode *op) override {
    read.insert(op->buffer.get());
    IRVisitor::visitLoad(op);
  }
};

/// Replaces loads of produced buffers by their values at the current element.
class ReplaceLoads : public IRMutator {
public:
  const std::map<const BufferNode *, Expr> &values;
  explicit ReplaceLoads(const std::map<const BufferNode *, Expr> &v) : values(v) {}
  Expr mutateLoad(const LoadNode *op, const Expr &self) override {
    if (auto it = values.find(op->buffer.get()); it != values.end())
      return it->second;
    return IRMutator::mutateLoad(op, self);
  }
};

Expr flatOf(const std::vector<Expr> &coords, const std::vector<int64_t> &shape) {
  Expr e = coords[0];
  for (size_t i = 1; i < coords.size(); ++i)
    e = e * shape[i] + coords[i];
  return e;
}

} // namespace

EpilogueFusion::EpilogueFusion(const Buffer &anchorOut, const std::vector<Stmt> &rest,
                               const std::vector<Buffer> &params)
    : anchor_(anchorOut) {
  const std::vector<int64_t> &shape = anchorOut->shape;
  std::set<const BufferNode *> produced{anchorOut.get()};
  for (const Stmt &s : rest) {
    // A perfect nest of serial loops from 0, over the anchor's dimensions in order (extent-1
    // dimensions may have no loop), around one Store.
    Step st;
    Stmt cur = s;
    size_t d = 0;
    bool ok = true;
    while (ok && cur.kind() == NodeKind::For) {
      const auto *f = cur.as<ForNode>();
      ok = f->forKind == ForKind::Serial && f->min.kind() == NodeKind::IntImm &&
           f->min.as<IntImmNode>()->value == 0 && f->extent.kind() == NodeKind::IntImm;
      int64_t ext = ok ? f->extent.as<IntImmNode>()->value : -1;
      while (ok && d < shape.size() && shape[d] != ext && shape[d] == 1)
        ++d;
      ok = ok && d < shape.size() && shape[d] == ext;
      if (ok) {
        st.vars.push_back(f->var);
        st.dims.push_back(d++);
        cur = f->body;
      }
    }
    for (; ok && d < shape.size(); ++d)
      ok = shape[d] == 1;
    if (!ok || cur.kind() != NodeKind::Store)
      break;
    const auto *store = cur.as<StoreNode>();
    if (store->buffer->shape != shape || produced.count(store->buffer.get()) ||
        !rowMajor(store->index, st.vars, st.dims, shape))
      break;
    ProducedLoads pl(produced, st.vars, st.dims, shape);
    pl.visit(store->value);
    if (!pl.ok)
      break;
    st.out = store->buffer;
    st.value = store->value;
    produced.insert(st.out.get());
    steps_.push_back(st);
  }
  // Store what leaves the kernel or what a statement left as a nest still reads.
  LoadedBuffers later;
  for (size_t i = steps_.size(); i < rest.size(); ++i)
    later.visit(rest[i]);
  std::set<const BufferNode *> isParam;
  for (const Buffer &b : params)
    isParam.insert(b.get());
  auto needed = [&](const Buffer &b) {
    return isParam.count(b.get()) || later.read.count(b.get());
  };
  storeAnchor_ = needed(anchor_);
  for (Step &st : steps_)
    st.store = needed(st.out);
}

Stmt EpilogueFusion::at(const std::vector<Expr> &coords, const Expr &anchorValue) const {
  const std::vector<int64_t> &shape = anchor_->shape;
  Expr index = flatOf(coords, shape);
  std::map<const BufferNode *, Expr> values{{anchor_.get(), anchorValue}};
  std::vector<Stmt> stores;
  if (storeAnchor_)
    stores.push_back(store(anchor_, anchorValue, index));
  for (const Step &st : steps_) {
    VarMap m;
    for (size_t i = 0; i < st.vars.size(); ++i)
      m[st.vars[i].node()] = coords[st.dims[i]];
    Expr v = ReplaceLoads(values).mutate(substitute(st.value, m));
    values[st.out.get()] = v;
    if (st.store)
      stores.push_back(store(st.out, v, index));
  }
  return stores.size() == 1 ? stores[0] : seq(stores);
}

} // namespace npuc::cpu
