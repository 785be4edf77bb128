// RefQuant.cpp - exact reference kernels of ConvInteger and MatMulInteger: operands less their
// zero points, products summed in int64, results wrapped to int32 (the output's type).
#include "graph/Quant.h"
#include "graph/RefInternal.h"

#include <cstdint>

namespace npuc::graph::ref {

namespace {

// `t` less its zero point `zp` (absent: 0), broadcast from `zpShape` (numpy rules) to t's shape.
std::vector<int64_t> lessZeroPoint(const HostTensor &t, const HostTensor *zp,
                                   const Shape &zpShape) {
  std::vector<int64_t> d = t.ints;
  if (!zp)
    return d;
  forEachBroadcast(t.shape, {broadcastStrides(zpShape, t.shape)},
                   [&](int64_t i, const std::vector<int64_t> &off) {
                     d[static_cast<size_t>(i)] -= zp->ints[static_cast<size_t>(off[0])];
                   });
  return d;
}

int64_t wrapInt32(int64_t v) {
  return static_cast<int64_t>(static_cast<int32_t>(static_cast<uint32_t>(v)));
}

} // namespace

RefResult refMatMulInteger(const RefArgs &a) {
  const HostTensor &A = a.in(0), &B = a.in(1);
  const HostTensor *az = a.opt(2), *bz = a.opt(3);
  std::vector<int64_t> da =
      lessZeroPoint(A, az, az ? matMulZeroPointShape(az->shape, true) : Shape{});
  std::vector<int64_t> db =
      lessZeroPoint(B, bz, bz ? matMulZeroPointShape(bz->shape, false) : Shape{});
  const Shape &outShape = a.outShape();
  const size_t r = outShape.size();
  const int64_t M = outShape[r - 2], N = outShape[r - 1], K = A.shape.back();
  Shape batch(outShape.begin(), outShape.end() - 2);
  Index sa = broadcastStrides(Shape(A.shape.begin(), A.shape.end() - 2), batch);
  Index sb = broadcastStrides(Shape(B.shape.begin(), B.shape.end() - 2), batch);
  HostTensor out(outShape, DType::I32);
  forEachBroadcast(batch, {sa, sb}, [&](int64_t o, const std::vector<int64_t> &off) {
    const int64_t *pa = da.data() + off[0] * M * K, *pb = db.data() + off[1] * K * N;
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        int64_t acc = 0;
        for (int64_t k = 0; k < K; ++k)
          acc += pa[i * K + k] * pb[k * N + j];
        out.ints[static_cast<size_t>((o * M + i) * N + j)] = wrapInt32(acc);
      }
  });
  return {out};
}

// Any number of spatial axes: the output position and each tap are unflattened per axis.
RefResult refConvInteger(const RefArgs &a) {
  const HostTensor &X = a.in(0), &W = a.in(1);
  const HostTensor *xz = a.opt(2), *wz = a.opt(3);
  Shape wzShape;
  if (wz && wz->size() != 1) {
    wzShape.assign(W.shape.size(), 1);
    wzShape[0] = W.shape[0];
  }
  std::vector<int64_t> dx = lessZeroPoint(X, xz, {}), dw = lessZeroPoint(W, wz, wzShape);
  const Shape &outShape = a.outShape();
  const size_t r = X.shape.size() - 2;
  const std::vector<int64_t> s = a.n.attrInts("strides", std::vector<int64_t>(r, 1));
  const std::vector<int64_t> d = a.n.attrInts("dilations", std::vector<int64_t>(r, 1));
  const std::vector<int64_t> p = a.n.attrInts("pads", std::vector<int64_t>(2 * r, 0));
  const int64_t group = a.n.attrInt("group", 1);
  const int64_t N = X.shape[0], C = X.shape[1], M = W.shape[0], cpg = C / group, mpg = M / group;
  const Shape in(X.shape.begin() + 2, X.shape.end()), kern(W.shape.begin() + 2, W.shape.end());
  const Shape sp(outShape.begin() + 2, outShape.end());
  const int64_t inSz = numElements(in), kSz = numElements(kern), outSz = numElements(sp);
  HostTensor out(outShape, DType::I32);
  for (int64_t b = 0; b < N; ++b)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t o = 0; o < outSz; ++o) {
        const Index oi = unflatten(o, sp);
        int64_t acc = 0;
        for (int64_t kf = 0; kf < kSz; ++kf) {
          const Index ki = unflatten(kf, kern);
          int64_t at = 0;
          bool inside = true;
          for (size_t i = 0; i < r && inside; ++i) {
            const int64_t c = oi[i] * s[i] - p[i] + ki[i] * d[i];
            inside = c >= 0 && c < in[i];
            at = at * in[i] + c;
          }
          if (!inside)
            continue; // padding: the zero point, which contributes nothing
          for (int64_t c = 0; c < cpg; ++c)
            acc += dx[static_cast<size_t>((b * C + m / mpg * cpg + c) * inSz + at)] *
                   dw[static_cast<size_t>((m * cpg + c) * kSz + kf)];
        }
        out.ints[static_cast<size_t>((b * M + m) * outSz + o)] = wrapInt32(acc);
      }
  return {out};
}

} // namespace npuc::graph::ref
