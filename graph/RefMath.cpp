// RefMath.cpp - reference kernels of the elementwise and reduction ops (RefInternal.h): the core
// arithmetic and activations, the extended unary maps, broadcasting comparisons/logic/Pow/Mod/
// Where, Reduce*/ArgMax, Softmax and the normalisations (Layer/Instance/Lp/LRN), LogSoftmax/
// Hardmax, CumSum, TopK. Textbook loops in double precision: these are the oracle the CPU
// fallback and the NPU are compared against.
#include "graph/ExtOps.h"
#include "graph/RefInternal.h"

#include "support/Error.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace npuc::graph {

double evalUnary(const Node &n, double x) {
  const OpKind op = n.kind;
  switch (op) {
  case OpKind::Abs:
    return std::fabs(x);
  case OpKind::Neg:
    return -x;
  case OpKind::Sqrt:
    return std::sqrt(x);
  case OpKind::Log:
    return std::log(x);
  case OpKind::Erf:
    return std::erf(x);
  case OpKind::Reciprocal:
    return 1.0 / x;
  case OpKind::Floor:
    return std::floor(x);
  case OpKind::Ceil:
    return std::ceil(x);
  case OpKind::Round:
    return std::nearbyint(x); // default rounding mode: halves to even, as ONNX specifies
  case OpKind::Sin:
    return std::sin(x);
  case OpKind::Cos:
    return std::cos(x);
  case OpKind::Tan:
    return std::tan(x);
  case OpKind::Asin:
    return std::asin(x);
  case OpKind::Acos:
    return std::acos(x);
  case OpKind::Atan:
    return std::atan(x);
  case OpKind::Sinh:
    return std::sinh(x);
  case OpKind::Cosh:
    return std::cosh(x);
  case OpKind::Asinh:
    return std::asinh(x);
  case OpKind::Acosh:
    return std::acosh(x);
  case OpKind::Atanh:
    return std::atanh(x);
  case OpKind::Sign:
    return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0;
  case OpKind::Softplus:
    return std::log1p(std::exp(x));
  case OpKind::Softsign:
    return x / (1.0 + std::fabs(x));
  case OpKind::LeakyRelu:
    return x < 0 ? n.attrFloat("alpha", 0.01) * x : x;
  case OpKind::Elu:
    return x < 0 ? n.attrFloat("alpha", 1.0) * (std::exp(x) - 1.0) : x;
  case OpKind::Selu: {
    double a = n.attrFloat("alpha", 1.67326319217681884765625);
    double gm = n.attrFloat("gamma", 1.05070102214813232421875);
    return x > 0 ? gm * x : gm * (a * std::exp(x) - a);
  }
  case OpKind::Celu: {
    double a = n.attrFloat("alpha", 1.0);
    return std::max(0.0, x) + std::min(0.0, a * (std::exp(x / a) - 1.0));
  }
  case OpKind::HardSigmoid:
    return std::clamp(n.attrFloat("alpha", 0.2) * x + n.attrFloat("beta", 0.5), 0.0, 1.0);
  case OpKind::HardSwish:
    return x * std::clamp(x / 6.0 + 0.5, 0.0, 1.0);
  case OpKind::ThresholdedRelu:
    return x > n.attrFloat("alpha", 1.0) ? x : 0.0;
  case OpKind::Shrink: {
    double l = n.attrFloat("lambd", 0.5), b = n.attrFloat("bias", 0.0);
    return x < -l ? x + b : x > l ? x - b : 0.0;
  }
  case OpKind::Gelu: {
    if (n.attrString("approximate", "none") == "tanh")
      return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
  }
  case OpKind::Not:
    return x == 0 ? 1.0 : 0.0;
  case OpKind::IsNaN:
    return std::isnan(x) ? 1.0 : 0.0;
  case OpKind::IsInf:
    return (std::isinf(x) && ((x > 0 && n.attrInt("detect_positive", 1)) ||
                              (x < 0 && n.attrInt("detect_negative", 1))))
               ? 1.0
               : 0.0;
  default:
    break;
  }
  fail("node '{}' ({}): not a unary operator", n.name, op);
}

double evalBinary(const Node &n, double a, double b) {
  const OpKind op = n.kind;
  switch (op) {
  case OpKind::Pow:
    return std::pow(a, b);
  case OpKind::Mod:
    return n.attrInt("fmod", 0) ? std::fmod(a, b) : a - std::floor(a / b) * b;
  case OpKind::Equal:
    return a == b;
  case OpKind::Less:
    return a < b;
  case OpKind::Greater:
    return a > b;
  case OpKind::LessOrEqual:
    return a <= b;
  case OpKind::GreaterOrEqual:
    return a >= b;
  case OpKind::And:
    return a != 0 && b != 0;
  case OpKind::Or:
    return a != 0 || b != 0;
  case OpKind::Xor:
    return (a != 0) != (b != 0);
  case OpKind::PRelu:
    return a < 0 ? a * b : a;
  case OpKind::Sum:
  case OpKind::Mean:
    return a + b;
  default:
    break;
  }
  fail("node '{}' ({}): not a binary operator", n.name, op);
}

namespace ref {

namespace {

HostTensor binary(const std::vector<const HostTensor *> &ins, const Shape &outShape,
                  double (*op)(double, double)) {
  // Variadic Max/Min fold left; every operand broadcasts to the output shape, so each step's
  // result can already have the output shape.
  HostTensor acc = *ins[0];
  for (size_t k = 1; k < ins.size(); ++k) {
    HostTensor next(outShape);
    std::vector<Index> st{broadcastStrides(acc.shape, outShape),
                          broadcastStrides(ins[k]->shape, outShape)};
    forEachBroadcast(outShape, st, [&](int64_t o, const std::vector<int64_t> &off) {
      next.data[o] = static_cast<float>(op(acc.data[off[0]], ins[k]->data[off[1]]));
    });
    acc = std::move(next);
  }
  NPUC_ASSERT(acc.shape == outShape, "elementwise ops with one input do not broadcast");
  return acc;
}

HostTensor unary(const HostTensor &x, double (*op)(double)) {
  HostTensor out(x.shape);
  for (int64_t i = 0; i < x.size(); ++i)
    out.data[i] = static_cast<float>(op(x.data[i]));
  return out;
}

double relu(double v) {
  return v > 0 ? v : 0;
}
double sigmoid(double v) {
  return 1.0 / (1.0 + std::exp(-v));
}
double tanhF(double v) {
  return std::tanh(v);
}
double expF(double v) {
  return std::exp(v);
}
double add(double a, double b) {
  return a + b;
}
double sub(double a, double b) {
  return a - b;
}
double mul(double a, double b) {
  return a * b;
}
double divF(double a, double b) {
  return a / b;
}
double maxF(double a, double b) {
  return std::max(a, b);
}
double minF(double a, double b) {
  return std::min(a, b);
}

HostTensor softmax(const HostTensor &x, int64_t axis) {
  int64_t r = static_cast<int64_t>(x.shape.size());
  axis = axis < 0 ? axis + r : axis;
  int64_t outer = numElements(Shape(x.shape.begin(), x.shape.begin() + axis));
  int64_t len = x.shape[static_cast<size_t>(axis)];
  int64_t inner = numElements(Shape(x.shape.begin() + axis + 1, x.shape.end()));
  HostTensor out(x.shape);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t k) { return (o * len + k) * inner + i; };
      double mx = -std::numeric_limits<double>::infinity(), sum = 0;
      for (int64_t k = 0; k < len; ++k)
        mx = std::max(mx, static_cast<double>(x.data[at(k)]));
      for (int64_t k = 0; k < len; ++k)
        sum += std::exp(x.data[at(k)] - mx);
      for (int64_t k = 0; k < len; ++k)
        out.data[at(k)] = static_cast<float>(std::exp(x.data[at(k)] - mx) / sum);
    }
  return out;
}

HostTensor broadcastOp(const Node &n, const std::vector<const HostTensor *> &ins, const Shape &os) {
  HostTensor out(os);
  if (n.kind == OpKind::Where) {
    std::vector<Index> st;
    for (size_t k = 0; k < 3; ++k)
      st.push_back(ref::broadcastStrides(ins[k]->shape, os));
    ref::forEachBroadcast(os, st, [&](int64_t o, const std::vector<int64_t> &off) {
      out.data[o] = ins[0]->data[off[0]] != 0 ? ins[1]->data[off[1]] : ins[2]->data[off[2]];
    });
    return out;
  }
  std::vector<double> acc(out.data.size());
  for (size_t k = 0; k < ins.size(); ++k) {
    Index st = ref::broadcastStrides(ins[k]->shape, os);
    ref::forEachBroadcast(os, {st}, [&](int64_t o, const std::vector<int64_t> &off) {
      double v = ins[k]->data[off[0]];
      acc[o] = k == 0 ? v : evalBinary(n, acc[o], v);
    });
  }
  double scale = n.kind == OpKind::Mean ? 1.0 / static_cast<double>(ins.size()) : 1.0;
  for (size_t i = 0; i < acc.size(); ++i)
    out.data[i] = static_cast<float>(acc[i] * scale);
  return out;
}

// Splits x around `axis` into outer x len x inner (the usual softmax-style view).
struct AxisView {
  int64_t outer, len, inner;
  int64_t at(int64_t o, int64_t k, int64_t i) const { return (o * len + k) * inner + i; }
};
AxisView axisView(const Shape &s, int64_t axis) {
  auto a = static_cast<size_t>(axis);
  return {numElements(Shape(s.begin(), s.begin() + axis)), s[a],
          numElements(Shape(s.begin() + axis + 1, s.end()))};
}

HostTensor reduce(const Node &n, const HostTensor &x, const Shape &os) {
  const OpKind op = n.kind;
  size_t r = x.shape.size();
  std::vector<bool> red(r, false);
  bool arg = op == OpKind::ArgMax || op == OpKind::ArgMin;
  if (arg) {
    red[static_cast<size_t>(n.attrInt("axis", 0))] = true;
  } else {
    auto axes = n.attrInts("axes");
    for (size_t d = 0; d < r; ++d)
      red[d] = axes.empty();
    for (int64_t a : axes)
      red[static_cast<size_t>(a)] = true;
  }
  Shape keep = x.shape;
  for (size_t d = 0; d < r; ++d)
    if (red[d])
      keep[d] = 1;
  Index kst = ref::stridesOf(keep), xst = ref::stridesOf(x.shape);
  int64_t outN = numElements(keep);
  double init = op == OpKind::ReduceMax    ? -std::numeric_limits<double>::infinity()
                : op == OpKind::ReduceMin  ? std::numeric_limits<double>::infinity()
                : op == OpKind::ReduceProd ? 1.0
                                           : 0.0;
  std::vector<double> acc(static_cast<size_t>(outN), init), best(acc.size());
  std::vector<int64_t> cnt(acc.size(), 0);
  bool last = n.attrInt("select_last_index", 0) != 0;
  for (int64_t i = 0; i < x.size(); ++i) {
    int64_t o = 0, pos = 0;
    for (size_t d = 0; d < r; ++d) {
      int64_t c = (i / xst[d]) % x.shape[d];
      if (!red[d])
        o += c * kst[d];
      else
        pos = c;
    }
    double v = x.data[i];
    auto u = static_cast<size_t>(o);
    if (arg) {
      bool better = cnt[u] == 0 || (op == OpKind::ArgMax ? (last ? v >= best[u] : v > best[u])
                                                         : (last ? v <= best[u] : v < best[u]));
      if (better) {
        best[u] = v;
        acc[u] = static_cast<double>(pos);
      }
    } else if (op == OpKind::ReduceMax) {
      acc[u] = std::max(acc[u], v);
    } else if (op == OpKind::ReduceMin) {
      acc[u] = std::min(acc[u], v);
    } else if (op == OpKind::ReduceProd) {
      acc[u] *= v;
    } else if (op == OpKind::ReduceL1) {
      acc[u] += std::fabs(v);
    } else if (op == OpKind::ReduceL2 || op == OpKind::ReduceSumSquare) {
      acc[u] += v * v;
    } else if (op == OpKind::ReduceLogSumExp) {
      acc[u] += std::exp(v);
    } else {
      acc[u] += v; // Sum, Mean, LogSum
    }
    ++cnt[u];
  }
  HostTensor out(os);
  for (size_t u = 0; u < acc.size(); ++u) {
    double v = acc[u];
    if (op == OpKind::ReduceMean)
      v /= static_cast<double>(cnt[u]);
    else if (op == OpKind::ReduceL2)
      v = std::sqrt(v);
    else if (op == OpKind::ReduceLogSum || op == OpKind::ReduceLogSumExp)
      v = std::log(v);
    out.data[u] = static_cast<float>(v);
  }
  return out;
}

// (x - mean) / sqrt(var + eps) over blocks of `len` consecutive elements; scale/bias indexed by
// the element's position inside the block (LayerNorm) or by the block's channel (InstanceNorm).
HostTensor normalize(const Node &n, const std::vector<const HostTensor *> &ins) {
  const HostTensor &x = *ins[0];
  double eps = n.attrFloat("epsilon", 1e-5);
  bool layer = n.kind == OpKind::LayerNormalization;
  int64_t axis = layer ? n.attrInt("axis", -1) : 2;
  Shape norm(x.shape.begin() + axis, x.shape.end());
  int64_t len = numElements(norm), blocks = x.size() / std::max<int64_t>(len, 1);
  HostTensor out(x.shape);
  Index sst, bst;
  if (layer) {
    sst = ref::broadcastStrides(ins[1]->shape, norm);
    if (ins.size() > 2 && ins[2])
      bst = ref::broadcastStrides(ins[2]->shape, norm);
  }
  Index nst = ref::stridesOf(norm);
  auto param = [&](const HostTensor *t, const Index &st, int64_t k) {
    int64_t off = 0;
    for (size_t d = 0; d < norm.size(); ++d)
      off += (k / nst[d]) % norm[d] * st[d];
    return static_cast<double>(t->data[off]);
  };
  for (int64_t b = 0; b < blocks; ++b) {
    const float *p = x.data.data() + b * len;
    double mean = 0, var = 0;
    for (int64_t k = 0; k < len; ++k)
      mean += p[k];
    mean /= static_cast<double>(len);
    for (int64_t k = 0; k < len; ++k)
      var += (p[k] - mean) * (p[k] - mean);
    var /= static_cast<double>(len);
    double inv = 1.0 / std::sqrt(var + eps);
    for (int64_t k = 0; k < len; ++k) {
      double s, bias;
      if (layer) {
        s = param(ins[1], sst, k);
        bias = bst.empty() ? 0.0 : param(ins[2], bst, k);
      } else {
        int64_t c = b % x.shape[1];
        s = ins[1]->data[c];
        bias = ins[2]->data[c];
      }
      out.data[b * len + k] = static_cast<float>((p[k] - mean) * inv * s + bias);
    }
  }
  return out;
}

HostTensor alongAxis(const Node &n, const HostTensor &x) {
  const OpKind op = n.kind;
  int64_t axis = n.attrInt("axis", op == OpKind::LpNormalization ? -1 : 0);
  axis = axis < 0 ? axis + static_cast<int64_t>(x.shape.size()) : axis;
  AxisView v = axisView(x.shape, axis);
  HostTensor out(x.shape);
  for (int64_t o = 0; o < v.outer; ++o)
    for (int64_t i = 0; i < v.inner; ++i) {
      auto at = [&](int64_t k) { return v.at(o, k, i); };
      if (op == OpKind::LogSoftmax) {
        double mx = -std::numeric_limits<double>::infinity(), sum = 0;
        for (int64_t k = 0; k < v.len; ++k)
          mx = std::max(mx, static_cast<double>(x.data[at(k)]));
        for (int64_t k = 0; k < v.len; ++k)
          sum += std::exp(x.data[at(k)] - mx);
        for (int64_t k = 0; k < v.len; ++k)
          out.data[at(k)] = static_cast<float>(x.data[at(k)] - mx - std::log(sum));
      } else if (op == OpKind::Hardmax) {
        int64_t best = 0; // the first maximum wins
        for (int64_t k = 1; k < v.len; ++k)
          if (x.data[at(k)] > x.data[at(best)])
            best = k;
        for (int64_t k = 0; k < v.len; ++k)
          out.data[at(k)] = k == best ? 1.0f : 0.0f;
      } else if (op == OpKind::LpNormalization) {
        bool l1 = n.attrInt("p", 2) == 1;
        double norm = 0;
        for (int64_t k = 0; k < v.len; ++k)
          norm += l1 ? std::fabs(x.data[at(k)]) : double(x.data[at(k)]) * x.data[at(k)];
        norm = l1 ? norm : std::sqrt(norm);
        for (int64_t k = 0; k < v.len; ++k)
          out.data[at(k)] = static_cast<float>(x.data[at(k)] / norm);
      } else if (op == OpKind::CumSum) {
        bool excl = n.attrInt("exclusive", 0) != 0, rev = n.attrInt("reverse", 0) != 0;
        double acc = 0;
        for (int64_t j = 0; j < v.len; ++j) {
          int64_t k = rev ? v.len - 1 - j : j;
          if (excl) {
            out.data[at(k)] = static_cast<float>(acc);
            acc += x.data[at(k)];
          } else {
            acc += x.data[at(k)];
            out.data[at(k)] = static_cast<float>(acc);
          }
        }
      } else {
        NPUC_ASSERT(false, fmt::format("alongAxis called for {}", op));
      }
    }
  return out;
}

HostTensor lrn(const Node &n, const HostTensor &x) {
  double alpha = n.attrFloat("alpha", 1e-4), beta = n.attrFloat("beta", 0.75);
  double bias = n.attrFloat("bias", 1.0);
  int64_t size = n.attrInt("size", 1);
  int64_t C = x.shape[1], inner = numElements(Shape(x.shape.begin() + 2, x.shape.end()));
  int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
  HostTensor out(x.shape);
  for (int64_t b = 0; b < x.shape[0]; ++b)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < inner; ++i) {
        double sq = 0;
        for (int64_t k = std::max<int64_t>(0, c - lo); k <= std::min(C - 1, c + hi); ++k) {
          double v = x.data[(b * C + k) * inner + i];
          sq += v * v;
        }
        int64_t at = (b * C + c) * inner + i;
        out.data[at] = static_cast<float>(
            x.data[at] / std::pow(bias + alpha / static_cast<double>(size) * sq, beta));
      }
  return out;
}

std::vector<HostTensor> topk(const Node &n, const HostTensor &x, const Shape &os) {
  int64_t axis = n.attrInt("axis", -1), k = n.attrInt("k", 1);
  bool largest = n.attrInt("largest", 1) != 0;
  AxisView v = axisView(x.shape, axis);
  HostTensor vals(os), idx(os);
  std::vector<int64_t> order(static_cast<size_t>(v.len));
  for (int64_t o = 0; o < v.outer; ++o)
    for (int64_t i = 0; i < v.inner; ++i) {
      std::iota(order.begin(), order.end(), 0);
      // Ties keep the lower index first (ONNX's rule), hence the stable sort.
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        float xa = x.data[v.at(o, a, i)], xb = x.data[v.at(o, b, i)];
        return largest ? xa > xb : xa < xb;
      });
      for (int64_t j = 0; j < k; ++j) {
        int64_t at = (o * k + j) * v.inner + i;
        vals.data[at] = x.data[v.at(o, order[static_cast<size_t>(j)], i)];
        idx.data[at] = static_cast<float>(order[static_cast<size_t>(j)]);
      }
    }
  return {vals, idx};
}

} // namespace

// Add, Sub, Mul, Div, Max, Min.
RefResult refArith(const RefArgs &a) {
  const Shape &os = a.outShape();
  switch (a.n.kind) {
  case OpKind::Add:
    return {binary(a.ins, os, add)};
  case OpKind::Sub:
    return {binary(a.ins, os, sub)};
  case OpKind::Mul:
    return {binary(a.ins, os, mul)};
  case OpKind::Div: {
    HostTensor q = binary(a.ins, os, divF);
    // Integer division truncates (ONNX Div on int64: torch's shape arithmetic relies on it).
    if (a.g.value(a.n.outputs[0]).dtype == DType::I64)
      for (float &v : q.data)
        v = std::trunc(v);
    return {q};
  }
  case OpKind::Max:
    return {binary(a.ins, os, maxF)};
  case OpKind::Min:
    return {binary(a.ins, os, minF)};
  default:
    break;
  }
  NPUC_ASSERT(false, fmt::format("Ops.def gives {} the Arith kernel", a.n.kind));
  return {};
}

// Relu, Sigmoid, Tanh, Exp, Clip.
RefResult refActivation(const RefArgs &a) {
  const HostTensor &x = a.in(0);
  switch (a.n.kind) {
  case OpKind::Relu:
    return {unary(x, relu)};
  case OpKind::Sigmoid:
    return {unary(x, sigmoid)};
  case OpKind::Tanh:
    return {unary(x, tanhF)};
  case OpKind::Exp:
    return {unary(x, expF)};
  case OpKind::Clip: {
    double lo = a.n.attrFloat("min", -std::numeric_limits<double>::infinity());
    double hi = a.n.attrFloat("max", std::numeric_limits<double>::infinity());
    HostTensor out(a.outShape());
    for (int64_t i = 0; i < out.size(); ++i)
      out.data[i] = static_cast<float>(std::min(std::max<double>(x.data[i], lo), hi));
    return {out};
  }
  default:
    break;
  }
  NPUC_ASSERT(false, fmt::format("Ops.def gives {} the Activation kernel", a.n.kind));
  return {};
}

RefResult refUnaryMap(const RefArgs &a) {
  const HostTensor &x = a.in(0);
  HostTensor out(a.outShape());
  for (int64_t i = 0; i < out.size(); ++i)
    out.data[i] = static_cast<float>(evalUnary(a.n, x.data[i]));
  return {out};
}

RefResult refBroadcastMap(const RefArgs &a) {
  return {broadcastOp(a.n, a.ins, a.outShape())};
}

RefResult refReduce(const RefArgs &a) {
  return {reduce(a.n, a.in(0), a.outShape())};
}

RefResult refSoftmax(const RefArgs &a) {
  return {softmax(a.in(0), a.n.attrInt("axis", -1))};
}

// LayerNormalization and InstanceNormalization.
RefResult refNormalize(const RefArgs &a) {
  return {normalize(a.n, a.ins)};
}

// LogSoftmax, Hardmax, LpNormalization, CumSum.
RefResult refAlongAxis(const RefArgs &a) {
  return {alongAxis(a.n, a.in(0))};
}

RefResult refLRN(const RefArgs &a) {
  return {lrn(a.n, a.in(0))};
}

RefResult refTopK(const RefArgs &a) {
  return topk(a.n, a.in(0), a.outShape());
}

} // namespace ref

} // namespace npuc::graph
