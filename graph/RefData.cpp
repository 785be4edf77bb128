// RefData.cpp - reference kernels of the data-movement ops (RefInternal.h): the views, Transpose,
// Concat/Split, Pad, Slice, Expand/Tile, Resize (nearest/linear/cubic, every coordinate
// transformation mode), DepthToSpace/SpaceToDepth, Gather/GatherElements,
// Trilu, EyeLike, Cast, and the ops that compute a tensor from shapes or constants (Shape, Size,
// ConstantOfShape, Range).
#include "graph/ExtOps.h"
#include "graph/PadMode.h"
#include "graph/RefInternal.h"
#include "graph/Reference.h"

#include "support/Error.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace npuc::graph {

double resizeSourceCoord(const Node &n, size_t axis, int64_t xOut, int64_t inLen, int64_t outLen) {
  std::string mode = n.attrString("coordinate_transformation_mode", "half_pixel");
  double scale = n.attrs.count("scales") ? std::get<std::vector<double>>(n.attrs.at("scales"))[axis]
                                         : static_cast<double>(outLen) / inLen;
  auto x = static_cast<double>(xOut);
  if (mode == "half_pixel")
    return (x + 0.5) / scale - 0.5;
  if (mode == "pytorch_half_pixel")
    return outLen > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
  // align_corners and tf_crop_and_resize divide by the resized length less one; ONNX's reference
  // (and its node tests) take that length as scale * inLen, not the floored output extent: a
  // downsampling by 0.6 of 4 maps x to x * 3 / 1.4.
  const double resized = scale * static_cast<double>(inLen);
  if (mode == "align_corners")
    return resized == 1 ? 0.0 : x * static_cast<double>(inLen - 1) / (resized - 1);
  if (mode == "tf_crop_and_resize") {
    const auto &roi = std::get<std::vector<double>>(n.attrs.at("roi"));
    const size_t r = roi.size() / 2;
    const double start = roi.at(axis), span = roi.at(axis + r) - start;
    const auto last = static_cast<double>(inLen - 1);
    return start * last + (resized == 1 ? span * last / 2 : x * span * last / (resized - 1));
  }
  if (mode == "asymmetric")
    return x / scale;
  if (mode == "tf_half_pixel_for_nn")
    return (x + 0.5) / scale;
  fail("node '{}' (Resize): coordinate_transformation_mode={} not supported", n.name, mode);
}

bool resizeOutside(const Node &n, double c, int64_t inLen) {
  return n.attrString("coordinate_transformation_mode", "") == "tf_crop_and_resize" &&
         (c < 0 || c > static_cast<double>(inLen - 1));
}

int64_t resizeNearest(const Node &n, double c, int64_t inLen) {
  std::string m = n.attrString("nearest_mode", "round_prefer_floor");
  double r;
  if (m == "round_prefer_floor")
    r = c == std::floor(c) + 0.5 ? std::floor(c) : std::round(c);
  else if (m == "round_prefer_ceil")
    r = std::round(c); // halves away from zero; the coordinate is >= -0.5 so ties go up
  else if (m == "floor")
    r = std::floor(c);
  else if (m == "ceil")
    r = std::ceil(c);
  else
    fail("node '{}' (Resize): nearest_mode={} not supported", n.name, m);
  return std::clamp(static_cast<int64_t>(r), int64_t{0}, inLen - 1);
}

double resizeCubicWeight(double a, double x) {
  if (x <= 1)
    return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2)
    return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

namespace ref {

namespace {

// Gather form shared by the pure data-movement ops: out[i] = x[src(out multi-index)].
// Like every kernel here that only moves elements, it keeps x's dtype and storage.
template <typename F> HostTensor gatherBy(const HostTensor &x, const Shape &os, F src) {
  HostTensor out(os, x.dtype);
  for (int64_t i = 0; i < out.size(); ++i)
    out.copyElement(i, x, ref::flatten(src(ref::unflatten(i, os)), x.shape));
  return out;
}

HostTensor transpose(const HostTensor &x, const std::vector<int64_t> &perm, const Shape &os) {
  Index ist = stridesOf(x.shape), st(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    st[i] = ist[static_cast<size_t>(perm[i])];
  HostTensor out(os, x.dtype);
  forEachBroadcast(
      os, {st}, [&](int64_t o, const std::vector<int64_t> &off) { out.copyElement(o, x, off[0]); });
  return out;
}

HostTensor concat(const std::vector<const HostTensor *> &in, int64_t axis, const Shape &os) {
  axis = axis < 0 ? axis + static_cast<int64_t>(os.size()) : axis;
  int64_t outer = numElements(Shape(os.begin(), os.begin() + axis));
  int64_t inner = numElements(Shape(os.begin() + axis + 1, os.end()));
  HostTensor out(os, in.at(0)->dtype);
  int64_t pos = 0;
  for (const HostTensor *t : in) {
    int64_t len = t->shape[static_cast<size_t>(axis)];
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t k = 0; k < len * inner; ++k)
        out.copyElement((o * os[static_cast<size_t>(axis)] + pos) * inner + k, *t,
                        o * len * inner + k);
    pos += len;
  }
  return out;
}

// `value`: the constant_value attribute, or the run-time operand's (refPad); every output
// position reads its source per axis (graph/PadMode.h), or takes the value in constant mode.
HostTensor pad(const Node &n, const HostTensor &x, const Shape &os, double value) {
  auto pads = n.attrInts("pads");
  const PadMode mode = padModeOf(n);
  const size_t r = os.size();
  std::vector<PadAxis> axes;
  for (size_t d = 0; d < r; ++d)
    axes.push_back(padAxis(x.shape[d], pads[d], pads[d + r]));
  HostTensor out(os, x.dtype);
  if (out.isInt())
    std::fill(out.ints.begin(), out.ints.end(), floatToIntType(x.dtype, value));
  else
    std::fill(out.data.begin(), out.data.end(), static_cast<float>(value));
  for (int64_t i = 0; i < out.size(); ++i) {
    Index oi = ref::unflatten(i, os), si(r);
    bool inside = true;
    for (size_t d = 0; d < r && inside; ++d) {
      std::optional<int64_t> s = padSource(mode, axes[d], oi[d]);
      inside = s.has_value();
      si[d] = s.value_or(0);
    }
    if (inside)
      out.copyElement(i, x, ref::flatten(si, x.shape));
  }
  return out;
}

HostTensor gather(const Node &n, const HostTensor &x, const HostTensor &idx, const Shape &os) {
  checkGatherIndices(n, x.shape, idx);
  int64_t axis = n.attrInt("axis", 0);
  axis = axis < 0 ? axis + static_cast<int64_t>(x.shape.size()) : axis;
  int64_t outer = numElements(Shape(x.shape.begin(), x.shape.begin() + axis));
  int64_t len = x.shape[static_cast<size_t>(axis)];
  int64_t inner = numElements(Shape(x.shape.begin() + axis + 1, x.shape.end()));
  HostTensor out(os, x.dtype);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < idx.size(); ++j) {
      int64_t k = idx.intAt(j);
      k = k < 0 ? k + len : k;
      for (int64_t i = 0; i < inner; ++i)
        out.copyElement((o * idx.size() + j) * inner + i, x, (o * len + k) * inner + i);
    }
  return out;
}

// Cubic: 4 taps per axis around the source coordinate (Keys' kernel with coefficient A), edge
// indices clamped; with exclude_outside the taps outside the input get weight 0 and the rest are
// renormalised. 4^rank taps in all; an axis whose coordinate is an integer has weights 0,1,0,0.
double cubicResize(const Node &n, const HostTensor &x, const Shape &os, const Index &oi) {
  const size_t r = os.size();
  const double A = n.attrFloat("cubic_coeff_a", -0.75);
  const bool exclude = n.attrInt("exclude_outside", 0) != 0;
  std::vector<std::array<int64_t, 4>> idx(r);
  std::vector<std::array<double, 4>> w(r);
  for (size_t d = 0; d < r; ++d) {
    double c = resizeSourceCoord(n, d, oi[d], x.shape[d], os[d]);
    double f = std::floor(c), t = c - f;
    double sum = 0;
    for (int k = 0; k < 4; ++k) {
      auto src = static_cast<int64_t>(f) + k - 1;
      w[d][k] = resizeCubicWeight(A, std::fabs(t + 1 - k));
      if (exclude && (src < 0 || src >= x.shape[d]))
        w[d][k] = 0;
      sum += w[d][k];
      idx[d][k] = std::clamp<int64_t>(src, 0, x.shape[d] - 1);
    }
    if (exclude)
      for (double &v : w[d])
        v /= sum;
  }
  double acc = 0;
  for (int64_t tap = 0; tap < (int64_t{1} << (2 * r)); ++tap) {
    Index si(r);
    double wt = 1;
    for (size_t d = 0; d < r; ++d) {
      auto k = static_cast<size_t>((tap >> (2 * d)) & 3);
      si[d] = idx[d][k];
      wt *= w[d][k];
    }
    if (wt != 0)
      acc += wt * x.data[ref::flatten(si, x.shape)];
  }
  return acc;
}

// tf_crop_and_resize: an output position whose source coordinate lies outside the input along
// any axis is extrapolation_value (ONNX's per-axis interpolation returns it for that axis, and
// the weights of the others sum to 1).
bool outsideInput(const Node &n, const Shape &xs, const Shape &os, const Index &oi) {
  for (size_t d = 0; d < os.size(); ++d)
    if (resizeOutside(n, resizeSourceCoord(n, d, oi[d], xs[d], os[d]), xs[d]))
      return true;
  return false;
}

HostTensor resize(const Node &n, const HostTensor &x, const Shape &os) {
  size_t r = os.size();
  const std::string mode = n.attrString("mode", "nearest");
  bool linear = mode == "linear";
  const bool crop = n.attrString("coordinate_transformation_mode", "") == "tf_crop_and_resize";
  HostTensor out(os);
  for (int64_t i = 0; i < out.size(); ++i) {
    Index oi = ref::unflatten(i, os);
    if (crop && outsideInput(n, x.shape, os, oi)) {
      out.data[i] = static_cast<float>(n.attrFloat("extrapolation_value", 0.0));
      continue;
    }
    if (mode == "cubic") {
      out.data[i] = static_cast<float>(cubicResize(n, x, os, oi));
      continue;
    }
    if (!linear) {
      Index si(r);
      for (size_t d = 0; d < r; ++d)
        si[d] = resizeNearest(n, resizeSourceCoord(n, d, oi[d], x.shape[d], os[d]), x.shape[d]);
      out.data[i] = x.data[ref::flatten(si, x.shape)];
      continue;
    }
    // n-linear: 2^rank corners, each weighted by the product of its per-axis weights; the
    // coordinate is clamped to the input, which equals ONNX's edge padding.
    Index lo(r), hi(r);
    std::vector<double> w(r);
    for (size_t d = 0; d < r; ++d) {
      double c = std::clamp(resizeSourceCoord(n, d, oi[d], x.shape[d], os[d]), 0.0,
                            static_cast<double>(x.shape[d] - 1));
      lo[d] = static_cast<int64_t>(std::floor(c));
      hi[d] = std::min(lo[d] + 1, x.shape[d] - 1);
      w[d] = c - static_cast<double>(lo[d]);
    }
    double acc = 0;
    for (int64_t corner = 0; corner < (int64_t{1} << r); ++corner) {
      Index si(r);
      double wt = 1;
      for (size_t d = 0; d < r; ++d) {
        bool up = (corner >> d) & 1;
        si[d] = up ? hi[d] : lo[d];
        wt *= up ? w[d] : 1.0 - w[d];
      }
      if (wt != 0)
        acc += wt * x.data[ref::flatten(si, x.shape)];
    }
    out.data[i] = static_cast<float>(acc);
  }
  return out;
}

// The elementwise kernels that read an output position's own coordinates: Trilu, EyeLike.
template <typename F> HostTensor byPosition(const Shape &os, F value) {
  HostTensor out(os);
  for (int64_t i = 0; i < out.size(); ++i)
    out.data[i] = value(i, ref::unflatten(i, os));
  return out;
}

} // namespace

// The views (Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout): row-major order is kept.
RefResult refCopy(const RefArgs &a) {
  HostTensor out = a.in(0);
  out.shape = a.outShape();
  return {out};
}

RefResult refTranspose(const RefArgs &a) {
  return {transpose(a.in(0), a.n.attrInts("perm"), a.outShape())};
}

RefResult refConcat(const RefArgs &a) {
  return {concat(a.ins, a.n.attrInt("axis", 0), a.outShape())};
}

RefResult refSplit(const RefArgs &a) {
  const HostTensor &x = a.in(0);
  auto axis = static_cast<size_t>(a.n.attrInt("axis", 0));
  int64_t pos = 0;
  RefResult outs;
  for (size_t k = 0; k < a.n.outputs.size(); ++k) {
    const Shape &s = a.outShape(k);
    outs.push_back(gatherBy(x, s, [&](Index i) {
      i[axis] += pos;
      return i;
    }));
    pos += s[axis];
  }
  return outs;
}

RefResult refPad(const RefArgs &a) {
  // The padding value: a run-time scalar (the frontend keeps ONNX's constant_value as input 1
  // when it is not a constant), else the `value` attribute.
  if (const HostTensor *v = a.opt(1)) {
    NPUC_ASSERT(v->size() == 1, "the frontend checks that constant_value is a scalar");
    return {pad(a.n, a.in(0), a.outShape(), v->valueAt(0))};
  }
  return {pad(a.n, a.in(0), a.outShape(), a.n.attrFloat("value", 0.0))};
}

RefResult refSlice(const RefArgs &a) {
  auto b = a.n.attrInts("starts"), st = a.n.attrInts("steps");
  return {gatherBy(a.in(0), a.outShape(), [&](Index i) {
    for (size_t d = 0; d < i.size(); ++d)
      i[d] = b[d] + i[d] * st[d];
    return i;
  })};
}

// Expand and Tile.
RefResult refRepeat(const RefArgs &a) {
  const HostTensor &x = a.in(0);
  const Shape &os = a.outShape();
  size_t off = os.size() - x.shape.size();
  return {gatherBy(x, os, [&](const Index &i) {
    Index s(x.shape.size());
    for (size_t d = 0; d < s.size(); ++d)
      s[d] = i[d + off] % x.shape[d]; // broadcast (extent 1) and tiling alike
    return s;
  })};
}

RefResult refResize(const RefArgs &a) {
  return {resize(a.n, a.in(0), a.outShape())};
}

RefResult refDepthToSpace(const RefArgs &a) {
  const Shape &os = a.outShape();
  int64_t bs = a.n.attrInt("blocksize", 1), C = os[1];
  bool crd = a.n.attrString("mode", "DCR") == "CRD";
  return {gatherBy(a.in(0), os, [&](const Index &i) {
    int64_t bh = i[2] % bs, bw = i[3] % bs;
    int64_t c = crd ? (i[1] * bs + bh) * bs + bw : (bh * bs + bw) * C + i[1];
    return Index{i[0], c, i[2] / bs, i[3] / bs};
  })};
}

RefResult refSpaceToDepth(const RefArgs &a) {
  const HostTensor &x = a.in(0);
  int64_t bs = a.n.attrInt("blocksize", 1), C = x.shape[1];
  return {gatherBy(x, a.outShape(), [&](const Index &i) {
    int64_t c = i[1] % C, blk = i[1] / C;
    return Index{i[0], c, i[2] * bs + blk / bs, i[3] * bs + blk % bs};
  })};
}

RefResult refGather(const RefArgs &a) {
  return {gather(a.n, a.in(0), a.in(1), a.outShape())};
}

RefResult refGatherElements(const RefArgs &a) {
  const HostTensor &x = a.in(0), &idx = a.in(1);
  const Shape &os = a.outShape();
  auto axis = static_cast<size_t>(a.n.attrInt("axis", 0));
  checkGatherIndices(a.n, x.shape, idx);
  HostTensor out(os, x.dtype);
  for (int64_t i = 0; i < out.size(); ++i) {
    Index si = ref::unflatten(i, os);
    int64_t k = idx.intAt(i);
    k = k < 0 ? k + x.shape[axis] : k;
    si[axis] = k;
    out.copyElement(i, x, ref::flatten(si, x.shape));
  }
  return {out};
}

RefResult refTrilu(const RefArgs &a) {
  const HostTensor &x = a.in(0);
  // k: the attribute, or the run-time scalar input 1 (the frontend keeps a non-constant k).
  const HostTensor *kIn = a.opt(1);
  const int64_t k = kIn ? kIn->intAt(0) : a.n.attrInt("k", 0);
  bool upper = a.n.attrInt("upper", 1) != 0;
  return {byPosition(a.outShape(), [&](int64_t i, const Index &si) {
    int64_t diff = si[si.size() - 1] - si[si.size() - 2]; // column - row
    return (upper ? diff >= k : diff <= k) ? x.data[i] : 0.0f;
  })};
}

RefResult refEyeLike(const RefArgs &a) {
  int64_t k = a.n.attrInt("k", 0);
  return {byPosition(a.outShape(), [&](int64_t, const Index &si) {
    int64_t diff = si[si.size() - 1] - si[si.size() - 2]; // column - row
    return diff == k ? 1.0f : 0.0f;
  })};
}

RefResult refShapeOf(const RefArgs &a) {
  const Shape &s = a.in(0).shape;
  return {HostTensor({static_cast<int64_t>(s.size())}, DType::I64, s)};
}

RefResult refSize(const RefArgs &a) {
  return {HostTensor({}, DType::I64, {numElements(a.in(0).shape)})};
}

RefResult refConstantOfShape(const RefArgs &a) {
  HostTensor out(a.outShape());
  std::fill(out.data.begin(), out.data.end(), static_cast<float>(a.n.attrFloat("value", 0.0)));
  return {out};
}

RefResult refRange(const RefArgs &a) {
  HostTensor out(a.outShape());
  for (int64_t i = 0; i < out.size(); ++i)
    out.data[i] = static_cast<float>(double(a.in(0).data[0]) + double(i) * a.in(2).data[0]);
  return {out};
}

} // namespace ref

void checkGatherIndices(const Node &n, const Shape &data, const HostTensor &indices) {
  NPUC_ASSERT(n.kind == OpKind::Gather || n.kind == OpKind::GatherElements,
              "only gathers have indices to check");
  int64_t axis = n.attrInt("axis", 0);
  axis = axis < 0 ? axis + static_cast<int64_t>(data.size()) : axis;
  const int64_t len = data.at(static_cast<size_t>(axis));
  for (int64_t i = 0; i < indices.size(); ++i) {
    int64_t k = indices.intAt(i);
    k = k < 0 ? k + len : k;
    if (k < 0 || k >= len)
      fail("node '{}' ({}): index {} out of range [0, {})", n.name, n.kind, k, len);
  }
}

} // namespace npuc::graph
