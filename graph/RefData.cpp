// RefData.cpp - reference kernels of the extended data-movement and window ops (ExtOps.h):
// ConvTranspose, LpPool, Split, Slice, Expand, Tile, Resize (nearest/linear, every coordinate
// transformation mode but tf_crop_and_resize), DepthToSpace/SpaceToDepth, GatherElements, Trilu,
// EyeLike, Cast, and the compile-time ops ConstantOfShape, Range and Size.
#include "graph/ExtOps.h"
#include "graph/RefInternal.h"

#include "support/Error.h"

#include <algorithm>
#include <cmath>

namespace npuc::graph {

using ref::Index;

namespace {

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

// Gather form shared by the pure data-movement ops: out[i] = x[src(out multi-index)].
template <typename F> HostTensor gatherBy(const HostTensor &x, const Shape &os, F src) {
  HostTensor out(os);
  for (int64_t i = 0; i < out.size(); ++i)
    out.data[i] = x.data[ref::flatten(src(ref::unflatten(i, os)), x.shape)];
  return out;
}

} // namespace

double resizeSourceCoord(const Node &n, size_t axis, int64_t xOut, int64_t inLen, int64_t outLen) {
  std::string mode = n.attrString("coordinate_transformation_mode", "half_pixel");
  double scale = n.attrs.count("scales") ? std::get<std::vector<double>>(n.attrs.at("scales"))[axis]
                                         : static_cast<double>(outLen) / inLen;
  auto x = static_cast<double>(xOut);
  if (mode == "half_pixel")
    return (x + 0.5) / scale - 0.5;
  if (mode == "pytorch_half_pixel")
    return outLen > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
  if (mode == "align_corners")
    return outLen == 1 ? 0.0 : x * static_cast<double>(inLen - 1) / static_cast<double>(outLen - 1);
  if (mode == "asymmetric")
    return x / scale;
  if (mode == "tf_half_pixel_for_nn")
    return (x + 0.5) / scale;
  fail("node '{}' (Resize): coordinate_transformation_mode={} not supported", n.name, mode);
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

namespace {

HostTensor resize(const Node &n, const HostTensor &x, const Shape &os) {
  size_t r = os.size();
  bool linear = n.attrString("mode", "nearest") == "linear";
  HostTensor out(os);
  for (int64_t i = 0; i < out.size(); ++i) {
    Index oi = ref::unflatten(i, os);
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

} // namespace

bool evalExtData(const Graph &g, const Node &n, const std::vector<const HostTensor *> &ins,
                 std::vector<HostTensor> &outs) {
  const Shape &os = g.value(n.outputs.at(0)).shape;
  const OpKind op = n.kind;
  auto opt = [&](size_t i) -> const HostTensor * { return i < ins.size() ? ins[i] : nullptr; };
  const HostTensor *x = opt(0);
  if (op == OpKind::ConvTranspose) {
    outs = {convTranspose(n, *x, *ins.at(1), opt(2), os)};
  } else if (op == OpKind::LpPool) {
    outs = {lpPool(n, *x, os)};
  } else if (op == OpKind::Split) {
    auto axis = static_cast<size_t>(n.attrInt("axis", 0));
    int64_t pos = 0;
    outs.clear();
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      const Shape &s = g.value(n.outputs[k]).shape;
      outs.push_back(gatherBy(*x, s, [&](Index i) {
        i[axis] += pos;
        return i;
      }));
      pos += s[axis];
    }
  } else if (op == OpKind::Slice) {
    auto b = n.attrInts("starts"), st = n.attrInts("steps");
    outs = {gatherBy(*x, os, [&](Index i) {
      for (size_t d = 0; d < i.size(); ++d)
        i[d] = b[d] + i[d] * st[d];
      return i;
    })};
  } else if (op == OpKind::Expand || op == OpKind::Tile) {
    size_t off = os.size() - x->shape.size();
    outs = {gatherBy(*x, os, [&](const Index &i) {
      Index s(x->shape.size());
      for (size_t d = 0; d < s.size(); ++d)
        s[d] = i[d + off] % x->shape[d]; // broadcast (extent 1) and tiling alike
      return s;
    })};
  } else if (op == OpKind::Resize) {
    outs = {resize(n, *x, os)};
  } else if (op == OpKind::DepthToSpace) {
    int64_t bs = n.attrInt("blocksize", 1), C = os[1];
    bool crd = n.attrString("mode", "DCR") == "CRD";
    outs = {gatherBy(*x, os, [&](const Index &i) {
      int64_t bh = i[2] % bs, bw = i[3] % bs;
      int64_t c = crd ? (i[1] * bs + bh) * bs + bw : (bh * bs + bw) * C + i[1];
      return Index{i[0], c, i[2] / bs, i[3] / bs};
    })};
  } else if (op == OpKind::SpaceToDepth) {
    int64_t bs = n.attrInt("blocksize", 1), C = x->shape[1];
    outs = {gatherBy(*x, os, [&](const Index &i) {
      int64_t c = i[1] % C, blk = i[1] / C;
      return Index{i[0], c, i[2] * bs + blk / bs, i[3] * bs + blk % bs};
    })};
  } else if (op == OpKind::GatherElements) {
    auto axis = static_cast<size_t>(n.attrInt("axis", 0));
    const HostTensor &idx = *ins.at(1);
    HostTensor out(os);
    for (int64_t i = 0; i < out.size(); ++i) {
      Index si = ref::unflatten(i, os);
      auto k = static_cast<int64_t>(idx.data[i]);
      k = k < 0 ? k + x->shape[axis] : k;
      if (k < 0 || k >= x->shape[axis])
        fail("node '{}' (GatherElements): index {} out of range [0, {})", n.name, k,
             x->shape[axis]);
      si[axis] = k;
      out.data[i] = x->data[ref::flatten(si, x->shape)];
    }
    outs = {out};
  } else if (op == OpKind::Trilu || op == OpKind::EyeLike) {
    int64_t k = n.attrInt("k", 0);
    bool upper = n.attrInt("upper", 1) != 0;
    HostTensor out(os);
    for (int64_t i = 0; i < out.size(); ++i) {
      Index si = ref::unflatten(i, os);
      int64_t diff = si[si.size() - 1] - si[si.size() - 2]; // column - row
      if (op == OpKind::EyeLike)
        out.data[i] = diff == k ? 1.0f : 0.0f;
      else
        out.data[i] = (upper ? diff >= k : diff <= k) ? x->data[i] : 0.0f;
    }
    outs = {out};
  } else if (op == OpKind::Cast) {
    DType to = g.value(n.outputs[0]).dtype;
    HostTensor out(os);
    for (int64_t i = 0; i < out.size(); ++i) {
      float v = x->data[i];
      out.data[i] = to == DType::Bool  ? (v != 0 ? 1.0f : 0.0f)
                    : to == DType::I64 ? std::trunc(v)
                                       : v;
    }
    outs = {out};
  } else if (op == OpKind::ConstantOfShape) {
    HostTensor out(os);
    std::fill(out.data.begin(), out.data.end(), static_cast<float>(n.attrFloat("value", 0.0)));
    outs = {out};
  } else if (op == OpKind::Range) {
    HostTensor out(os);
    for (int64_t i = 0; i < out.size(); ++i)
      out.data[i] = static_cast<float>(double(x->data[0]) + double(i) * ins.at(2)->data[0]);
    outs = {out};
  } else if (op == OpKind::Size) {
    outs = {HostTensor({}, {static_cast<float>(x->size())})};
  } else {
    return false;
  }
  return true;
}

bool evalExtNode(const Graph &g, const Node &n, const std::vector<const HostTensor *> &ins,
                 std::vector<HostTensor> &outs) {
  return evalExtMath(g, n, ins, outs) || evalExtData(g, n, ins, outs);
}

} // namespace npuc::graph
