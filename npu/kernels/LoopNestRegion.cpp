// LoopNestRegion.cpp - rows, chunks, region analysis, rebasing and box copies for the loop-nest
// kernel's tiled path (LoopNestRegion.h).
#include "npu/kernels/LoopNestRegion.h"

#include "support/Error.h"
#include "tir/IRMutator.h"
#include "tir/IRVisitor.h"
#include "tir/Linear.h"
#include "tir/Simplify.h"
#include "tir/Substitute.h"

#include <fmt/format.h>
#include <numeric>

#include <algorithm>
#include <optional>

namespace npuc::npu::loopnest {

using namespace tir;

std::vector<int64_t> rowMajor(const std::vector<int64_t> &shape) {
  std::vector<int64_t> st(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;)
    st[i - 1] = st[i] * shape[i];
  return st;
}

namespace {
class VarsOf : public IRVisitor {
public:
  std::vector<const VarNode *> vars;
  void visitVar(const VarNode *op) override {
    if (std::find(vars.begin(), vars.end(), op) == vars.end())
      vars.push_back(op);
  }
};

} // namespace

bool affineOf(const Expr &index, Affine &a) {
  VarsOf vs;
  vs.visit(index);
  Expr e = index;
  for (const VarNode *v : vs.vars) {
    int64_t c = 0;
    Expr rest;
    if (!linearIn(e, v, c, rest))
      return false;
    if (c != 0)
      a.terms.emplace_back(v, c);
    e = rest;
  }
  const auto *k = simplify(e).as<IntImmNode>();
  if (!k)
    return false;
  a.c0 = k->value;
  return true;
}

namespace {

// The dimension each term moves (the largest stride dividing its coefficient) and the digits
// of c0: element = sum_d (off[d] + sum_{terms of d} k * v) * stride[d] when no digit carries.
struct Digits {
  std::vector<int64_t> off;
  std::vector<std::pair<int, int64_t>> dimK; // per term: dimension, multiple of its stride
};
bool digitsOf(const Affine &a, const std::vector<int64_t> &shape, Digits &dg) {
  const std::vector<int64_t> st = rowMajor(shape);
  int64_t n = 1;
  for (int64_t s : shape)
    n *= s;
  if (a.c0 < 0 || a.c0 >= n)
    return false;
  for (size_t d = 0; d < shape.size(); ++d)
    dg.off.push_back(a.c0 / st[d] % shape[d]);
  for (const auto &[v, c] : a.terms) {
    int d = static_cast<int>(shape.size()) - 1;
    for (size_t e = 0; e < shape.size(); ++e)
      if (c % st[e] == 0) {
        d = static_cast<int>(e);
        break;
      }
    dg.dimK.emplace_back(d, c / st[static_cast<size_t>(d)]);
  }
  return true;
}

class AccessVisitor : public IRVisitor {
public:
  explicit AccessVisitor(std::set<const BufferNode *> slots) : slots_(std::move(slots)) {}
  std::map<const BufferNode *, std::vector<Access>> acc;
  std::string why; // a loop whose range is not constant

  void visitFor(const ForNode *op) override {
    const auto *m = op->min.as<IntImmNode>();
    const auto *e = op->extent.as<IntImmNode>();
    if (!m || !e || e->value < 1) {
      why = "a loop with a non-constant range";
      return;
    }
    ba_.bind(op->var, m->value, e->value);
    ranges_[op->var.node()] = {m->value, m->value + e->value - 1};
    IRVisitor::visitFor(op);
    ba_.unbind(op->var);
    ranges_.erase(op->var.node());
  }
  void visitLoad(const LoadNode *op) override {
    record(op->buffer.get(), op->index, false);
    IRVisitor::visitLoad(op);
  }
  void visitStore(const StoreNode *op) override {
    record(op->buffer.get(), op->index, true);
    IRVisitor::visitStore(op);
  }

private:
  void record(const BufferNode *b, const Expr &index, bool write) {
    if (!slots_.count(b))
      return;
    Access x;
    x.write = write;
    x.affine = affineOf(index, x.a);
    x.ranges = ranges_;
    x.flat = ba_.bound(index);
    acc[b].push_back(std::move(x));
  }
  std::set<const BufferNode *> slots_;
  BoundAnalyzer ba_;
  std::map<const VarNode *, Interval> ranges_;
};

} // namespace

// The box of an affine access, when no digit carries; `dense`: every element of it is accessed.
bool boxOf(const Access &x, const std::vector<int64_t> &shape, Region &r, bool &dense, int *carry) {
  if (carry)
    *carry = -1;
  Digits dg;
  if (!x.affine || !digitsOf(x.a, shape, dg))
    return false;
  r.box = true;
  r.lo = r.hi = dg.off;
  // Per dimension: (|k|, extent) of its terms; dense when they enumerate a mixed radix.
  std::vector<std::vector<std::pair<int64_t, int64_t>>> terms(shape.size());
  for (size_t t = 0; t < dg.dimK.size(); ++t) {
    const auto [d, k] = dg.dimK[t];
    auto it = x.ranges.find(x.a.terms[t].first);
    if (it == x.ranges.end())
      return false; // a variable no loop binds
    const int64_t a = k * it->second.lo, b = k * it->second.hi;
    r.lo[static_cast<size_t>(d)] += std::min(a, b);
    r.hi[static_cast<size_t>(d)] += std::max(a, b);
    terms[static_cast<size_t>(d)].emplace_back(std::abs(k), it->second.hi - it->second.lo + 1);
  }
  dense = true;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (r.lo[d] < 0 || r.hi[d] >= shape[d]) {
      if (carry)
        *carry = static_cast<int>(d);
      return false;
    }
    std::sort(terms[d].begin(), terms[d].end());
    int64_t next = 1;
    for (const auto &[k, n] : terms[d]) {
      dense = dense && k == next;
      next = k * n;
    }
  }
  return true;
}

Region hull(const Region &a, const Region &b) {
  Region r = a;
  for (size_t i = 0; i < r.lo.size(); ++i) {
    r.lo[i] = std::min(r.lo[i], b.lo[i]);
    r.hi[i] = std::max(r.hi[i], b.hi[i]);
  }
  return r;
}

namespace {

// Rewrites one chunk's accesses of slot buffers onto their chunk buffers.
class Rebaser : public IRMutator {
public:
  Rebaser(std::map<const BufferNode *, Slot *> slots, size_t chunk)
      : slots_(std::move(slots)), chunk_(chunk) {}

protected:
  Stmt mutateFor(const ForNode *op, const Stmt &self) override {
    vars_[op->var.node()] = op->var;
    return IRMutator::mutateFor(op, self);
  }
  Expr mutateLoad(const LoadNode *op, const Expr &self) override {
    auto it = slots_.find(op->buffer.get());
    if (it == slots_.end())
      return IRMutator::mutateLoad(op, self);
    return load(it->second->chunk, local(*it->second, mutate(op->index)));
  }
  Stmt mutateStore(const StoreNode *op, const Stmt &self) override {
    auto it = slots_.find(op->buffer.get());
    if (it == slots_.end())
      return IRMutator::mutateStore(op, self);
    return store(it->second->chunk, mutate(op->value), local(*it->second, mutate(op->index)));
  }

private:
  Expr local(const Slot &s, const Expr &index) const {
    const Region &r = s.regions[chunk_];
    if (!s.box)
      return simplify(index - imm(r.lo[0]));
    Affine a;
    Digits dg;
    bool ok = affineOf(index, a) && digitsOf(a, s.view, dg);
    NPUC_ASSERT(ok, "a box region's accesses were found affine: " + s.ref->name);
    const std::vector<int64_t> bst = rowMajor(s.capShape);
    int64_t c = 0;
    for (size_t d = 0; d < bst.size(); ++d)
      c += (dg.off[d] - r.lo[d]) * bst[d];
    Expr e = imm(c);
    for (size_t t = 0; t < a.terms.size(); ++t) {
      const auto [d, k] = dg.dimK[t];
      e = e + Expr(vars_.at(a.terms[t].first)) * imm(k * bst[static_cast<size_t>(d)]);
    }
    return simplify(e);
  }
  std::map<const VarNode *, Var> vars_;
  std::map<const BufferNode *, Slot *> slots_;
  size_t chunk_;
};

} // namespace

std::map<const BufferNode *, std::vector<Access>>
accessesOf(const Stmt &s, const std::set<const BufferNode *> &slots, std::string &why) {
  AccessVisitor v(slots);
  v.visit(s);
  why = v.why;
  return std::move(v.acc);
}

Stmt rebase(const Stmt &s, const std::map<const BufferNode *, Slot *> &slots, size_t chunk) {
  return Rebaser(slots, chunk).mutate(s);
}

// Copies a box between a tensor's home and L1 in as few DMAs as the fields allow: dimensions
// contiguous on both sides merge, one longer than the size fields splits at a divisor (or into
// pieces), and beyond three dimensions the outer ones become separate DMAs.
void boxCopy(const Builder &b, bool toChip, int home, int64_t homeAddr, int64_t chipAddr,
             const std::vector<Dm> &dims, std::vector<Stmt> &out) {
  const Hw &hw = b.hw();
  const int64_t maxDim = hw.maxDim();
  std::vector<Dm> m;
  for (const Dm &x : dims) {
    if (x.n == 1)
      continue;
    if (!m.empty() && x.hs == m.back().n * m.back().hs && x.cs == m.back().n * m.back().cs) {
      m.back().n *= x.n;
      continue;
    }
    m.push_back(x);
  }
  if (m.empty())
    m.push_back({1, 1, 1});
  for (size_t j = 0; j < m.size(); ++j) {
    if (m[j].n <= maxDim)
      continue;
    for (int64_t f = maxDim; f > 1; --f)
      if (m[j].n % f == 0 && m[j].n / f <= maxDim) {
        Dm outer{m[j].n / f, m[j].hs * f, m[j].cs * f};
        m[j].n = f;
        m.insert(m.begin() + static_cast<std::ptrdiff_t>(j) + 1, outer);
        break;
      }
    if (m[j].n > maxDim) {
      for (int64_t o = 0; o < m[j].n; o += maxDim) {
        std::vector<Dm> p = m;
        p[j].n = std::min(maxDim, m[j].n - o);
        boxCopy(b, toChip, home, homeAddr + o * m[j].hs * 2, chipAddr + o * m[j].cs * 2, p, out);
      }
      return;
    }
  }
  if (m.size() > 3) {
    const Dm o = m.back();
    m.pop_back();
    for (int64_t i = 0; i < o.n; ++i)
      boxCopy(b, toChip, home, homeAddr + i * o.hs * 2, chipAddr + i * o.cs * 2, m, out);
    return;
  }
  View h{home, imm(homeAddr)}, c{hw.l1, imm(chipAddr)};
  Expr *hs[3] = {&h.s0, &h.s1, &h.s2}, *cs[3] = {&c.s0, &c.s1, &c.s2};
  Dims n;
  Expr *ns[3] = {&n.n0, &n.n1, &n.n2};
  for (size_t j = 0; j < m.size(); ++j) {
    *hs[j] = imm(m[j].hs);
    *cs[j] = imm(m[j].cs);
    *ns[j] = imm(m[j].n);
  }
  out.push_back(toChip ? b.load(h, c, n) : b.store(c, h, n));
}

namespace {
bool isConst(const Expr &e, int64_t v) {
  const auto *k = e.as<IntImmNode>();
  return k && k->value == v;
}

} // namespace

std::vector<Stmt> flatten(const Stmt &s) {
  if (const auto *q = s.as<SeqNode>()) {
    std::vector<Stmt> out;
    for (const Stmt &x : q->stmts)
      for (Stmt &y : flatten(x))
        out.push_back(std::move(y));
    return out;
  }
  return {s};
}

std::string rowsAt(const std::vector<Stmt> &tops, size_t depth, Rows &rows) {
  for (size_t k = 0; k < tops.size(); ++k) {
    Nest n;
    const ForNode *f = tops[k].as<ForNode>();
    while (f && isConst(f->extent, 1) && f->body.as<ForNode>()) {
      n.units.push_back(f);
      f = f->body.as<ForNode>();
    }
    for (size_t l = 0; l < depth; ++l) {
      const auto *ext = f ? f->extent.as<IntImmNode>() : nullptr;
      if (!ext || !isConst(f->min, 0))
        return fmt::format("a nest has no constant loop from 0 at depth {}", l + 1);
      if (l + 1 == depth) {
        n.rv = f->var;
        n.extent = ext->value;
        n.body = f->body;
        break;
      }
      if (k == 0)
        rows.prefix.push_back(ext->value);
      else if (rows.prefix[l] != ext->value)
        return fmt::format("the nests' loops at depth {} differ", l + 1);
      n.fixed.push_back(f->var);
      f = f->body.as<ForNode>();
    }
    rows.R = std::gcd(rows.R, n.extent);
    rows.nests.push_back(std::move(n));
  }
  if (rows.R < 2)
    return fmt::format("the nests' loops at depth {} share no extent (gcd {})", depth, rows.R);
  for (Nest &n : rows.nests)
    if (n.extent > rows.R) { // rows of R: the loop splits into R x extent/R
      const int64_t q = n.extent / rows.R;
      Var ro = Var::make(n.rv.name() + "_o"), ri = Var::make(n.rv.name() + "_i");
      VarMap m;
      m[n.rv.node()] = Expr(ro) * imm(q) + Expr(ri);
      n.body = forLoop(ri, imm(0), imm(q), substitute(n.body, m));
      n.rv = ro;
      n.extent = rows.R;
    }
  return "";
}

// Rows [r0, r0 + len) of a nest with its fixed loops at `at`, the chunked loop from 0.
Stmt chunkOf(const Nest &n, const std::vector<int64_t> &at, int64_t r0, int64_t len) {
  VarMap m;
  m[n.rv.node()] = Expr(n.rv) + imm(r0);
  for (size_t l = 0; l < n.fixed.size(); ++l)
    m[n.fixed[l].node()] = imm(at[l]);
  Stmt s =
      forLoop(n.rv, imm(0), imm(len), m.size() == 1 && r0 == 0 ? n.body : substitute(n.body, m));
  for (size_t u = n.units.size(); u-- > 0;)
    s = forLoop(n.units[u]->var, n.units[u]->min, n.units[u]->extent, s);
  return s;
}

namespace {

// Whether two boxes of the same rank share an element (bounds inclusive).
bool intersects(const Region &a, const Region &b) {
  for (size_t d = 0; d < a.lo.size(); ++d)
    if (a.hi[d] < b.lo[d] || b.hi[d] < a.lo[d])
      return false;
  return true;
}

// Boxes in the view's own coordinates: two chunks write the same element exactly when their
// boxes intersect. Swept in order of the first dim, so that each box meets only those that start
// before it ends (the per-element scan below took most of a transformer's compile).
std::optional<bool> boxesOverlap(const Slot &s) {
  std::vector<const Region *> rs;
  for (const Region &r : s.regions) {
    if (!r.box || r.lo.size() != s.view.size() || r.lo.empty())
      return std::nullopt;
    if (r.volume() > 0)
      rs.push_back(&r);
  }
  std::sort(rs.begin(), rs.end(),
            [](const Region *a, const Region *b) { return a->lo[0] < b->lo[0]; });
  for (size_t i = 0; i < rs.size(); ++i)
    for (size_t j = i + 1; j < rs.size() && rs[j]->lo[0] <= rs[i]->hi[0]; ++j)
      if (intersects(*rs[i], *rs[j]))
        return true;
  return false;
}

} // namespace

std::string overlap(const std::vector<Slot> &slots) {
  for (const Slot &s : slots) {
    if (!s.writes)
      continue;
    if (std::optional<bool> boxes = boxesOverlap(s)) {
      if (*boxes)
        return fmt::format("two chunks write the same elements of {}", s.ref->name);
      continue;
    }
    int64_t n = 1;
    for (int64_t e : s.view)
      n *= e;
    std::vector<bool> seen(static_cast<size_t>(n), false);
    const std::vector<int64_t> st = rowMajor(s.view);
    for (const Region &r : s.regions) {
      if (r.volume() <= 0)
        continue;
      std::vector<int64_t> at = r.lo; // an odometer over the box
      for (bool more = true; more;) {
        int64_t e = 0;
        for (size_t d = 0; d < at.size(); ++d)
          e += at[d] * st[d];
        if (seen[static_cast<size_t>(e)])
          return fmt::format("two chunks write the same elements of {}", s.ref->name);
        seen[static_cast<size_t>(e)] = true;
        more = false;
        for (size_t d = at.size(); d-- > 0;) {
          if (++at[d] <= r.hi[d]) {
            more = true;
            break;
          }
          at[d] = r.lo[d];
        }
      }
    }
  }
  return "";
}

} // namespace npuc::npu::loopnest
