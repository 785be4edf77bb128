// Quant.cpp - zero-point shapes and the fp32 exactness bound of ConvInteger and MatMulInteger.
#include "graph/Quant.h"

#include "support/Error.h"

#include <algorithm>
#include <cmath>
#include <optional>

namespace npuc::graph {

Shape matMulZeroPointShape(const Shape &zp, bool rowWise) {
  if (zp.size() == 1 && rowWise)
    return {zp[0], 1};
  return zp;
}

namespace {

constexpr double kExactLimit = 16777216.0; // 2^24: fp32 holds every integer up to it

// The operand's values less the zero point (broadcast as the kernels do), when both are constant.
std::optional<std::vector<int64_t>> constDeviation(const Graph &g, ValueId v, ValueId zp,
                                                   const Shape &zpShape) {
  const Value &x = g.value(v);
  if (!x.i64 || (zp != kNoValue && !g.value(zp).i64))
    return std::nullopt;
  std::vector<int64_t> d = *x.i64;
  if (zp == kNoValue)
    return d;
  const std::vector<int64_t> &z = *g.value(zp).i64;
  // zpShape right-aligns against x.shape with extents 1 or equal (shape inference checked it).
  const size_t r = x.shape.size(), off = r - zpShape.size();
  std::vector<size_t> zStride(r, 0);
  for (size_t k = r, s = 1; k-- > off;) {
    if (zpShape[k - off] != 1)
      zStride[k] = s;
    s *= static_cast<size_t>(zpShape[k - off]);
  }
  for (size_t i = 0; i < d.size(); ++i) {
    size_t rest = i, zi = 0;
    for (size_t k = r; k-- > 0;) {
      const auto ext = static_cast<size_t>(x.shape[k]);
      zi += rest % ext * zStride[k];
      rest /= ext;
    }
    d[i] -= z[zi];
  }
  return d;
}

// The largest |v - zp| the operand can hold: from its values when constant, else from its type
// (and the zero point when that is constant).
double maxDeviation(const Graph &g, ValueId v, ValueId zp, const Shape &zpShape) {
  if (auto d = constDeviation(g, v, zp, zpShape)) {
    int64_t m = 0;
    for (int64_t e : *d)
      m = std::max<int64_t>(m, e < 0 ? -e : e);
    return static_cast<double>(m);
  }
  const bool isSigned = g.value(v).dtype == DType::I8;
  const double lo = isSigned ? -128 : 0, hi = isSigned ? 127 : 255;
  if (zp == kNoValue)
    return std::max(-lo, hi);
  if (const auto &z = g.value(zp).i64) {
    double m = 0;
    for (int64_t e : *z)
      m = std::max({m, hi - static_cast<double>(e), static_cast<double>(e) - lo});
    return m;
  }
  return hi - lo;
}

// The largest sum of |deviation| over one reduction line of a constant operand, whose values
// are laid out as [outer, K, inner] with the reduction over K (nullopt when not constant).
std::optional<double> maxLineSum(const Graph &g, ValueId v, ValueId zp, const Shape &zpShape,
                                 int64_t outer, int64_t K, int64_t inner) {
  auto d = constDeviation(g, v, zp, zpShape);
  if (!d)
    return std::nullopt;
  double best = 0;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k) {
        int64_t e = (*d)[static_cast<size_t>((o * K + k) * inner + i)];
        s += static_cast<double>(e < 0 ? -e : e);
      }
      best = std::max(best, s);
    }
  return best;
}

ValueId optInput(const Node &n, size_t i) {
  return i < n.inputs.size() ? n.inputs[i] : kNoValue;
}

Shape shapeOrScalar(const Graph &g, ValueId v) {
  return v == kNoValue ? Shape{} : g.value(v).shape;
}

} // namespace

void checkExactAccumulation(const Graph &g, const Node &n) {
  const ValueId a = n.inputs.at(0), b = n.inputs.at(1), az = optInput(n, 2), bz = optInput(n, 3);
  const Shape &as = g.value(a).shape, &bs = g.value(b).shape;
  double bound = 0;
  int64_t K = 0;
  if (n.kind == OpKind::ConvInteger) {
    // x [N, C, ...] with a scalar zero point; w [M, C/group, k...] with one per output channel.
    K = numElements(bs) / bs[0];
    Shape bzs; // [M, 1, ...]: one zero point per output channel
    if (bz != kNoValue && numElements(g.value(bz).shape) != 1) {
      bzs.assign(bs.size(), 1);
      bzs[0] = bs[0];
    }
    const double ma = maxDeviation(g, a, az, {}), mb = maxDeviation(g, b, bz, bzs);
    bound = static_cast<double>(K) * ma * mb;
    if (auto line = maxLineSum(g, b, bz, bzs, bs[0], K, 1))
      bound = std::min(bound, *line * ma);
  } else {
    K = as.back();
    const Shape azs = matMulZeroPointShape(shapeOrScalar(g, az), true);
    const Shape bzs = matMulZeroPointShape(shapeOrScalar(g, bz), false);
    const double ma = maxDeviation(g, a, az, azs), mb = maxDeviation(g, b, bz, bzs);
    bound = static_cast<double>(K) * ma * mb;
    // a: [outer, M, K] sums along its rows; b: [outer, K, N] along its columns.
    const int64_t N = bs.back();
    if (auto line = maxLineSum(g, a, az, azs, numElements(as) / K, K, 1))
      bound = std::min(bound, *line * mb);
    if (auto line = maxLineSum(g, b, bz, bzs, numElements(bs) / (K * N), K, N))
      bound = std::min(bound, *line * ma);
  }
  if (bound > kExactLimit)
    fail("node '{}' ({}): compiled targets sum its {} products per output in fp32, exact only up "
         "to 2^24, and its operands allow sums up to {} (from their types and constant values); "
         "`npuc ref` computes it exactly",
         n.name, n.kind, K, static_cast<int64_t>(bound));
}

} // namespace npuc::graph
