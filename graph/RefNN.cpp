// RefNN.cpp - reference kernels of the neural-network operators: convolutions (grouped,
// transposed), window and global pooling, Gemm/MatMul and batch normalisation (RefInternal.h).
//
// Each kernel is the textbook loop nest of its ONNX definition over NCHW fp32 tensors with double
// accumulation, written for readability: this is the oracle other back ends are compared
// against. Attributes are in the normalised form the frontend produces (explicit
// pads/strides/dilations, ...).
#include "graph/RefInternal.h"

#include "support/Error.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace npuc::graph::ref {

namespace {

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
  auto s = n.attrInts("strides"), d = n.attrInts("dilations"), p = n.attrInts("pads");
  int64_t group = n.attrInt("group", 1);
  int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  int64_t mpg = w.shape[1], KH = w.shape[2], KW = w.shape[3], cpg = C / group;
  int64_t M = os[1], OH = os[2], OW = os[3];
  std::vector<double> acc(static_cast<size_t>(numElements(os)), 0.0);
  // Scatter form of the definition: every input pixel adds its weighted kernel to the output.
  for (int64_t bn = 0; bn < N; ++bn)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t ih = 0; ih < H; ++ih)
        for (int64_t iw = 0; iw < W; ++iw) {
          double xv = x.data[((bn * C + c) * H + ih) * W + iw];
          for (int64_t mm = 0; mm < mpg; ++mm)
            for (int64_t kh = 0; kh < KH; ++kh)
              for (int64_t kw = 0; kw < KW; ++kw) {
                int64_t oh = ih * s[0] - p[0] + kh * d[0], ow = iw * s[1] - p[1] + kw * d[1];
                if (oh < 0 || oh >= OH || ow < 0 || ow >= OW)
                  continue;
                int64_t m = c / cpg * mpg + mm;
                acc[static_cast<size_t>(((bn * M + m) * OH + oh) * OW + ow)] +=
                    xv * w.data[((c * mpg + mm) * KH + kh) * KW + kw];
              }
        }
  HostTensor out(os);
  for (int64_t i = 0; i < out.size(); ++i)
    out.data[i] =
        static_cast<float>(acc[static_cast<size_t>(i)] + (b ? b->data[(i / (OH * OW)) % M] : 0.0f));
  return out;
}

HostTensor lpPool(const Node &n, const HostTensor &x, const Shape &os) {
  auto k = n.attrInts("kernel_shape"), s = n.attrInts("strides", {1, 1});
  auto d = n.attrInts("dilations", {1, 1}), p = n.attrInts("pads", {0, 0, 0, 0});
  double pw = static_cast<double>(n.attrInt("p", 2));
  int64_t H = x.shape[2], W = x.shape[3], OH = os[2], OW = os[3];
  HostTensor out(os);
  for (int64_t nc = 0; nc < x.shape[0] * x.shape[1]; ++nc)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        double acc = 0; // padded positions are zeros and add nothing
        for (int64_t kh = 0; kh < k[0]; ++kh)
          for (int64_t kw = 0; kw < k[1]; ++kw) {
            int64_t ih = oh * s[0] - p[0] + kh * d[0], iw = ow * s[1] - p[1] + kw * d[1];
            if (ih >= 0 && ih < H && iw >= 0 && iw < W)
              acc += std::pow(std::fabs(x.data[(nc * H + ih) * W + iw]), pw);
          }
        out.data[(nc * OH + oh) * OW + ow] = static_cast<float>(std::pow(acc, 1.0 / pw));
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

// MaxPool and AveragePool.
RefResult refPool(const RefArgs &a) {
  return {pool(a.n, a.in(0), a.outShape())};
}

RefResult refLpPool(const RefArgs &a) {
  return {lpPool(a.n, a.in(0), a.outShape())};
}

RefResult refGlobalAveragePool(const RefArgs &a) {
  const HostTensor &x = a.in(0);
  HostTensor out(a.outShape());
  int64_t hw = x.shape[2] * x.shape[3];
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
