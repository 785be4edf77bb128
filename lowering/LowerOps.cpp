// LowerOps.cpp - lowerGroup's driver, the index helpers, and the dispatch of each node to its
// lowering, the Lower column of its graph/Ops.def row (the lowerings are in LowerNN.cpp,
// LowerMath.cpp and LowerData.cpp).
#include "lowering/LowerOps.h"

#include "lowering/LowerInternal.h"
#include "support/Error.h"
#include "tir/Simplify.h"
#include "tir/Substitute.h"
#include "tir/Verify.h"

#include <algorithm>
#include <iterator>

namespace npuc::tir {
namespace lower {

namespace {
std::string sanitize(const std::string &s) {
  std::string out;
  for (char ch : s)
    out += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  return out;
}

bool contains(const std::vector<graph::ValueId> &v, graph::ValueId x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}
} // namespace

Buffer LowerCtx::input(const graph::Node &n, size_t i) {
  NPUC_ASSERT(hasInput(n, i), "input " + std::to_string(i) + " of " + n.name + " is absent");
  graph::ValueId v = n.inputs[i];
  if (auto it = buffers.find(v); it != buffers.end())
    return it->second;
  const graph::Value &val = g.value(v);
  // Values produced inside the group were registered by their producer; anything else must be a
  // group input (registered up front) or a constant.
  if (!val.isConstant())
    fail("node '{}' ({}): input '{}' is neither a group input, a constant nor produced earlier "
         "in group '{}'",
         n.name, n.kind, val.name, grp.name);
  Buffer b = Buffer::make(val.name, DataType::Float(32), val.shape);
  buffers[v] = b;
  constants.push_back(v);
  return b;
}

Buffer LowerCtx::output(const graph::Node &n, size_t i) {
  graph::ValueId v = n.outputs.at(i);
  const graph::Value &val = g.value(v);
  // Bool and int64 values are stored as fp32 (0/1, exact integers below 2^24): graph/ExtOps.h.
  if (auto it = buffers.find(v); it != buffers.end())
    return it->second; // a group output, registered up front
  Buffer b = Buffer::make(val.name, DataType::Float(32), val.shape);
  buffers[v] = b;
  allocated.push_back(b);
  return b;
}

Var LowerCtx::var(const std::string &base) {
  return Var::make(base);
}

std::vector<Var> LowerCtx::vars(size_t rank, const std::string &base) {
  std::vector<Var> out;
  for (size_t d = 0; d < rank; ++d)
    out.push_back(Var::make(base + std::to_string(d)));
  return out;
}

std::vector<int64_t> stridesOf(const Shape &s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;)
    st[i - 1] = st[i] * s[i];
  return st;
}

Expr flatIndex(const std::vector<Expr> &idx, const Shape &shape) {
  NPUC_ASSERT(idx.size() == shape.size(), "index rank differs from shape rank");
  std::vector<int64_t> st = stridesOf(shape);
  Expr e = imm(0);
  for (size_t d = 0; d < idx.size(); ++d)
    e = e + idx[d] * st[d];
  return simplify(e);
}

Expr broadcastIndex(const Shape &in, const std::vector<Expr> &outIdx) {
  NPUC_ASSERT(in.size() <= outIdx.size(), "broadcast input has a higher rank than the output");
  size_t off = outIdx.size() - in.size();
  std::vector<Expr> idx;
  for (size_t d = 0; d < in.size(); ++d)
    idx.push_back(in[d] == 1 ? imm(0) : outIdx[d + off]);
  return flatIndex(idx, in);
}

RowStats::RowStats(LowerCtx &c, const std::string &name, DataType t, int count, Expr row,
                   int64_t rows)
    : row_(std::move(row)), perRow_(c.options.statisticsPerRow) {
  if (!perRow_) {
    bufs_.push_back(Buffer::make(name, t, {count}, "local"));
    return;
  }
  for (int i = 0; i < count; ++i) {
    bufs_.push_back(Buffer::make(name + std::to_string(i), t, {rows}));
    c.allocated.push_back(bufs_.back());
  }
}

Expr RowStats::get(int i) const {
  return perRow_ ? load(bufs_[static_cast<size_t>(i)], row_) : load(bufs_[0], imm(i));
}

Stmt RowStats::set(int i, Expr v) const {
  return perRow_ ? store(bufs_[static_cast<size_t>(i)], std::move(v), row_)
                 : store(bufs_[0], std::move(v), imm(i));
}

Stmt RowStats::wrap(const std::vector<Var> &vars, const Shape &shape,
                    const std::vector<Stmt> &stages) const {
  if (!perRow_)
    return nest(vars, shape, AllocateNode::make(bufs_[0], seq(stages)));
  std::vector<Stmt> nests;
  for (const Stmt &s : stages) // each nest its own loop variables
    nests.push_back(freshCopy(nest(vars, shape, s)));
  return seq(nests);
}

Stmt nest(const std::vector<Var> &vars, const Shape &shape, Stmt body) {
  for (size_t d = vars.size(); d-- > 0;)
    body = forLoop(vars[d], imm(0), imm(shape[d]), body);
  return body;
}

std::vector<Expr> asExprs(const std::vector<Var> &vars) {
  return std::vector<Expr>(vars.begin(), vars.end());
}

int64_t normAxis(const graph::Node &n, int64_t axis, size_t rank) {
  auto r = static_cast<int64_t>(rank);
  int64_t a = axis < 0 ? axis + r : axis;
  if (a < 0 || a >= r)
    fail("node '{}' ({}): axis {} is out of range for rank {}", n.name, n.kind, axis, r);
  return a;
}

Expr f32(double v) {
  return fimm(v);
}

Expr clampIdx(Expr e, int64_t hi) {
  return max(min(std::move(e), imm(hi - 1)), imm(0));
}

Stmt lowerUnsupported(LowerCtx &, const graph::Node &n) {
  fail("node '{}' ({}): no TIR lowering for this operator", n.name, n.kind);
}

namespace {

using LowerRule = Stmt (*)(LowerCtx &, const graph::Node &);

// One lowering per OpKind, in Ops.def order.
constexpr LowerRule kLowerRules[] = {
#define NPUC_OP(Kind, Name, Family, Pattern, Traits, Shape, Ref, Lower) &lower##Lower,
#include "graph/Ops.def"
};
static_assert(std::size(kLowerRules) == graph::kNumOpKinds, "one lowering per OpKind");

Stmt lowerNode(LowerCtx &c, const graph::Node &n) {
  return kLowerRules[static_cast<size_t>(n.kind)](c, n);
}

} // namespace
} // namespace lower

PrimFunc lowerGroup(const graph::Graph &g, const graph::FusedGroup &grp,
                    std::vector<graph::ValueId> *paramValues, const LowerOptions &options) {
  lower::LowerCtx c(g, grp);
  c.options = options;
  std::vector<Buffer> ins, outs;
  for (graph::ValueId v : grp.inputs) {
    const graph::Value &val = g.value(v);
    Buffer b = Buffer::make(val.name, DataType::Float(32), val.shape);
    c.buffers[v] = b;
    ins.push_back(b);
  }
  for (graph::ValueId v : grp.outputs) {
    const graph::Value &val = g.value(v);
    if (lower::contains(grp.inputs, v))
      fail("group '{}': value '{}' is both an input and an output", grp.name, val.name);
    Buffer b = Buffer::make(val.name, DataType::Float(32), val.shape);
    c.buffers[v] = b;
    outs.push_back(b);
  }
  std::vector<Stmt> stmts;
  for (graph::NodeId id : grp.nodes) {
    const graph::Node &n = g.node(id);
    if (n.dead)
      continue;
    stmts.push_back(lower::lowerNode(c, n));
  }
  Stmt body = simplify(seq(stmts));
  for (size_t i = c.allocated.size(); i-- > 0;)
    body = AllocateNode::make(c.allocated[i], body);

  PrimFunc f;
  f.name = "group" + std::to_string(grp.id) + "_" + lower::sanitize(grp.name);
  f.params = ins;
  for (graph::ValueId v : c.constants)
    f.params.push_back(c.buffers.at(v));
  f.params.insert(f.params.end(), outs.begin(), outs.end());
  f.body = body;
  verify(f);
  if (paramValues) {
    *paramValues = grp.inputs;
    paramValues->insert(paramValues->end(), c.constants.begin(), c.constants.end());
    paramValues->insert(paramValues->end(), grp.outputs.begin(), grp.outputs.end());
  }
  return f;
}

} // namespace npuc::tir
