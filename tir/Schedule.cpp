// Schedule.cpp - the schedule primitives of Schedule.h and their legality checks.
#include "tir/Schedule.h"

#include "support/Error.h"

#include "tir/Equal.h"
#include "tir/IRMutator.h"
#include "tir/IRVisitor.h"
#include "tir/Printer.h"
#include "tir/Simplify.h"
#include "tir/Substitute.h"
#include <fmt/ranges.h>

#include <algorithm>
#include <functional>
#include <set>

namespace npuc::tir::schedule {
namespace {

// Every For binding a variable called `name`.
class LoopFinder : public IRVisitor {
public:
  explicit LoopFinder(std::string name) : name_(std::move(name)) {}
  std::vector<const ForNode *> found;
  void visitFor(const ForNode *op) override {
    if (op->var.name() == name_)
      found.push_back(op);
    IRVisitor::visitFor(op);
  }

private:
  std::string name_;
};

const ForNode *findLoop(const PrimFunc &f, const std::string &name, const char *prim) {
  LoopFinder lf(name);
  lf.visit(f.body);
  if (lf.found.empty())
    npuc::fail("{}: function '{}' has no loop '{}'", prim, f.name, name);
  if (lf.found.size() > 1)
    npuc::fail("{}: function '{}' has {} loops named '{}'", prim, f.name, lf.found.size(), name);
  return lf.found[0];
}

int64_t constExtent(const ForNode *l, const char *prim) {
  const auto *e = l->extent.as<IntImmNode>();
  if (!e)
    npuc::fail("{}: loop '{}' has a non-constant extent ({})", prim, l->var.name(),
               toText(l->extent));
  return e->value;
}

// Replaces one statement node (by identity) everywhere it occurs.
class Replace : public IRMutator {
public:
  Replace(const StmtNode *from, Stmt to) : from_(from), to_(std::move(to)) {}
  Stmt mutate(const Stmt &s) override {
    if (s.get() == from_)
      return to_;
    return IRMutator::mutate(s);
  }

private:
  const StmtNode *from_;
  Stmt to_;
};

PrimFunc replaced(const PrimFunc &f, const StmtNode *from, Stmt to) {
  PrimFunc out = f;
  out.body = Replace(from, std::move(to)).mutate(f.body);
  return out;
}

Stmt selfOf(const ForNode *l) {
  // Rebuild a handle to the node: the For is reached again by identity in Replace, so callers
  // construct new statements from its fields instead of needing the original handle.
  return ForNode::make(l->var, l->min, l->extent, l->forKind, l->body);
}

// floordiv(v, k) -> q and floormod(v, k) -> r, before v itself is substituted.
class DivModOf : public IRMutator {
public:
  DivModOf(const VarNode *v, int64_t k, Expr q, Expr r) : v_(v), k_(k), q_(q), r_(r) {}

protected:
  Expr mutateFloorDiv(const FloorDivNode *op, const Expr &self) override {
    if (matches(op))
      return q_;
    return IRMutator::mutateFloorDiv(op, self);
  }
  Expr mutateFloorMod(const FloorModNode *op, const Expr &self) override {
    if (matches(op))
      return r_;
    return IRMutator::mutateFloorMod(op, self);
  }

private:
  const VarNode *v_;
  int64_t k_;
  Expr q_, r_;
  bool matches(const BinaryNode *op) const {
    const auto *c = op->b.as<IntImmNode>();
    return op->a.get() == v_ && c && c->value == k_;
  }
};

struct Access {
  Buffer buffer;
  Expr index;
  bool write;
};

class Accesses : public IRVisitor {
public:
  std::vector<Access> all;
  void visitLoad(const LoadNode *op) override {
    all.push_back({op->buffer, op->index, false});
    IRVisitor::visitLoad(op);
  }
  void visitStore(const StoreNode *op) override {
    all.push_back({op->buffer, op->index, true});
    IRVisitor::visitStore(op);
  }
};

std::vector<Access> accessesOf(const Stmt &s) {
  Accesses a;
  a.visit(s);
  return a.all;
}

bool writes(const Stmt &s, const Buffer &b) {
  for (const Access &a : accessesOf(s))
    if (a.write && a.buffer.same(b))
      return true;
  return false;
}

bool reads(const Stmt &s, const Buffer &b) {
  for (const Access &a : accessesOf(s))
    if (!a.write && a.buffer.same(b))
      return true;
  return false;
}

// The buffer called `name`: a parameter or an allocation.
Buffer findBuffer(const PrimFunc &f, const std::string &name, const char *prim) {
  for (const Buffer &b : f.params)
    if (b->name == name)
      return b;
  for (const Access &a : accessesOf(f.body))
    if (a.buffer->name == name)
      return a.buffer;
  npuc::fail("{}: function '{}' has no buffer '{}'", prim, f.name, name);
}

// for (c, 0, n) dst[c] = src[c]: a whole-buffer copy.
Stmt copyAll(const Buffer &src, const Buffer &dst) {
  Var c = Var::make(dst->name + "_c");
  return forLoop(c, imm(0), imm(dst->numElements()), store(dst, load(src, c), c));
}

class RedirectBuffer : public IRMutator {
public:
  RedirectBuffer(const Buffer &from, const Buffer &to) : from_(from), to_(to) {}
  Buffer mutateBuffer(const Buffer &b) override { return b.same(from_) ? to_ : b; }

private:
  Buffer from_, to_;
};

} // namespace

Stmt splitLoop(const ForNode *l, int64_t factor) {
  if (factor <= 0)
    npuc::fail("split: factor must be positive, not {} (loop '{}')", factor, l->var.name());
  const int64_t extent = constExtent(l, "split");
  // The guarded last outer iteration computes outer * factor + inner up to extent + factor - 2.
  if (extent % factor != 0 && extent > INT64_MAX - factor + 2)
    npuc::fail("split: loop '{}' of extent {} split by {} would compute indices past int64",
               l->var.name(), extent, factor);
  Var outer = Var::make(l->var.name() + "_o"), inner = Var::make(l->var.name() + "_i");
  Expr flat = outer * imm(factor) + inner;
  Stmt body = l->body;
  if (l->min.as<IntImmNode>() && l->min.as<IntImmNode>()->value == 0)
    body = DivModOf(l->var.node(), factor, outer, inner).mutate(body);
  body = substitute(body, VarMap{{l->var.node(), simplify(l->min + flat)}});
  if (extent % factor != 0)
    body = IfThenElseNode::make(flat < imm(extent), body);
  Stmt in = ForNode::make(inner, imm(0), imm(std::min(factor, extent)), l->forKind, body);
  const int64_t outerExtent = extent / factor + (extent % factor > 0 ? 1 : 0); // ceil, no overflow
  return ForNode::make(outer, imm(0), imm(outerExtent), ForKind::Serial, in);
}

PrimFunc split(const PrimFunc &f, const std::string &loop, int64_t factor) {
  const ForNode *l = findLoop(f, loop, "split");
  return replaced(f, l, splitLoop(l, factor));
}

PrimFunc fuse(const PrimFunc &f, const std::string &outer, const std::string &inner) {
  const ForNode *o = findLoop(f, outer, "fuse");
  const ForNode *i = o->body.as<ForNode>();
  if (!i || i->var.name() != inner)
    npuc::fail("fuse: loop '{}' is not the whole body of loop '{}'", inner, outer);
  const int64_t eo = constExtent(o, "fuse"), ei = constExtent(i, "fuse");
  int64_t n = 0; // a loop that never runs makes the pair run never, whatever the other's sign
  if (eo > 0 && ei > 0 && __builtin_mul_overflow(eo, ei, &n))
    npuc::fail("fuse: the fused extent of '{}' ({}) and '{}' ({}) does not fit in int64", outer, eo,
               inner, ei);
  Var fused = Var::make(outer + "_" + inner);
  VarMap m{{o->var.node(), simplify(o->min + floordiv(fused, imm(ei)))},
           {i->var.node(), simplify(i->min + floormod(fused, imm(ei)))}};
  return replaced(f, o, ForNode::make(fused, imm(0), imm(n), o->forKind, substitute(i->body, m)));
}

PrimFunc reorder(const PrimFunc &f, const std::vector<std::string> &order) {
  if (order.size() < 2)
    npuc::fail("reorder: needs at least two loops");
  std::set<std::string> names(order.begin(), order.end());
  if (names.size() != order.size())
    npuc::fail("reorder: a loop is named twice");
  // The chain starts at the named loop that no other named loop encloses.
  const ForNode *top = nullptr;
  for (const std::string &n : order) {
    const ForNode *l = findLoop(f, n, "reorder");
    bool enclosed = false;
    for (const std::string &m : order)
      if (m != n) {
        LoopFinder lf(n);
        lf.visit(findLoop(f, m, "reorder")->body);
        enclosed = enclosed || !lf.found.empty();
      }
    if (!enclosed)
      top = l;
  }
  std::vector<const ForNode *> chain;
  for (const ForNode *l = top; l && chain.size() < order.size(); l = l->body.as<ForNode>())
    chain.push_back(l);
  for (const ForNode *l : chain)
    if (!names.count(l->var.name()) || chain.size() != order.size())
      npuc::fail("reorder: loops {} do not form a perfect nest", fmt::join(order, ", "));
  const Stmt body = chain.back()->body;
  // Legality. Every buffer the body writes must be accessed at one index throughout, so that
  // distinct iterations never meet through it except at the same element...
  for (const Access &w : accessesOf(body)) {
    if (!w.write)
      continue;
    for (const Access &a : accessesOf(body))
      if (a.buffer.same(w.buffer) && !structuralEqual(a.index, w.index))
        npuc::fail("reorder: loops {} carry a dependence through buffer {} (written at {}[{}], "
                   "{} at {}[{}])",
                   fmt::join(order, ", "), w.buffer->name, w.buffer->name, toText(w.index),
                   a.write ? "written" : "read", a.buffer->name, toText(a.index));
    // ... and the loops the written index does not use (a reduction) keep their order.
    std::vector<std::string> before, after;
    for (const ForNode *l : chain)
      if (!usesVar(w.index, l->var.node()))
        before.push_back(l->var.name());
    for (const std::string &n : order)
      if (std::find(before.begin(), before.end(), n) != before.end())
        after.push_back(n);
    if (before != after)
      npuc::fail("reorder: would change the order of the reduction loops {} of {}[{}]",
                 fmt::join(before, ", "), w.buffer->name, toText(w.index));
  }
  Stmt out = body;
  for (size_t k = order.size(); k-- > 0;) {
    const ForNode *l = findLoop(f, order[k], "reorder");
    out = ForNode::make(l->var, l->min, l->extent, l->forKind, out);
  }
  return replaced(f, top, out);
}

PrimFunc tile(const PrimFunc &f, const std::string &x, const std::string &y, int64_t fx,
              int64_t fy) {
  PrimFunc g = split(split(f, x, fx), y, fy);
  return reorder(g, {x + "_o", y + "_o", x + "_i", y + "_i"});
}

PrimFunc unroll(const PrimFunc &f, const std::string &loop) {
  const ForNode *l = findLoop(f, loop, "unroll");
  constExtent(l, "unroll");
  return replaced(f, l, ForNode::make(l->var, l->min, l->extent, ForKind::Unrolled, l->body));
}

PrimFunc pipeline(const PrimFunc &f, const std::string &loop, int64_t stages) {
  const ForNode *l = findLoop(f, loop, "pipeline");
  if (stages < 1)
    npuc::fail("pipeline: loop '{}' needs at least 1 stage, not {}", loop, stages);
  Stmt p = ForNode::make(l->var, l->min, l->extent, ForKind::Pipelined, l->body);
  return replaced(f, l, AttrStmtNode::make("pipeline_stages", imm(stages), p));
}

PrimFunc doubleBuffer(const PrimFunc &f, const std::string &buffer) {
  for (const Buffer &b : f.params)
    if (b->name == buffer)
      npuc::fail("double_buffer: '{}' is a parameter; only a buffer allocated inside a loop can "
                 "be double-buffered",
                 buffer);
  // The allocation, and whether a loop encloses it.
  const AllocateNode *alloc = nullptr;
  bool inLoop = false;
  std::function<void(const Stmt &, bool)> find = [&](const Stmt &s, bool loop) {
    if (!s.defined())
      return;
    if (const auto *a = s.as<AllocateNode>()) {
      if (a->buffer->name == buffer) {
        alloc = a;
        inLoop = loop;
      }
      find(a->body, loop);
    } else if (const auto *l = s.as<ForNode>()) {
      find(l->body, true);
    } else if (const auto *q = s.as<SeqNode>()) {
      for (const Stmt &c : q->stmts)
        find(c, loop);
    } else if (const auto *i = s.as<IfThenElseNode>()) {
      find(i->thenCase, loop);
      find(i->elseCase, loop);
    } else if (const auto *t = s.as<AttrStmtNode>()) {
      find(t->body, loop);
    }
  };
  find(f.body, false);
  if (!alloc)
    npuc::fail("double_buffer: function '{}' allocates no buffer '{}'", f.name, buffer);
  if (!inLoop)
    npuc::fail("double_buffer: '{}' is not allocated inside a loop; there is nothing to overlap",
               buffer);
  return replaced(
      f, alloc,
      AttrStmtNode::make("double_buffer", imm(1), AllocateNode::make(alloc->buffer, alloc->body)));
}

PrimFunc cacheRead(const PrimFunc &f, const std::string &buffer, const std::string &scope,
                   const std::string &atLoop) {
  const ForNode *l = findLoop(f, atLoop, "cache_read");
  Buffer b = findBuffer(f, buffer, "cache_read");
  if (scope.empty())
    npuc::fail("cache_read: empty memory scope");
  Stmt loop = selfOf(l);
  if (writes(loop, b))
    npuc::fail("cache_read: loop '{}' writes '{}'; a read cache would miss the writes", atLoop,
               buffer);
  if (!reads(loop, b))
    npuc::fail("cache_read: loop '{}' does not read '{}'", atLoop, buffer);
  Buffer c = Buffer::make(buffer + "_" + scope, b->dtype, b->shape, scope);
  Stmt redirected = RedirectBuffer(b, c).mutate(loop);
  return replaced(f, l, AllocateNode::make(c, seq({copyAll(b, c), redirected})));
}

PrimFunc cacheWrite(const PrimFunc &f, const std::string &buffer, const std::string &scope,
                    const std::string &atLoop) {
  const ForNode *l = findLoop(f, atLoop, "cache_write");
  Buffer b = findBuffer(f, buffer, "cache_write");
  if (scope.empty())
    npuc::fail("cache_write: empty memory scope");
  Stmt loop = selfOf(l);
  if (!writes(loop, b))
    npuc::fail("cache_write: loop '{}' does not write '{}'", atLoop, buffer);
  Buffer c = Buffer::make(buffer + "_" + scope, b->dtype, b->shape, scope);
  std::vector<Stmt> stmts;
  // Elements the loop does not write, and values it reads back, must be in the cache first.
  stmts.push_back(copyAll(b, c));
  stmts.push_back(RedirectBuffer(b, c).mutate(loop));
  stmts.push_back(copyAll(c, b));
  return replaced(f, l, AllocateNode::make(c, seq(stmts)));
}

PrimFunc computeAt(const PrimFunc &f, const std::string &producerLoop, const std::string &atLoop) {
  const ForNode *p = findLoop(f, producerLoop, "compute_at");
  const ForNode *x = findLoop(f, atLoop, "compute_at");
  Stmt prod = selfOf(p), at = selfOf(x);
  // The producer writes one buffer and reads it not (recomputing it must give the same values).
  Buffer out;
  for (const Access &a : accessesOf(prod))
    if (a.write) {
      if (out.defined() && !out.same(a.buffer))
        npuc::fail("compute_at: loop '{}' writes more than one buffer", producerLoop);
      out = a.buffer;
    }
  if (!out.defined())
    npuc::fail("compute_at: loop '{}' writes no buffer", producerLoop);
  if (reads(prod, out))
    npuc::fail("compute_at: loop '{}' reads '{}', which it writes; recomputing it in '{}' would "
               "change its values",
               producerLoop, out->name, atLoop);
  if (!reads(at, out))
    npuc::fail("compute_at: loop '{}' does not read '{}'", atLoop, out->name);
  if (writes(at, out))
    npuc::fail("compute_at: loop '{}' writes '{}'", atLoop, out->name);
  for (const Access &a : accessesOf(prod))
    if (!a.write && writes(at, a.buffer))
      npuc::fail("compute_at: loop '{}' writes '{}', which producer '{}' reads", atLoop,
                 a.buffer->name, producerLoop);
  // Both must be statements of one sequence, the producer first, nothing between them touching
  // the producer's buffers.
  const SeqNode *parent = nullptr;
  size_t ip = 0, ix = 0;
  std::function<void(const Stmt &)> find = [&](const Stmt &s) {
    if (!s.defined())
      return;
    if (const auto *q = s.as<SeqNode>()) {
      for (size_t i = 0; i < q->stmts.size(); ++i) {
        if (q->stmts[i].get() == p) {
          parent = q;
          ip = i;
        }
        if (q->stmts[i].get() == x)
          ix = i;
        find(q->stmts[i]);
      }
    } else if (const auto *l = s.as<ForNode>()) {
      find(l->body);
    } else if (const auto *a = s.as<AllocateNode>()) {
      find(a->body);
    } else if (const auto *t = s.as<AttrStmtNode>()) {
      find(t->body);
    } else if (const auto *i = s.as<IfThenElseNode>()) {
      find(i->thenCase);
      find(i->elseCase);
    }
  };
  find(f.body);
  if (!parent || parent->stmts[ix].get() != x || ix <= ip)
    npuc::fail("compute_at: loop '{}' must come after loop '{}' in the same sequence", atLoop,
               producerLoop);
  for (size_t i = ip + 1; i < ix; ++i)
    for (const Access &a : accessesOf(parent->stmts[i]))
      if (a.buffer.same(out) || (a.write && reads(prod, a.buffer)))
        npuc::fail("compute_at: a statement between '{}' and '{}' uses '{}'", producerLoop, atLoop,
                   a.buffer->name);
  std::vector<Stmt> stmts;
  for (size_t i = 0; i < parent->stmts.size(); ++i) {
    if (i == ip)
      continue;
    if (i == ix) {
      stmts.push_back(
          ForNode::make(x->var, x->min, x->extent, x->forKind, seq({freshCopy(prod), x->body})));
      continue;
    }
    stmts.push_back(parent->stmts[i]);
  }
  return replaced(f, parent, seq(stmts));
}

} // namespace npuc::tir::schedule
