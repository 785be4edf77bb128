// LowerRnn.cpp - CPU lowering of RNN, GRU and LSTM (LowerInternal.h): per direction (unrolled
// here, since it fixes the time order) a loop over the batch whose body runs the time loop
// sequentially, carrying the hidden (and cell) state in scratch buffers. Each step computes the
// gates' pre-activations as dot products into a gate buffer, then the state update; the
// equations and the sequence_lens rules are graph/RefRnn.cpp's. A runtime sequence length is
// clamped to [0, seq_length] here (the runtime checks it first, tools/driver/Runtime.cpp).
#include "graph/Rnn.h"
#include "lowering/LowerInternal.h"
#include "support/Error.h"

#include <cmath>

namespace npuc::tir::lower {
namespace {

using graph::RnnActivation;
using graph::RnnSpec;

const DataType kF = DataType::Float(32);

Expr fcall(const char *name, Expr x) {
  return call(kF, name, {std::move(x)});
}

// The activation applied to x (a load: cheap to repeat in a select).
Expr actExpr(const graph::RnnAct &a, const Expr &x) {
  Expr al = f32(a.alpha), be = f32(a.beta);
  switch (a.fn) {
  case RnnActivation::Relu:
    return max(x, f32(0));
  case RnnActivation::Tanh:
    return fcall("tanh", x);
  case RnnActivation::Sigmoid:
    return f32(1) / (f32(1) + fcall("exp", -x));
  case RnnActivation::Affine:
    return al * x + be;
  case RnnActivation::LeakyRelu:
    return select(x >= f32(0), x, al * x);
  case RnnActivation::ThresholdedRelu:
    return select(x >= al, x, f32(0));
  case RnnActivation::ScaledTanh:
    return al * fcall("tanh", be * x);
  case RnnActivation::HardSigmoid:
    return min(max(al * x + be, f32(0)), f32(1));
  case RnnActivation::Elu:
    return select(x >= f32(0), x, al * fcall("expm1", x));
  case RnnActivation::Softsign:
    return x / (f32(1) + fcall("fabs", x));
  case RnnActivation::Softplus: // exp overflows fp32 beyond ~88; log1p(exp(x)) == x to fp32 there
    return select(x > f32(30), x, fcall("log1p", fcall("exp", x)));
  }
  NPUC_ASSERT(false, "every RnnActivation is lowered");
  return x;
}

// The buffers of one node and the index arithmetic of its operands.
struct Rnn {
  const RnnSpec &s;
  Buffer x, w, r, bias, lens, h0, c0, p; // absent optional inputs: undefined
  Buffer y, yh, yc;                      // yh/yc: the node's outputs or scratch
  Buffer h, c, g, q; // scratch: state, cell, gate values, GRU's dot product (q[0]) and r * h
  int64_t rows() const { return s.gates * s.hidden; }

  Expr xAt(const Expr &t, const Expr &b, const Expr &i) const {
    return load(x, (s.batchFirst ? b * s.seqLength + t : t * s.batch + b) * s.inputSize + i);
  }
  Expr stateIndex(int64_t d, const Expr &b, const Expr &j) const {
    return (s.batchFirst ? b * s.numDirections + d : imm(d * s.batch) + b) * s.hidden + j;
  }
  Expr yIndex(const Expr &t, int64_t d, const Expr &b, const Expr &j) const {
    const int64_t D = s.numDirections, H = s.hidden;
    return s.batchFirst ? ((b * s.seqLength + t) * D + d) * H + j
                        : ((t * D + d) * s.batch + b) * H + j;
  }
  // Activation `fn` of direction d on a pre-activation, clipped when the node clips.
  Expr act(int64_t d, int64_t fn, Expr v) const {
    if (s.clip)
      v = min(max(std::move(v), f32(-*s.clip)), f32(*s.clip));
    return actExpr(s.act(d, fn), v);
  }
  Expr gate(const Expr &row) const { return load(g, row); }
};

// g[row] = (Wb + Rb)[row] + sum_i X[t, b, i] W[d, row, i] (+ sum_k h[k] R[d, row, k]) for rows
// [lo, hi); `withHidden` = false leaves the recurrent part (and Rb) out.
Stmt gateRows(LowerCtx &c, const Rnn &m, int64_t d, const Expr &t, const Expr &b, int64_t lo,
              int64_t hi, bool withHidden) {
  Var row = c.var("row"), i = c.var("i"), k = c.var("k");
  const int64_t R = m.rows(), H = m.s.hidden, I = m.s.inputSize;
  Expr init = f32(0);
  if (m.bias.defined()) {
    init = load(m.bias, imm(d * 2 * R) + row);
    if (withHidden)
      init = init + load(m.bias, imm(d * 2 * R + R) + row);
  }
  std::vector<Stmt> body{store(m.g, init, row)};
  body.push_back(forLoop(
      i, imm(0), imm(I),
      store(m.g, m.gate(row) + m.xAt(t, b, i) * load(m.w, (imm(d * R) + row) * I + i), row)));
  if (withHidden)
    body.push_back(forLoop(
        k, imm(0), imm(H),
        store(m.g, m.gate(row) + load(m.h, k) * load(m.r, (imm(d * R) + row) * H + k), row)));
  return forLoop(row, imm(lo), imm(hi - lo), seq(body));
}

// sum_k v[k] R[d, row, k] + Rb[d, row] for one row of GRU's h gate, accumulated in q[0]: the
// statements go to `pre`, the sum is returned. v is the state h, or r * h kept in q[1 .. H].
Expr hiddenDot(LowerCtx &c, const Rnn &m, int64_t d, const Expr &row, const Buffer &v,
               std::vector<Stmt> &pre) {
  Var k = c.var("k");
  const int64_t R = m.rows(), H = m.s.hidden;
  const int64_t off = v.same(m.q) ? 1 : 0;
  Expr rb = m.bias.defined() ? load(m.bias, imm(d * 2 * R + R) + row) : f32(0);
  pre.push_back(store(m.q, rb, imm(0)));
  pre.push_back(forLoop(
      k, imm(0), imm(H),
      store(m.q, load(m.q, imm(0)) + load(v, k + off) * load(m.r, (imm(d * R) + row) * H + k),
            imm(0))));
  return load(m.q, imm(0));
}

// One time step t of direction d for batch entry b (RNN, GRU or LSTM).
Stmt stepStmt(LowerCtx &c, const Rnn &m, int64_t d, const Expr &t, const Expr &b) {
  const RnnSpec &s = m.s;
  const int64_t H = s.hidden;
  Var j = c.var("j");
  std::vector<Stmt> out;
  std::vector<Stmt> per; // the statements of the final loop over j
  if (s.kind == graph::OpKind::RNN) {
    out.push_back(gateRows(c, m, d, t, b, 0, H, true));
    per.push_back(store(m.h, m.act(d, 0, m.gate(j)), j));
  } else if (s.kind == graph::OpKind::GRU) {
    // z, r complete; the h gate's input part now, its recurrent part below.
    out.push_back(gateRows(c, m, d, t, b, 0, 2 * H, true));
    out.push_back(gateRows(c, m, d, t, b, 2 * H, 3 * H, false));
    Var jr = c.var("j"), ja = c.var("j");
    out.push_back(forLoop(jr, imm(0), imm(2 * H), store(m.g, m.act(d, 0, m.gate(jr)), jr)));
    Expr row = ja + 2 * H;
    std::vector<Stmt> hGate;
    if (s.linearBeforeReset) {
      Expr dot = hiddenDot(c, m, d, row, m.h, hGate);
      hGate.push_back(store(m.g, m.act(d, 1, m.gate(row) + m.gate(ja + H) * dot), row));
    } else {
      Var jq = c.var("j"); // (r * h) R_h^T reads every r * h
      out.push_back(
          forLoop(jq, imm(0), imm(H), store(m.q, m.gate(jq + H) * load(m.h, jq), jq + 1)));
      Expr dot = hiddenDot(c, m, d, row, m.q, hGate);
      hGate.push_back(store(m.g, m.act(d, 1, m.gate(row) + dot), row));
    }
    // Every row of the h gate reads the old state, so the update is a loop of its own.
    out.push_back(forLoop(ja, imm(0), imm(H), seq(hGate)));
    Expr z = m.gate(j);
    per.push_back(store(m.h, (f32(1) - z) * m.gate(j + 2 * H) + z * load(m.h, j), j));
  } else {
    // Gate rows: i = 0, o = H, f = 2H, c = 3H; peepholes P[d] = [Pi, Po, Pf].
    out.push_back(gateRows(c, m, d, t, b, 0, 4 * H, true));
    auto peep = [&](int64_t gate, Expr v) {
      return m.p.defined() ? load(m.p, imm(d * 3 * H + gate * H) + j) * v : f32(0);
    };
    Expr cp = load(m.c, j);
    per.push_back(store(m.g, m.act(d, 0, m.gate(j) + peep(0, cp)), j));
    Expr fg = s.inputForget ? f32(1) - m.gate(j) : m.act(d, 0, m.gate(j + 2 * H) + peep(2, cp));
    per.push_back(store(m.g, fg, j + 2 * H));
    per.push_back(store(m.g, m.act(d, 1, m.gate(j + 3 * H)), j + 3 * H));
    per.push_back(store(m.c, m.gate(j + 2 * H) * cp + m.gate(j) * m.gate(j + 3 * H), j));
    per.push_back(store(m.g, m.act(d, 0, m.gate(j + H) + peep(1, load(m.c, j))), j + H));
    per.push_back(store(m.h, m.gate(j + H) * actExpr(s.act(d, 2), load(m.c, j)), j));
  }
  per.push_back(store(m.y, load(m.h, j), m.yIndex(t, d, b, j)));
  out.push_back(forLoop(j, imm(0), imm(H), seq(per)));
  return seq(out);
}

// Direction d over the whole batch: initial state, the time loop, the final state.
Stmt directionStmt(LowerCtx &c, const Rnn &m, int64_t d) {
  const RnnSpec &s = m.s;
  const int64_t H = s.hidden, S = s.seqLength;
  Var b = c.var("b"), k = c.var("k"), j0 = c.var("j"), j1 = c.var("j");
  Expr len = imm(S);
  if (m.lens.defined())
    len = max(min(cast(DataType::Int(64), load(m.lens, b)), imm(S)), imm(0));
  Expr t = s.reverse(d) ? len - 1 - k : Expr(k);
  Stmt step = stepStmt(c, m, d, t, b);
  if (m.lens.defined())
    step = IfThenElseNode::make(k < len, step);
  auto state = [&](const Buffer &src, const Var &j) {
    return src.defined() ? load(src, m.stateIndex(d, b, j)) : f32(0);
  };
  Stmt init = forLoop(j0, imm(0), imm(H),
                      seq({store(m.h, state(m.h0, j0), j0), store(m.c, state(m.c0, j0), j0)}));
  Stmt fin = forLoop(j1, imm(0), imm(H),
                     seq({store(m.yh, load(m.h, j1), m.stateIndex(d, b, j1)),
                          store(m.yc, load(m.c, j1), m.stateIndex(d, b, j1))}));
  return forLoop(b, imm(0), imm(s.batch), seq({init, forLoop(k, imm(0), imm(S), step), fin}));
}

} // namespace

Stmt lowerRnn(LowerCtx &c, const graph::Node &n) {
  const RnnSpec s = graph::rnnSpec(c.g, n);
  auto opt = [&](size_t i) { return c.hasInput(n, i) ? c.input(n, i) : Buffer(); };
  Rnn m{s,
        c.input(n, graph::kRnnX),
        c.input(n, graph::kRnnW),
        c.input(n, graph::kRnnR),
        opt(graph::kRnnB),
        opt(graph::kRnnSequenceLens),
        opt(graph::kRnnInitialH),
        s.hasInitialC ? opt(graph::kRnnInitialC) : Buffer(),
        s.hasPeepholes ? opt(graph::kRnnP) : Buffer(),
        {},
        {},
        {},
        {},
        {},
        {},
        {}};
  m.y = c.output(n, 0);
  const std::string base = m.y->name;
  std::vector<Buffer> scratch;
  auto outOrScratch = [&](size_t i, const char *suffix) {
    if (i < n.outputs.size())
      return c.output(n, i);
    scratch.push_back(Buffer::make(base + suffix, kF, s.stateShape(), "local"));
    return scratch.back();
  };
  m.yh = outOrScratch(1, "_yh");
  m.yc = outOrScratch(2, "_yc");
  m.h = Buffer::make(base + "_h", kF, {s.hidden}, "local");
  m.c = Buffer::make(base + "_c", kF, {s.hidden}, "local");
  m.g = Buffer::make(base + "_gates", kF, {m.rows()}, "local");
  m.q = Buffer::make(base + "_dot", kF, {1 + s.hidden}, "local");
  scratch.insert(scratch.end(), {m.h, m.c, m.g, m.q});
  std::vector<Stmt> body;
  if (s.hasSequenceLens) { // steps past a sequence's length leave zeros in Y
    std::vector<Var> iv = c.vars(m.y->shape.size(), "i");
    body.push_back(nest(iv, m.y->shape, store(m.y, f32(0), flatIndex(asExprs(iv), m.y->shape))));
  }
  for (int64_t d = 0; d < s.numDirections; ++d)
    body.push_back(directionStmt(c, m, d));
  Stmt st = seq(body);
  for (size_t i = scratch.size(); i-- > 0;)
    st = AllocateNode::make(scratch[i], st);
  return st;
}

} // namespace npuc::tir::lower
