// RefRnn.cpp - the reference kernel of RNN, GRU and LSTM (RefInternal.h): ONNX's equations
// step by step in double precision, one batch entry and direction at a time.
//
//   RNN:  H = f(X W^T + H R^T + Wb + Rb)
//   GRU:  z = f(X Wz^T + H Rz^T + Wbz + Rbz),  r = f(X Wr^T + H Rr^T + Wbr + Rbr),
//         h = g(X Wh^T + (r * H) Rh^T + Rbh + Wbh)   (linear_before_reset: r * (H Rh^T + Rbh)),
//         H = (1 - z) * h + z * H
//   LSTM: i = f(X Wi^T + H Ri^T + Pi * C + Wbi + Rbi),  f = f(... Pf * C ...) (input_forget:
//         1 - i),  c = g(X Wc^T + H Rc^T + Wbc + Rbc),  C = f * C + i * c,
//         o = f(X Wo^T + H Ro^T + Po * C + Wbo + Rbo) (the new C),  H = o * h(C)
// `clip` bounds every gate's pre-activation (as onnxruntime does; not the cell state before h).
// With sequence_lens, batch entry b runs steps 0 .. len-1 (a reverse direction from len-1 down),
// Y is zero past len, and Y_h/Y_c hold the state after its last step (the initial state when
// len = 0). A length outside [0, seq_length] is an error naming the node.
#include "graph/RefInternal.h"
#include "graph/Reference.h"
#include "graph/Rnn.h"

#include <algorithm>
#include <cmath>

namespace npuc::graph {

namespace {

using Vec = std::vector<double>;

// Reads the operands in ONNX's index order; absent optional inputs read as zero.
struct Operands {
  const RnnSpec &s;
  const ref::RefArgs &a;

  double at(size_t input, int64_t flat) const {
    const HostTensor *t = a.opt(input);
    return t ? static_cast<double>(t->data[static_cast<size_t>(flat)]) : 0.0;
  }
  double x(int64_t t, int64_t b, int64_t i) const {
    int64_t row = s.batchFirst ? b * s.seqLength + t : t * s.batch + b;
    return at(kRnnX, row * s.inputSize + i);
  }
  // Row `row` (gate * H + j) of direction d: sum_i X[t, b, i] W[d, row, i] + Wb[d, row].
  double inputPart(int64_t d, int64_t row, int64_t t, int64_t b) const {
    const int64_t rows = s.gates * s.hidden;
    double acc = at(kRnnB, d * 2 * rows + row);
    for (int64_t i = 0; i < s.inputSize; ++i)
      acc += x(t, b, i) * at(kRnnW, (d * rows + row) * s.inputSize + i);
    return acc;
  }
  // sum_k h[k] R[d, row, k] + Rb[d, row].
  double hiddenPart(int64_t d, int64_t row, const Vec &h) const {
    const int64_t rows = s.gates * s.hidden;
    double acc = at(kRnnB, d * 2 * rows + rows + row);
    for (int64_t k = 0; k < s.hidden; ++k)
      acc += h[static_cast<size_t>(k)] * at(kRnnR, (d * rows + row) * s.hidden + k);
    return acc;
  }
  double peephole(int64_t d, int64_t gate, int64_t j) const {
    return at(kRnnP, d * 3 * s.hidden + gate * s.hidden + j);
  }
  // Activation `fn` of direction d on a clipped pre-activation.
  double act(int64_t d, int64_t fn, double v) const {
    if (s.clip)
      v = std::clamp(v, -*s.clip, *s.clip);
    return evalRnnActivation(s.act(d, fn), v);
  }
  // Element (d, b, j) of a state-shaped tensor (initial_h/initial_c, Y_h/Y_c).
  int64_t stateIndex(int64_t d, int64_t b, int64_t j) const {
    return ((s.batchFirst ? b * s.numDirections + d : d * s.batch + b) * s.hidden) + j;
  }
  int64_t yIndex(int64_t t, int64_t d, int64_t b, int64_t j) const {
    int64_t D = s.numDirections, B = s.batch, S = s.seqLength;
    return (s.batchFirst ? ((b * S + t) * D + d) * s.hidden : ((t * D + d) * B + b) * s.hidden) + j;
  }
};

// One time step t of direction d for batch entry b: h (and c, for LSTM) become the new state.
void step(const Operands &o, int64_t d, int64_t t, int64_t b, Vec &h, Vec &c) {
  const RnnSpec &s = o.s;
  const int64_t H = s.hidden;
  Vec nh(static_cast<size_t>(H));
  auto j_ = [](int64_t j) { return static_cast<size_t>(j); };
  if (s.kind == OpKind::RNN) {
    for (int64_t j = 0; j < H; ++j)
      nh[j_(j)] = o.act(d, 0, o.inputPart(d, j, t, b) + o.hiddenPart(d, j, h));
  } else if (s.kind == OpKind::GRU) {
    Vec z(j_(H)), r(j_(H)), rh(j_(H));
    for (int64_t j = 0; j < H; ++j) {
      z[j_(j)] = o.act(d, 0, o.inputPart(d, j, t, b) + o.hiddenPart(d, j, h));
      r[j_(j)] = o.act(d, 0, o.inputPart(d, H + j, t, b) + o.hiddenPart(d, H + j, h));
      rh[j_(j)] = r[j_(j)] * h[j_(j)];
    }
    for (int64_t j = 0; j < H; ++j) {
      const int64_t row = 2 * H + j;
      double pre = s.linearBeforeReset
                       ? o.inputPart(d, row, t, b) + r[j_(j)] * o.hiddenPart(d, row, h)
                       : o.inputPart(d, row, t, b) + o.hiddenPart(d, row, rh);
      nh[j_(j)] = (1 - z[j_(j)]) * o.act(d, 1, pre) + z[j_(j)] * h[j_(j)];
    }
  } else {
    // Gate rows: i = 0, o = H, f = 2H, c = 3H; peepholes P[i, o, f].
    auto pre = [&](int64_t gate, int64_t j) {
      return o.inputPart(d, gate * H + j, t, b) + o.hiddenPart(d, gate * H + j, h);
    };
    Vec nc(j_(H));
    for (int64_t j = 0; j < H; ++j) {
      double cp = c[j_(j)];
      double ig = o.act(d, 0, pre(0, j) + o.peephole(d, 0, j) * cp);
      double fg = s.inputForget ? 1 - ig : o.act(d, 0, pre(2, j) + o.peephole(d, 2, j) * cp);
      double cg = o.act(d, 1, pre(3, j));
      nc[j_(j)] = fg * cp + ig * cg;
      double og = o.act(d, 0, pre(1, j) + o.peephole(d, 1, j) * nc[j_(j)]);
      nh[j_(j)] = og * evalRnnActivation(s.act(d, 2), nc[j_(j)]);
    }
    c = nc;
  }
  h = nh;
}

} // namespace

void checkSequenceLens(const Node &n, int64_t seqLength, const HostTensor &lens) {
  NPUC_ASSERT(isRecurrentOp(n.kind), "only recurrent operators have sequence lengths");
  for (size_t b = 0; b < lens.data.size(); ++b) {
    float v = lens.data[b];
    if (!(v >= 0 && v <= static_cast<float>(seqLength)) || v != std::floor(v))
      fail("node '{}' ({}): sequence_lens[{}] = {} is not a length in [0, {}]", n.name, n.kind, b,
           v, seqLength);
  }
}

namespace ref {

RefResult refRnn(const RefArgs &a) {
  const RnnSpec s = rnnSpec(a.g, a.n);
  const Operands o{s, a};
  if (s.hasSequenceLens)
    checkSequenceLens(a.n, s.seqLength, a.in(kRnnSequenceLens));
  HostTensor y(s.yShape()), yh(s.stateShape()), yc(s.stateShape());
  const int64_t H = s.hidden;
  for (int64_t d = 0; d < s.numDirections; ++d)
    for (int64_t b = 0; b < s.batch; ++b) {
      int64_t len = s.seqLength;
      if (s.hasSequenceLens)
        len = static_cast<int64_t>(a.in(kRnnSequenceLens).data[static_cast<size_t>(b)]);
      Vec h(static_cast<size_t>(H)), c(static_cast<size_t>(H));
      for (int64_t j = 0; j < H; ++j) {
        h[static_cast<size_t>(j)] = o.at(kRnnInitialH, o.stateIndex(d, b, j));
        c[static_cast<size_t>(j)] = s.hasInitialC ? o.at(kRnnInitialC, o.stateIndex(d, b, j)) : 0;
      }
      for (int64_t k = 0; k < len; ++k) {
        int64_t t = s.reverse(d) ? len - 1 - k : k;
        step(o, d, t, b, h, c);
        for (int64_t j = 0; j < H; ++j)
          y.data[static_cast<size_t>(o.yIndex(t, d, b, j))] =
              static_cast<float>(h[static_cast<size_t>(j)]);
      }
      for (int64_t j = 0; j < H; ++j) {
        yh.data[static_cast<size_t>(o.stateIndex(d, b, j))] =
            static_cast<float>(h[static_cast<size_t>(j)]);
        yc.data[static_cast<size_t>(o.stateIndex(d, b, j))] =
            static_cast<float>(c[static_cast<size_t>(j)]);
      }
    }
  RefResult out{y, yh};
  if (s.kind == OpKind::LSTM)
    out.push_back(yc);
  out.resize(a.n.outputs.size());
  return out;
}

} // namespace ref

} // namespace npuc::graph
