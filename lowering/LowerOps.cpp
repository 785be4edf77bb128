// LowerOps.cpp - lowerGroup's driver, the index helpers, and the elementwise / data-movement
// ops (broadcasting binaries, activations, Clip, BatchNormalization, reshapes, Transpose, Concat,
// Pad). Reductions and windowed ops are in LowerNN.cpp.
#include "lowering/LowerOps.h"

#include "lowering/LowerInternal.h"
#include "support/Error.h"
#include "tir/Simplify.h"
#include "tir/Verify.h"

#include <algorithm>
#include <cmath>
#include <limits>

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

namespace {

Stmt lowerElementwise(LowerCtx &c, const graph::Node &n) {
  Buffer out = c.output(n, 0);
  std::vector<Var> iv = c.vars(out->shape.size(), "i");
  std::vector<Expr> idx = asExprs(iv);
  auto operand = [&](size_t i) {
    Buffer b = c.input(n, i);
    return load(b, broadcastIndex(b->shape, idx));
  };
  const OpKind op = n.kind;
  Expr v;
  if (op == OpKind::Add || op == OpKind::Sub || op == OpKind::Mul || op == OpKind::Div ||
      op == OpKind::Max || op == OpKind::Min) {
    if (n.inputs.empty())
      fail("node '{}' ({}): no inputs", n.name, op);
    if (n.inputs.size() != 2 && op != OpKind::Max && op != OpKind::Min)
      fail("node '{}' ({}): expects 2 inputs, has {}", n.name, op, n.inputs.size());
    v = operand(0);
    for (size_t i = 1; i < n.inputs.size(); ++i) {
      Expr b = operand(i);
      v = op == OpKind::Add   ? v + b
          : op == OpKind::Sub ? v - b
          : op == OpKind::Mul ? v * b
          : op == OpKind::Div ? v / b
          : op == OpKind::Max ? max(v, b)
                              : min(v, b);
    }
  } else {
    Expr x = operand(0);
    DataType t = DataType::Float(32);
    if (op == OpKind::Relu) {
      v = select(x > f32(0), x, f32(0));
    } else if (op == OpKind::Sigmoid) {
      v = f32(1) / (f32(1) + call(t, "exp", {-x}));
    } else if (op == OpKind::Tanh) {
      v = call(t, "tanh", {x});
    } else if (op == OpKind::Exp) {
      v = call(t, "exp", {x});
    } else if (op == OpKind::Clip) {
      v = x;
      if (n.hasAttr("min"))
        v = max(v, f32(n.attrFloat("min", 0)));
      if (n.hasAttr("max"))
        v = min(v, f32(n.attrFloat("max", 0)));
    } else if (op == OpKind::BatchNormalization) {
      if (n.inputs.size() < 5)
        fail("node '{}' (BatchNormalization): expects 5 inputs, has {}", n.name, n.inputs.size());
      if (out->shape.size() < 2)
        fail("node '{}' (BatchNormalization): input rank must be >= 2", n.name);
      double eps = n.attrFloat("epsilon", 1e-5);
      Expr ch = iv[1];
      Expr scale = load(c.input(n, 1), ch), bias = load(c.input(n, 2), ch);
      Expr mean = load(c.input(n, 3), ch), var = load(c.input(n, 4), ch);
      v = (x - mean) / call(t, "sqrt", {var + f32(eps)}) * scale + bias;
    } else {
      NPUC_ASSERT(false, fmt::format("lowerElementwise called for {}", op));
    }
  }
  return nest(iv, out->shape, store(out, v, flatIndex(idx, out->shape)));
}

// Reshape-like ops keep the row-major element order: a flat copy.
Stmt lowerCopy(LowerCtx &c, const graph::Node &n) {
  Buffer in = c.input(n, 0), out = c.output(n, 0);
  if (in->numElements() != out->numElements())
    fail("node '{}' ({}): {} input elements but {} output elements", n.name, n.kind,
         in->numElements(), out->numElements());
  Var i = c.var("i");
  return forLoop(i, imm(0), imm(out->numElements()), store(out, load(in, i), i));
}

Stmt lowerTranspose(LowerCtx &c, const graph::Node &n) {
  Buffer in = c.input(n, 0), out = c.output(n, 0);
  size_t r = in->shape.size();
  std::vector<int64_t> perm = n.attrInts("perm");
  if (perm.empty())
    for (size_t d = 0; d < r; ++d)
      perm.push_back(static_cast<int64_t>(r - 1 - d));
  if (perm.size() != r)
    fail("node '{}' (Transpose): perm has {} entries for rank {}", n.name, perm.size(), r);
  std::vector<Var> iv = c.vars(r, "i");
  std::vector<Expr> inIdx(r);
  for (size_t d = 0; d < r; ++d) {
    int64_t p = perm[d];
    if (p < 0 || p >= static_cast<int64_t>(r) || inIdx[static_cast<size_t>(p)].defined())
      fail("node '{}' (Transpose): perm is not a permutation of 0..{}", n.name, r - 1);
    inIdx[static_cast<size_t>(p)] = iv[d];
  }
  return nest(
      iv, out->shape,
      store(out, load(in, flatIndex(inIdx, in->shape)), flatIndex(asExprs(iv), out->shape)));
}

Stmt lowerConcat(LowerCtx &c, const graph::Node &n) {
  Buffer out = c.output(n, 0);
  size_t axis = static_cast<size_t>(normAxis(n, n.attrInt("axis", 0), out->shape.size()));
  std::vector<Stmt> parts;
  int64_t pos = 0;
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    Buffer in = c.input(n, k);
    std::vector<Var> iv = c.vars(in->shape.size(), "i");
    std::vector<Expr> outIdx = asExprs(iv);
    outIdx[axis] = outIdx[axis] + pos;
    parts.push_back(nest(
        iv, in->shape,
        store(out, load(in, flatIndex(asExprs(iv), in->shape)), flatIndex(outIdx, out->shape))));
    pos += in->shape[axis];
  }
  if (pos != out->shape[axis])
    fail("node '{}' (Concat): inputs sum to {} along axis {}, output has {}", n.name, pos, axis,
         out->shape[axis]);
  return seq(parts);
}

Stmt lowerPad(LowerCtx &c, const graph::Node &n) {
  if (n.attrString("mode", "constant") != "constant")
    fail("node '{}' (Pad): only mode=constant is supported, got '{}'", n.name,
         n.attrString("mode", ""));
  Buffer in = c.input(n, 0), out = c.output(n, 0);
  size_t r = in->shape.size();
  std::vector<int64_t> pads = n.attrInts("pads");
  if (pads.size() != 2 * r)
    fail("node '{}' (Pad): pads has {} entries for rank {}", n.name, pads.size(), r);
  std::vector<Var> iv = c.vars(r, "i");
  std::vector<Expr> inIdx;
  Expr inside = IntImmNode::make(1, DataType::Bool());
  for (size_t d = 0; d < r; ++d) {
    Expr x = iv[d] - pads[d];
    inside = inside && (x >= 0) && (x < in->shape[d]);
    inIdx.push_back(clampIdx(x, in->shape[d]));
  }
  Expr v = select(simplify(inside), load(in, flatIndex(inIdx, in->shape)),
                  f32(n.attrFloat("value", 0.0)));
  return nest(iv, out->shape, store(out, v, flatIndex(asExprs(iv), out->shape)));
}

Stmt lowerNode(LowerCtx &c, const graph::Node &n) {
  const OpKind op = n.kind;
  if (op == OpKind::Add || op == OpKind::Sub || op == OpKind::Mul || op == OpKind::Div ||
      op == OpKind::Max || op == OpKind::Min || op == OpKind::Relu || op == OpKind::Sigmoid ||
      op == OpKind::Tanh || op == OpKind::Exp || op == OpKind::Clip ||
      op == OpKind::BatchNormalization)
    return lowerElementwise(c, n);
  if (op == OpKind::Identity || op == OpKind::Reshape || op == OpKind::Flatten ||
      op == OpKind::Squeeze || op == OpKind::Unsqueeze || op == OpKind::Dropout)
    return lowerCopy(c, n);
  if (op == OpKind::Transpose)
    return lowerTranspose(c, n);
  if (op == OpKind::Concat)
    return lowerConcat(c, n);
  if (op == OpKind::Pad)
    return lowerPad(c, n);
  if (op == OpKind::Conv)
    return lowerConv(c, n);
  if (op == OpKind::MaxPool || op == OpKind::AveragePool)
    return lowerPool(c, n);
  if (op == OpKind::GlobalAveragePool)
    return lowerGlobalAveragePool(c, n);
  if (op == OpKind::Gemm)
    return lowerGemm(c, n);
  if (op == OpKind::MatMul)
    return lowerMatMul(c, n);
  if (op == OpKind::Softmax)
    return lowerSoftmax(c, n);
  if (Stmt s = lowerExtMath(c, n); s.defined())
    return s;
  if (Stmt s = lowerExtData(c, n); s.defined())
    return s;
  fail("node '{}' ({}): no TIR lowering for this operator", n.name, op);
}

} // namespace
} // namespace lower

PrimFunc lowerGroup(const graph::Graph &g, const graph::FusedGroup &grp,
                    std::vector<graph::ValueId> *paramValues) {
  lower::LowerCtx c(g, grp);
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
