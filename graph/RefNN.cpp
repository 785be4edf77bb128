// RefNN.cpp - reference kernels of the neural-network operators: convolutions (grouped,
// transposed), window and global pooling, Gemm/MatMul and batch normalisation (RefInternal.h).
//
// Each kernel is the textbook loop nest of its ONNX definition over NC[D]HW fp32 tensors with
// double accumulation, written for readability: this is the oracle other back ends are compared
// against. Attributes are in the normalised form the frontend produces (explicit
// pads/strides/dilations, ...).
#include "graph/RefInternal.h"

#include "support/Error.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace npuc::graph::ref {

namespace {

// The spatial geometry of a window op over 1 to 3 axes, with unit axes put in front up to 3 so
// that one loop nest over (depth, height, width) serves 1-D, 2-D and 3-D tensors: a leading axis
// has extent, kernel, stride and dilation 1 and no padding.
struct Win3 {
  std::array<int64_t, 3> in{1, 1, 1}, out{1, 1, 1}, k{1, 1, 1}, s{1, 1, 1}, d{1, 1, 1};
  std::array<int64_t, 3> pb{0, 0, 0}, pe{0, 0, 0}; // pads at the begin and end
  int64_t inSize() const { return in[0] * in[1] * in[2]; }
  int64_t outSize() const { return out[0] * out[1] * out[2]; }
  int64_t kSize() const { return k[0] * k[1] * k[2]; }
  // Row-major flat offset of spatial position (a, b, c) in `e`.
  static int64_t at(const std::array<int64_t, 3> &e, int64_t a, int64_t b, int64_t c) {
    return (a * e[1] + b) * e[2] + c;
  }
};

// `in` and `out` are the [N, C, spatial...] shapes of the window's input and output (for a
// transposed convolution, the input and output of its scatter); `kernel` its spatial extents.
Win3 win3(const Node &n, const Shape &in, const Shape &out, const Shape &kernel) {
  const size_t r = in.size() - 2, off = 3 - r;
  NPUC_ASSERT(r >= 1 && r <= 3 && out.size() == in.size() && kernel.size() == r,
              "shape inference checked the window op's ranks");
  auto s = n.attrInts("strides", std::vector<int64_t>(r, 1));
  auto d = n.attrInts("dilations", std::vector<int64_t>(r, 1));
  auto p = n.attrInts("pads", std::vector<int64_t>(2 * r, 0));
  Win3 w;
  for (size_t i = 0; i < r; ++i) {
    w.in[off + i] = in[2 + i];
    w.out[off + i] = out[2 + i];
    w.k[off + i] = kernel[i];
    w.s[off + i] = s[i];
    w.d[off + i] = d[i];
    w.pb[off + i] = p[i];
    w.pe[off + i] = p[r + i];
  }
  return w;
}

Shape spatial(const Shape &s) {
  return Shape(s.begin() + 2, s.end());
}

HostTensor conv(const Node &n, const HostTensor &x, const HostTensor &w, const HostTensor *b,
                const Shape &outShape) {
  const Win3 g = win3(n, x.shape, outShape, spatial(w.shape));
  int64_t group = n.attrInt("group", 1);
  int64_t N = x.shape[0], C = x.shape[1], M = w.shape[0];
  int64_t cpg = C / group, mpg = M / group, inSz = g.inSize(), kSz = g.kSize();
  HostTensor out(outShape);
  float *o = out.data.data();
  for (int64_t b0 = 0; b0 < N; ++b0)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t od = 0; od < g.out[0]; ++od)
        for (int64_t oh = 0; oh < g.out[1]; ++oh)
          for (int64_t ow = 0; ow < g.out[2]; ++ow) {
            double acc = b ? b->data[m] : 0.0;
            for (int64_t c = 0; c < cpg; ++c) {
              const float *xc = x.data.data() + (b0 * C + m / mpg * cpg + c) * inSz;
              const float *wc = w.data.data() + (m * cpg + c) * kSz;
              for (int64_t kd = 0; kd < g.k[0]; ++kd)
                for (int64_t kh = 0; kh < g.k[1]; ++kh)
                  for (int64_t kw = 0; kw < g.k[2]; ++kw) {
                    int64_t id = od * g.s[0] - g.pb[0] + kd * g.d[0];
                    int64_t ih = oh * g.s[1] - g.pb[1] + kh * g.d[1];
                    int64_t iw = ow * g.s[2] - g.pb[2] + kw * g.d[2];
                    if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1] || iw < 0 ||
                        iw >= g.in[2])
                      continue;
                    acc += static_cast<double>(xc[Win3::at(g.in, id, ih, iw)]) *
                           wc[Win3::at(g.k, kd, kh, kw)];
                  }
            }
            *o++ = static_cast<float>(acc);
          }
  return out;
}

// The flat index MaxPool's Indices output gives spatial position (a, b, c) of `e` (within its
// image and channel): row-major, or column-major (the axes counted from the last) when
// storage_order is 1.
int64_t storageIndex(const std::array<int64_t, 3> &e, int64_t a, int64_t b, int64_t c,
                     bool columnMajor) {
  return columnMajor ? (c * e[1] + b) * e[0] + a : Win3::at(e, a, b, c);
}

// MaxPool (with its optional Indices) and AveragePool.
std::vector<HostTensor> pool(const Node &n, const HostTensor &x, const Shape &outShape,
                             bool wantIndices) {
  bool isMax = n.kind == OpKind::MaxPool;
  const Win3 g = win3(n, x.shape, outShape, n.attrInts("kernel_shape"));
  bool includePad = n.attrInt("count_include_pad", 0) != 0;
  bool colMajor = n.attrInt("storage_order", 0) != 0;
  HostTensor out(outShape), idx(wantIndices ? outShape : Shape{0});
  int64_t inSz = g.inSize(), o = 0;
  for (int64_t nc = 0; nc < x.shape[0] * x.shape[1]; ++nc)
    for (int64_t od = 0; od < g.out[0]; ++od)
      for (int64_t oh = 0; oh < g.out[1]; ++oh)
        for (int64_t ow = 0; ow < g.out[2]; ++ow, ++o) {
          double acc = isMax ? -std::numeric_limits<double>::infinity() : 0.0;
          int64_t valid = 0, padded = 0, best = -1;
          for (int64_t kd = 0; kd < g.k[0]; ++kd)
            for (int64_t kh = 0; kh < g.k[1]; ++kh)
              for (int64_t kw = 0; kw < g.k[2]; ++kw) {
                int64_t id = od * g.s[0] - g.pb[0] + kd * g.d[0];
                int64_t ih = oh * g.s[1] - g.pb[1] + kh * g.d[1];
                int64_t iw = ow * g.s[2] - g.pb[2] + kw * g.d[2];
                // Positions inside the explicit padding count for count_include_pad; positions
                // beyond it (only reachable with ceil_mode) never count (PyTorch/ONNX Runtime).
                if (id < g.in[0] + g.pe[0] && ih < g.in[1] + g.pe[1] && iw < g.in[2] + g.pe[2])
                  ++padded;
                if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1] || iw < 0 || iw >= g.in[2])
                  continue;
                double v = x.data[nc * inSz + Win3::at(g.in, id, ih, iw)];
                if (isMax && (best < 0 || v > acc)) // the first maximum's position
                  best = nc * inSz + storageIndex(g.in, id, ih, iw, colMajor);
                acc = isMax ? std::max(acc, v) : acc + v;
                ++valid;
              }
          if (!isMax)
            acc /= static_cast<double>(includePad ? padded : std::max<int64_t>(valid, 1));
          out.data[o] = static_cast<float>(acc);
          if (wantIndices)
            idx.data[o] = static_cast<float>(best);
        }
  if (!wantIndices)
    return {out};
  return {out, idx};
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

HostTensor convTranspose(const Node &n, const HostTensor &x, const HostTensor &w,
                         const HostTensor *b, const Shape &os) {
  // The scatter runs from the input (the window's "output" positions) to the output.
  const Win3 g = win3(n, os, x.shape, spatial(w.shape));
  int64_t group = n.attrInt("group", 1);
  int64_t N = x.shape[0], C = x.shape[1], mpg = w.shape[1], cpg = C / group, M = os[1];
  int64_t outSz = g.inSize(), inSz = g.outSize(), kSz = g.kSize();
  std::vector<double> acc(static_cast<size_t>(numElements(os)), 0.0);
  // Scatter form of the definition: every input pixel adds its weighted kernel to the output.
  for (int64_t bn = 0; bn < N; ++bn)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t id = 0; id < g.out[0]; ++id)
        for (int64_t ih = 0; ih < g.out[1]; ++ih)
          for (int64_t iw = 0; iw < g.out[2]; ++iw) {
            double xv = x.data[(bn * C + c) * inSz + Win3::at(g.out, id, ih, iw)];
            for (int64_t mm = 0; mm < mpg; ++mm) {
              double *dst = acc.data() + (bn * M + c / cpg * mpg + mm) * outSz;
              const float *wk = w.data.data() + (c * mpg + mm) * kSz;
              for (int64_t kd = 0; kd < g.k[0]; ++kd)
                for (int64_t kh = 0; kh < g.k[1]; ++kh)
                  for (int64_t kw = 0; kw < g.k[2]; ++kw) {
                    int64_t od = id * g.s[0] - g.pb[0] + kd * g.d[0];
                    int64_t oh = ih * g.s[1] - g.pb[1] + kh * g.d[1];
                    int64_t ow = iw * g.s[2] - g.pb[2] + kw * g.d[2];
                    if (od < 0 || od >= g.in[0] || oh < 0 || oh >= g.in[1] || ow < 0 ||
                        ow >= g.in[2])
                      continue;
                    dst[Win3::at(g.in, od, oh, ow)] += xv * wk[Win3::at(g.k, kd, kh, kw)];
                  }
            }
          }
  HostTensor out(os);
  for (int64_t i = 0; i < out.size(); ++i)
    out.data[i] =
        static_cast<float>(acc[static_cast<size_t>(i)] + (b ? b->data[(i / outSz) % M] : 0.0f));
  return out;
}

HostTensor lpPool(const Node &n, const HostTensor &x, const Shape &os) {
  const Win3 g = win3(n, x.shape, os, n.attrInts("kernel_shape"));
  double pw = static_cast<double>(n.attrInt("p", 2));
  int64_t inSz = g.inSize(), o = 0;
  HostTensor out(os);
  for (int64_t nc = 0; nc < x.shape[0] * x.shape[1]; ++nc)
    for (int64_t od = 0; od < g.out[0]; ++od)
      for (int64_t oh = 0; oh < g.out[1]; ++oh)
        for (int64_t ow = 0; ow < g.out[2]; ++ow) {
          double acc = 0; // padded positions are zeros and add nothing
          for (int64_t kd = 0; kd < g.k[0]; ++kd)
            for (int64_t kh = 0; kh < g.k[1]; ++kh)
              for (int64_t kw = 0; kw < g.k[2]; ++kw) {
                int64_t id = od * g.s[0] - g.pb[0] + kd * g.d[0];
                int64_t ih = oh * g.s[1] - g.pb[1] + kh * g.d[1];
                int64_t iw = ow * g.s[2] - g.pb[2] + kw * g.d[2];
                if (id >= 0 && id < g.in[0] && ih >= 0 && ih < g.in[1] && iw >= 0 && iw < g.in[2])
                  acc += std::pow(std::fabs(x.data[nc * inSz + Win3::at(g.in, id, ih, iw)]), pw);
              }
          out.data[o++] = static_cast<float>(std::pow(acc, 1.0 / pw));
        }
  return out;
}

HostTensor globalPool(const Node &n, const HostTensor &x, const Shape &os) {
  int64_t nc = x.shape[0] * x.shape[1], len = x.size() / std::max<int64_t>(nc, 1);
  double p = static_cast<double>(n.attrInt("p", 2));
  HostTensor out(os);
  for (int64_t c = 0; c < nc; ++c) {
    double acc = n.kind == OpKind::GlobalMaxPool ? -std::numeric_limits<double>::infinity() : 0.0;
    for (int64_t i = 0; i < len; ++i) {
      double v = x.data[c * len + i];
      acc = n.kind == OpKind::GlobalMaxPool ? std::max(acc, v) : acc + std::pow(std::fabs(v), p);
    }
    out.data[c] =
        static_cast<float>(n.kind == OpKind::GlobalMaxPool ? acc : std::pow(acc, 1.0 / p));
  }
  return out;
}

} // namespace

RefResult refConv(const RefArgs &a) {
  return {conv(a.n, a.in(0), a.in(1), a.opt(2), a.outShape())};
}

RefResult refConvTranspose(const RefArgs &a) {
  return {convTranspose(a.n, a.in(0), a.in(1), a.opt(2), a.outShape())};
}

// MaxPool (and its Indices) and AveragePool.
RefResult refPool(const RefArgs &a) {
  return pool(a.n, a.in(0), a.outShape(), a.n.outputs.size() > 1);
}

RefResult refLpPool(const RefArgs &a) {
  return {lpPool(a.n, a.in(0), a.outShape())};
}

RefResult refGlobalAveragePool(const RefArgs &a) {
  const HostTensor &x = a.in(0);
  HostTensor out(a.outShape());
  int64_t hw = numElements(spatial(x.shape));
  for (int64_t nc = 0; nc < out.size(); ++nc) {
    double acc = 0;
    for (int64_t i = 0; i < hw; ++i)
      acc += x.data[nc * hw + i];
    out.data[nc] = static_cast<float>(acc / static_cast<double>(hw));
  }
  return {out};
}

// GlobalMaxPool and GlobalLpPool.
RefResult refGlobalPool(const RefArgs &a) {
  return {globalPool(a.n, a.in(0), a.outShape())};
}

RefResult refGemm(const RefArgs &a) {
  return {gemm(a.n, a.in(0), a.in(1), a.opt(2), a.outShape())};
}

RefResult refMatMul(const RefArgs &a) {
  return {matmul(a.in(0), a.in(1), a.outShape())};
}

RefResult refBatchNorm(const RefArgs &a) {
  return {batchNorm(a.n, a.ins)};
}

} // namespace npuc::graph::ref
