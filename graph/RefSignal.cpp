// RefSignal.cpp - reference kernels of Einsum, Det and the signal-processing operators (the
// window functions, MelWeightMatrix, DFT, STFT) (RefInternal.h). Double accumulation throughout;
// the DFT is the direct O(n^2) sum, the oracle's obviously correct form.
#include "graph/DataOps.h"
#include "graph/RefInternal.h"

#include "support/Error.h"

#include <cmath>
#include <complex>

namespace npuc::graph::ref {

namespace {

constexpr double kPi = 3.14159265358979323846;
using Complex = std::complex<double>;

// Bin k of the length-`len` DFT of the sequence x(0 .. count-1) (zero beyond `count`).
template <typename X> Complex dftBin(X x, int64_t count, int64_t len, int64_t k, bool inverse) {
  Complex acc = 0;
  for (int64_t j = 0; j < std::min(count, len); ++j)
    acc += x(j) * std::polar(1.0, (inverse ? 2 : -2) * kPi * static_cast<double>((k * j) % len) /
                                      static_cast<double>(len));
  return inverse ? acc / static_cast<double>(len) : acc;
}

// Element j of a signal stored as [..., 1 or 2] pairs at `at` (imaginary part 0 when real).
Complex sample(const HostTensor &x, int64_t at) {
  bool cplx = x.shape.back() == 2;
  return {x.data[at], cplx ? x.data[at + 1] : 0.0f};
}

double scalarIn(const RefArgs &a, size_t i) {
  return a.in(i).data.at(0);
}

} // namespace

RefResult refEinsum(const RefArgs &a) {
  std::vector<Shape> shapes;
  for (size_t i = 0; i < a.ins.size(); ++i)
    shapes.push_back(a.in(i).shape);
  EinsumSpec spec = parseEinsum(a.n, shapes);
  const Shape &os = a.outShape();
  std::vector<double> acc(static_cast<size_t>(numElements(os)), 0.0);
  std::vector<int64_t> val(spec.extents.size(), 0);
  int64_t total = numElements(spec.extents);
  for (int64_t it = 0; it < total; ++it) {
    double prod = 1;
    for (size_t k = 0; k < shapes.size(); ++k) {
      Index si;
      for (size_t d = 0; d < shapes[k].size(); ++d)
        si.push_back(shapes[k][d] == 1 ? 0 : val[static_cast<size_t>(spec.inputs[k][d])]);
      prod *= a.in(k).data[flatten(si, shapes[k])];
    }
    Index oi;
    for (int l : spec.output)
      oi.push_back(val[static_cast<size_t>(l)]);
    acc[static_cast<size_t>(flatten(oi, os))] += prod;
    for (size_t l = val.size(); l-- > 0;) {
      if (++val[l] < spec.extents[l])
        break;
      val[l] = 0;
    }
  }
  return {HostTensor(os, std::vector<float>(acc.begin(), acc.end()))};
}

// Gaussian elimination with partial pivoting per matrix.
RefResult refDet(const RefArgs &a) {
  const HostTensor &x = a.in(0);
  int64_t m = x.shape.back();
  HostTensor out(a.outShape());
  for (int64_t b = 0; b < out.size(); ++b) {
    std::vector<double> u(x.data.begin() + b * m * m, x.data.begin() + (b + 1) * m * m);
    auto at = [&](int64_t i, int64_t j) -> double & { return u[static_cast<size_t>(i * m + j)]; };
    double det = 1;
    for (int64_t k = 0; k < m && det != 0; ++k) {
      int64_t p = k;
      for (int64_t i = k + 1; i < m; ++i)
        if (std::fabs(at(i, k)) > std::fabs(at(p, k)))
          p = i;
      if (p != k) {
        for (int64_t j = 0; j < m; ++j)
          std::swap(at(k, j), at(p, j));
        det = -det;
      }
      det *= at(k, k);
      if (at(k, k) == 0)
        break;
      for (int64_t i = k + 1; i < m; ++i) {
        double f = at(i, k) / at(k, k);
        for (int64_t j = k; j < m; ++j)
          at(i, j) -= f * at(k, j);
      }
    }
    out.data[b] = static_cast<float>(det);
  }
  return {out};
}

// Hann, Hamming and Blackman: generalised cosine windows over N = size (periodic) or size - 1.
RefResult refWindow(const RefArgs &a) {
  HostTensor out(a.outShape());
  int64_t size = out.size();
  double N = static_cast<double>(a.n.attrInt("periodic", 1) ? size : size - 1);
  double a0 = 0.5, a1 = 0.5, a2 = 0; // Hann
  if (a.n.kind == OpKind::HammingWindow) {
    a0 = 25.0 / 46.0;
    a1 = 1 - a0;
  } else if (a.n.kind == OpKind::BlackmanWindow) {
    a0 = 0.42;
    a2 = 0.08;
  }
  for (int64_t i = 0; i < size; ++i) {
    double t = N > 0 ? 2 * kPi * static_cast<double>(i) / N : 0.0;
    out.data[i] = static_cast<float>(a0 - a1 * std::cos(t) + a2 * std::cos(2 * t));
  }
  return {out};
}

// Triangular filters between mel-spaced points, the points rounded down to DFT bins (ONNX's
// definition of the operator).
RefResult refMelWeightMatrix(const RefArgs &a) {
  auto bins = static_cast<int64_t>(scalarIn(a, 0)), dft = static_cast<int64_t>(scalarIn(a, 1));
  double rate = scalarIn(a, 2), lo = scalarIn(a, 3), hi = scalarIn(a, 4);
  auto mel = [](double hz) { return 2595 * std::log10(1 + hz / 700); };
  double step = (mel(hi) - mel(lo)) / static_cast<double>(bins + 2);
  std::vector<int64_t> f;
  for (int64_t i = 0; i < bins + 2; ++i) {
    double hz = 700 * (std::pow(10.0, (static_cast<double>(i) * step + mel(lo)) / 2595) - 1);
    f.push_back(static_cast<int64_t>(std::floor(static_cast<double>(dft + 1) * hz / rate)));
  }
  HostTensor out(a.outShape());
  auto at = [&](int64_t j, int64_t i) -> float & { return out.data[j * bins + i]; };
  for (int64_t i = 0; i < bins; ++i) {
    int64_t l = f[i], c = f[i + 1], h = f[i + 2];
    if (c == l)
      at(c, i) = 1;
    for (int64_t j = l; c != l && j <= c; ++j)
      at(j, i) = static_cast<float>(static_cast<double>(j - l) / static_cast<double>(c - l));
    for (int64_t j = c; j < h; ++j)
      at(j, i) = static_cast<float>(static_cast<double>(h - j) / static_cast<double>(h - c));
  }
  return {out};
}

RefResult refDFT(const RefArgs &a) {
  const HostTensor &x = a.in(0);
  const Shape &os = a.outShape();
  auto axis = static_cast<size_t>(a.n.attrInt("axis", 1));
  int64_t len = a.n.attrInt("dft_length", 1), n = x.shape[axis];
  bool inverse = a.n.attrInt("inverse", 0) != 0;
  int64_t outer = numElements(Shape(x.shape.begin(), x.shape.begin() + static_cast<long>(axis)));
  int64_t inner =
      numElements(Shape(x.shape.begin() + static_cast<long>(axis) + 1, x.shape.end() - 1));
  int64_t c = x.shape.back(), bins = os[axis];
  HostTensor out(os);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i)
      for (int64_t k = 0; k < bins; ++k) {
        Complex v = dftBin([&](int64_t j) { return sample(x, ((o * n + j) * inner + i) * c); }, n,
                           len, k, inverse);
        int64_t at = ((o * bins + k) * inner + i) * 2;
        out.data[at] = static_cast<float>(v.real());
        out.data[at + 1] = static_cast<float>(v.imag());
      }
  return {out};
}

RefResult refSTFT(const RefArgs &a) {
  const HostTensor &x = a.in(0);
  const HostTensor *w = a.opt(1);
  const Shape &os = a.outShape();
  int64_t step = a.n.attrInt("frame_step", 1), len = a.n.attrInt("frame_length", 1);
  int64_t s = x.shape[1], c = x.shape[2];
  HostTensor out(os);
  for (int64_t b = 0; b < os[0]; ++b)
    for (int64_t f = 0; f < os[1]; ++f)
      for (int64_t k = 0; k < os[2]; ++k) {
        Complex v = dftBin(
            [&](int64_t j) {
              return sample(x, (b * s + f * step + j) * c) * (w ? double(w->data[j]) : 1.0);
            },
            len, len, k, false);
        int64_t at = ((b * os[1] + f) * os[2] + k) * 2;
        out.data[at] = static_cast<float>(v.real());
        out.data[at + 1] = static_cast<float>(v.imag());
      }
  return {out};
}

} // namespace npuc::graph::ref
