// RefBasic.cpp - the reference executor's fp32 kernels (NCHW, double accumulation).
//
// Each kernel is the textbook loop nest of its ONNX definition, written for readability: this is
// the oracle other back ends are compared against. Attributes are in the normalised form the
// frontend produces (explicit pads/strides/dilations, Clip bounds as attributes, ...).
#include "graph/ExtOps.h"
#include "graph/RefInternal.h"
#include "graph/Reference.h"

#include "support/Error.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace npuc::graph {

namespace {

using ref::broadcastStrides;
using ref::forEachBroadcast;
using ref::Index;
using ref::stridesOf;

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

HostTensor conv(const Node &n, const HostTensor &x, const HostTensor &w, const HostTensor *b,
                const Shape &outShape) {
  auto s = n.attrInts("strides", {1, 1}), d = n.attrInts("dilations", {1, 1});
  auto p = n.attrInts("pads", {0, 0, 0, 0});
  int64_t group = n.attrInt("group", 1);
  int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  int64_t M = w.shape[0], KH = w.shape[2], KW = w.shape[3], OH = outShape[2], OW = outShape[3];
  int64_t cpg = C / group, mpg = M / group;
  HostTensor out(outShape);
  for (int64_t b0 = 0; b0 < N; ++b0)
    for (int64_t m = 0; m < M; ++m) {
      int64_t g0 = m / mpg;
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double acc = b ? b->data[m] : 0.0;
          for (int64_t c = 0; c < cpg; ++c)
            for (int64_t kh = 0; kh < KH; ++kh)
              for (int64_t kw = 0; kw < KW; ++kw) {
                int64_t ih = oh * s[0] - p[0] + kh * d[0], iw = ow * s[1] - p[1] + kw * d[1];
                if (ih < 0 || ih >= H || iw < 0 || iw >= W)
                  continue;
                double xv = x.data[((b0 * C + g0 * cpg + c) * H + ih) * W + iw];
                double wv = w.data[((m * cpg + c) * KH + kh) * KW + kw];
                acc += xv * wv;
              }
          out.data[((b0 * M + m) * OH + oh) * OW + ow] = static_cast<float>(acc);
        }
    }
  return out;
}

HostTensor pool(const Node &n, const HostTensor &x, const Shape &outShape) {
  bool isMax = n.kind == OpKind::MaxPool;
  auto k = n.attrInts("kernel_shape"), s = n.attrInts("strides", {1, 1});
  auto d = n.attrInts("dilations", {1, 1}), p = n.attrInts("pads", {0, 0, 0, 0});
  bool includePad = n.attrInt("count_include_pad", 0) != 0;
  int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  int64_t OH = outShape[2], OW = outShape[3];
  HostTensor out(outShape);
  for (int64_t nc = 0; nc < N * C; ++nc)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        double acc = isMax ? -std::numeric_limits<double>::infinity() : 0.0;
        int64_t valid = 0, padded = 0;
        for (int64_t kh = 0; kh < k[0]; ++kh)
          for (int64_t kw = 0; kw < k[1]; ++kw) {
            int64_t ih = oh * s[0] - p[0] + kh * d[0], iw = ow * s[1] - p[1] + kw * d[1];
            // Positions inside the explicit padding count for count_include_pad; positions
            // beyond it (only reachable with ceil_mode) never count (PyTorch/ONNX Runtime rule).
            if (ih < H + p[2] && iw < W + p[3])
              ++padded;
            if (ih < 0 || ih >= H || iw < 0 || iw >= W)
              continue;
            double v = x.data[(nc * H + ih) * W + iw];
            acc = isMax ? std::max(acc, v) : acc + v;
            ++valid;
          }
        if (!isMax)
          acc /= static_cast<double>(includePad ? padded : std::max<int64_t>(valid, 1));
        out.data[(nc * OH + oh) * OW + ow] = static_cast<float>(acc);
      }
  return out;
}

HostTensor gemm(const Node &n, const HostTensor &a, const HostTensor &b, const HostTensor *c,
                const Shape &outShape) {
  bool ta = n.attrInt("transA", 0) != 0, tb = n.attrInt("transB", 0) != 0;
  double alpha = n.attrFloat("alpha", 1.0), beta = n.attrFloat("beta", 1.0);
  int64_t M = outShape[0], N = outShape[1], K = ta ? a.shape[0] : a.shape[1];
  HostTensor out(outShape);
  Index cst = c ? broadcastStrides(c->shape, outShape) : Index{0, 0};
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k)
        acc += static_cast<double>(ta ? a.data[k * M + i] : a.data[i * K + k]) *
               (tb ? b.data[j * K + k] : b.data[k * N + j]);
      acc *= alpha;
      if (c)
        acc += beta * c->data[i * cst[0] + j * cst[1]];
      out.data[i * N + j] = static_cast<float>(acc);
    }
  return out;
}

HostTensor matmul(const HostTensor &a, const HostTensor &b, const Shape &outShape) {
  size_t r = outShape.size();
  int64_t M = outShape[r - 2], N = outShape[r - 1], K = a.shape.back();
  Shape batch(outShape.begin(), outShape.end() - 2);
  Index sa = broadcastStrides(Shape(a.shape.begin(), a.shape.end() - 2), batch);
  Index sb = broadcastStrides(Shape(b.shape.begin(), b.shape.end() - 2), batch);
  HostTensor out(outShape);
  // One row of double accumulators per output row, k outermost: b is read along its rows
  // (ViT's 768x3072 weights column by column took minutes) and every output still sums its
  // products in ascending k, exactly as the plain i-j-k loop would.
  std::vector<double> acc(static_cast<size_t>(N));
  forEachBroadcast(batch, {sa, sb}, [&](int64_t o, const std::vector<int64_t> &off) {
    const float *pa = a.data.data() + off[0] * M * K;
    const float *pb = b.data.data() + off[1] * K * N;
    for (int64_t i = 0; i < M; ++i) {
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t k = 0; k < K; ++k) {
        double av = pa[i * K + k];
        for (int64_t j = 0; j < N; ++j)
          acc[static_cast<size_t>(j)] += av * pb[k * N + j];
      }
      for (int64_t j = 0; j < N; ++j)
        out.data[(o * M + i) * N + j] = static_cast<float>(acc[static_cast<size_t>(j)]);
    }
  });
  return out;
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

HostTensor batchNorm(const Node &n, const std::vector<const HostTensor *> &in) {
  const HostTensor &x = *in[0];
  double eps = n.attrFloat("epsilon", 1e-5);
  int64_t C = x.shape[1];
  int64_t inner = numElements(Shape(x.shape.begin() + 2, x.shape.end()));
  HostTensor out(x.shape);
  for (int64_t i = 0; i < x.size(); ++i) {
    int64_t c = (i / inner) % C;
    double scale = in[1]->data[c], bias = in[2]->data[c];
    double mean = in[3]->data[c], var = in[4]->data[c];
    out.data[i] = static_cast<float>((x.data[i] - mean) / std::sqrt(var + eps) * scale + bias);
  }
  return out;
}

HostTensor transpose(const HostTensor &x, const std::vector<int64_t> &perm, const Shape &os) {
  Index ist = stridesOf(x.shape), st(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    st[i] = ist[static_cast<size_t>(perm[i])];
  HostTensor out(os);
  forEachBroadcast(
      os, {st}, [&](int64_t o, const std::vector<int64_t> &off) { out.data[o] = x.data[off[0]]; });
  return out;
}

HostTensor concat(const std::vector<const HostTensor *> &in, int64_t axis, const Shape &os) {
  axis = axis < 0 ? axis + static_cast<int64_t>(os.size()) : axis;
  int64_t outer = numElements(Shape(os.begin(), os.begin() + axis));
  int64_t inner = numElements(Shape(os.begin() + axis + 1, os.end()));
  HostTensor out(os);
  int64_t pos = 0;
  for (const HostTensor *t : in) {
    int64_t len = t->shape[static_cast<size_t>(axis)];
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t k = 0; k < len * inner; ++k)
        out.data[(o * os[static_cast<size_t>(axis)] + pos) * inner + k] =
            t->data[o * len * inner + k];
    pos += len;
  }
  return out;
}

HostTensor pad(const Node &n, const HostTensor &x, const Shape &os) {
  auto pads = n.attrInts("pads");
  HostTensor out(os);
  std::fill(out.data.begin(), out.data.end(), static_cast<float>(n.attrFloat("value", 0.0)));
  Index ost = stridesOf(os), xst = stridesOf(x.shape);
  forEachBroadcast(x.shape, {xst}, [&](int64_t i, const std::vector<int64_t> &) {
    int64_t rem = i, o = 0;
    for (size_t d = 0; d < x.shape.size(); ++d) {
      o += (rem / xst[d] + pads[d]) * ost[d];
      rem %= xst[d];
    }
    out.data[o] = x.data[i];
  });
  return out;
}

HostTensor gather(const Node &n, const HostTensor &x, const HostTensor &idx, const Shape &os) {
  int64_t axis = n.attrInt("axis", 0);
  axis = axis < 0 ? axis + static_cast<int64_t>(x.shape.size()) : axis;
  int64_t outer = numElements(Shape(x.shape.begin(), x.shape.begin() + axis));
  int64_t len = x.shape[static_cast<size_t>(axis)];
  int64_t inner = numElements(Shape(x.shape.begin() + axis + 1, x.shape.end()));
  HostTensor out(os);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < idx.size(); ++j) {
      auto k = static_cast<int64_t>(idx.data[j]);
      k = k < 0 ? k + len : k;
      if (k < 0 || k >= len)
        fail("node '{}' (Gather): index {} out of range [0, {})", n.name, k, len);
      for (int64_t i = 0; i < inner; ++i)
        out.data[(o * idx.size() + j) * inner + i] = x.data[(o * len + k) * inner + i];
    }
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

} // namespace

std::vector<HostTensor> evalNode(const Graph &g, const Node &n,
                                 const std::vector<const HostTensor *> &ins) {
  const Shape &os = g.value(n.outputs.at(0)).shape;
  const OpKind op = n.kind;
  auto in = [&](size_t i) -> const HostTensor & {
    NPUC_ASSERT(i < ins.size() && ins[i], "required inputs are present after import");
    return *ins[i];
  };
  auto opt = [&](size_t i) -> const HostTensor * { return i < ins.size() ? ins[i] : nullptr; };
  if (op == OpKind::Conv)
    return {conv(n, in(0), in(1), opt(2), os)};
  if (op == OpKind::MaxPool || op == OpKind::AveragePool)
    return {pool(n, in(0), os)};
  if (op == OpKind::GlobalAveragePool) {
    HostTensor out(os);
    int64_t hw = in(0).shape[2] * in(0).shape[3];
    for (int64_t nc = 0; nc < out.size(); ++nc) {
      double acc = 0;
      for (int64_t i = 0; i < hw; ++i)
        acc += in(0).data[nc * hw + i];
      out.data[nc] = static_cast<float>(acc / static_cast<double>(hw));
    }
    return {out};
  }
  if (op == OpKind::Gemm)
    return {gemm(n, in(0), in(1), opt(2), os)};
  if (op == OpKind::MatMul)
    return {matmul(in(0), in(1), os)};
  if (op == OpKind::Add)
    return {binary(ins, os, add)};
  if (op == OpKind::Sub)
    return {binary(ins, os, sub)};
  if (op == OpKind::Mul)
    return {binary(ins, os, mul)};
  if (op == OpKind::Div) {
    HostTensor q = binary(ins, os, divF);
    // Integer division truncates (ONNX Div on int64: torch's shape arithmetic relies on it).
    if (g.value(n.outputs[0]).dtype == DType::I64)
      for (float &v : q.data)
        v = std::trunc(v);
    return {q};
  }
  if (op == OpKind::Max)
    return {binary(ins, os, maxF)};
  if (op == OpKind::Min)
    return {binary(ins, os, minF)};
  if (op == OpKind::Relu)
    return {unary(in(0), relu)};
  if (op == OpKind::Sigmoid)
    return {unary(in(0), sigmoid)};
  if (op == OpKind::Tanh)
    return {unary(in(0), tanhF)};
  if (op == OpKind::Exp)
    return {unary(in(0), expF)};
  if (op == OpKind::Clip) {
    double lo = n.attrFloat("min", -std::numeric_limits<double>::infinity());
    double hi = n.attrFloat("max", std::numeric_limits<double>::infinity());
    HostTensor out(os);
    for (int64_t i = 0; i < out.size(); ++i)
      out.data[i] = static_cast<float>(std::min(std::max<double>(in(0).data[i], lo), hi));
    return {out};
  }
  if (op == OpKind::Softmax)
    return {softmax(in(0), n.attrInt("axis", -1))};
  if (op == OpKind::BatchNormalization)
    return {batchNorm(n, ins)};
  if (op == OpKind::Flatten || op == OpKind::Reshape || op == OpKind::Squeeze ||
      op == OpKind::Unsqueeze || op == OpKind::Identity || op == OpKind::Dropout)
    return {HostTensor(os, in(0).data)};
  if (op == OpKind::Transpose)
    return {transpose(in(0), n.attrInts("perm"), os)};
  if (op == OpKind::Concat)
    return {concat(ins, n.attrInt("axis", 0), os)};
  if (op == OpKind::Pad)
    return {pad(n, in(0), os)};
  if (op == OpKind::Gather)
    return {gather(n, in(0), in(1), os)};
  if (op == OpKind::Shape) {
    HostTensor out(os);
    for (size_t i = 0; i < in(0).shape.size(); ++i)
      out.data[i] = static_cast<float>(in(0).shape[i]);
    return {out};
  }
  if (std::vector<HostTensor> outs; evalExtNode(g, n, ins, outs))
    return outs;
  fail("node '{}' ({}): the reference executor has no kernel for this operator", n.name, op);
}

} // namespace npuc::graph
