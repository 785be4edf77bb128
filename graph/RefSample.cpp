// RefSample.cpp - reference kernels of the operators that sample a tensor at data-given
// positions: MaxUnpool (scatter to indices), RoiAlign and MaxRoiPool (pooling over regions) and
// GridSample (interpolation at grid points) (RefInternal.h). Index operands are fp32 integers,
// as every runtime integer tensor; one outside its range is an error naming the node.
#include "graph/RefInternal.h"

#include "support/Error.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace npuc::graph::ref {

namespace {

// The integer an index operand holds, checked to lie in [0, extent).
int64_t indexIn(const Node &n, float v, int64_t extent, const char *what) {
  if (std::nearbyint(v) != v || v < 0 || v >= static_cast<float>(extent))
    fail("node '{}' ({}): {} {} is not an integer in [0, {})", n.name, n.kind, what, v, extent);
  return static_cast<int64_t>(v);
}

// Bilinear interpolation of one [H, W] plane at (y, x) with RoiAlign's edge rules (ONNX
// Runtime's, which torchvision shares): a point more than one pixel outside is 0, a point
// within clamps to the border. Returns the four corner weights and offsets for `max` mode.
struct Bilinear {
  std::array<double, 4> w{0, 0, 0, 0};
  std::array<int64_t, 4> at{0, 0, 0, 0};
};

Bilinear roiBilinear(float yf, float xf, int64_t H, int64_t W) {
  double y = yf, x = xf;
  Bilinear b;
  if (y < -1.0 || y > static_cast<double>(H) || x < -1.0 || x > static_cast<double>(W))
    return b;
  y = std::max(y, 0.0);
  x = std::max(x, 0.0);
  auto yl = static_cast<int64_t>(y), xl = static_cast<int64_t>(x);
  int64_t yh = yl + 1, xh = xl + 1;
  if (yl >= H - 1) {
    yh = yl = H - 1;
    y = static_cast<double>(yl);
  }
  if (xl >= W - 1) {
    xh = xl = W - 1;
    x = static_cast<double>(xl);
  }
  double ly = y - static_cast<double>(yl), lx = x - static_cast<double>(xl);
  double hy = 1 - ly, hx = 1 - lx;
  b.w = {hy * hx, hy * lx, ly * hx, ly * lx};
  b.at = {yl * W + xl, yl * W + xh, yh * W + xl, yh * W + xh};
  return b;
}

} // namespace

RefResult refMaxUnpool(const RefArgs &a) {
  const HostTensor &x = a.in(0), &idx = a.in(1);
  HostTensor out(a.outShape());
  for (int64_t i = 0; i < x.size(); ++i)
    out.data[indexIn(a.n, idx.data[i], out.size(), "index")] = x.data[i];
  return {out};
}

// The region geometry is computed in fp32, as ONNX Runtime and torchvision do (a sample grid's
// size is a ceil of it); the sums in double.
RefResult refRoiAlign(const RefArgs &a) {
  const Node &n = a.n;
  const HostTensor &x = a.in(0), &rois = a.in(1), &bi = a.in(2);
  HostTensor out(a.outShape());
  const int64_t C = x.shape[1], H = x.shape[2], W = x.shape[3];
  const int64_t OH = out.shape[2], OW = out.shape[3];
  const auto scale = static_cast<float>(n.attrFloat("spatial_scale", 1.0));
  const bool halfPixel =
      n.attrString("coordinate_transformation_mode", "half_pixel") == "half_pixel";
  const bool isMax = n.attrString("mode", "avg") == "max";
  const int64_t ratio = n.attrInt("sampling_ratio", 0);
  const float off = halfPixel ? 0.5f : 0.0f;
  for (int64_t r = 0; r < out.shape[0]; ++r) {
    int64_t b = indexIn(n, bi.data[r], x.shape[0], "batch index");
    const float *roi = rois.data.data() + r * 4;
    float x0 = roi[0] * scale - off, y0 = roi[1] * scale - off;
    float rw = roi[2] * scale - off - x0, rh = roi[3] * scale - off - y0;
    if (!halfPixel) { // output_half_pixel: the legacy rule forces at least one pixel
      rw = std::max(rw, 1.0f);
      rh = std::max(rh, 1.0f);
    }
    float bh = rh / static_cast<float>(OH), bw = rw / static_cast<float>(OW);
    int64_t gh = ratio > 0 ? ratio : static_cast<int64_t>(std::ceil(rh / static_cast<float>(OH)));
    int64_t gw = ratio > 0 ? ratio : static_cast<int64_t>(std::ceil(rw / static_cast<float>(OW)));
    double count = static_cast<double>(std::max<int64_t>(gh * gw, 1));
    for (int64_t c = 0; c < C; ++c) {
      const float *plane = x.data.data() + (b * C + c) * H * W;
      for (int64_t ph = 0; ph < OH; ++ph)
        for (int64_t pw = 0; pw < OW; ++pw) {
          double acc = 0; // max mode: 0 when the grid is empty, as in ONNX Runtime
          for (int64_t iy = 0; iy < gh; ++iy)
            for (int64_t ix = 0; ix < gw; ++ix) {
              float yy = y0 + static_cast<float>(ph) * bh +
                         (static_cast<float>(iy) + 0.5f) * bh / static_cast<float>(gh);
              float xx = x0 + static_cast<float>(pw) * bw +
                         (static_cast<float>(ix) + 0.5f) * bw / static_cast<float>(gw);
              Bilinear s = roiBilinear(yy, xx, H, W);
              // max mode: the largest weighted corner of each sample (ONNX Runtime's rule).
              double v = isMax ? -std::numeric_limits<double>::infinity() : 0.0;
              for (size_t k = 0; k < 4; ++k)
                v = isMax ? std::max(v, s.w[k] * plane[s.at[k]]) : v + s.w[k] * plane[s.at[k]];
              acc = isMax ? (iy == 0 && ix == 0 ? v : std::max(acc, v)) : acc + v;
            }
          out.data[((r * C + c) * OH + ph) * OW + pw] =
              static_cast<float>(isMax ? acc : acc / count);
        }
    }
  }
  return {out};
}

RefResult refMaxRoiPool(const RefArgs &a) {
  const Node &n = a.n;
  const HostTensor &x = a.in(0), &rois = a.in(1);
  HostTensor out(a.outShape());
  const int64_t C = x.shape[1], H = x.shape[2], W = x.shape[3];
  const int64_t OH = out.shape[2], OW = out.shape[3];
  const double scale = n.attrFloat("spatial_scale", 1.0);
  for (int64_t r = 0; r < out.shape[0]; ++r) {
    const float *roi = rois.data.data() + r * 5;
    int64_t b = indexIn(n, roi[0], x.shape[0], "batch index");
    // Fast R-CNN's rule (ONNX Runtime, torchvision): corners rounded to whole pixels, inclusive.
    auto x0 = static_cast<int64_t>(std::round(roi[1] * scale));
    auto y0 = static_cast<int64_t>(std::round(roi[2] * scale));
    auto x1 = static_cast<int64_t>(std::round(roi[3] * scale));
    auto y1 = static_cast<int64_t>(std::round(roi[4] * scale));
    // The bins in fp32, as ONNX Runtime and torchvision compute them (floor/ceil of them).
    float bh = static_cast<float>(std::max<int64_t>(y1 - y0 + 1, 1)) / static_cast<float>(OH);
    float bw = static_cast<float>(std::max<int64_t>(x1 - x0 + 1, 1)) / static_cast<float>(OW);
    for (int64_t c = 0; c < C; ++c) {
      const float *plane = x.data.data() + (b * C + c) * H * W;
      for (int64_t ph = 0; ph < OH; ++ph)
        for (int64_t pw = 0; pw < OW; ++pw) {
          auto edge = [](float v, int64_t base, int64_t hi) {
            return std::clamp<int64_t>(static_cast<int64_t>(v) + base, 0, hi);
          };
          auto fph = static_cast<float>(ph), fpw = static_cast<float>(pw);
          int64_t hs = edge(std::floor(fph * bh), y0, H),
                  he = edge(std::ceil((fph + 1) * bh), y0, H);
          int64_t ws = edge(std::floor(fpw * bw), x0, W),
                  we = edge(std::ceil((fpw + 1) * bw), x0, W);
          double m = he <= hs || we <= ws ? 0.0 : -std::numeric_limits<double>::infinity();
          for (int64_t h = hs; h < he; ++h)
            for (int64_t w = ws; w < we; ++w)
              m = std::max(m, static_cast<double>(plane[h * W + w]));
          out.data[((r * C + c) * OH + ph) * OW + pw] = static_cast<float>(m);
        }
    }
  }
  return {out};
}

namespace {

// GridSample's coordinate rules (ONNX opset 16, as PyTorch's grid_sample): a normalised
// coordinate in [-1, 1] to a pixel position, and the padding mode applied to a position.
enum class GridPad { Zeros, Border, Reflection };

double unnormalize(double c, int64_t size, bool alignCorners) {
  auto s = static_cast<double>(size);
  return alignCorners ? (c + 1) / 2 * (s - 1) : ((c + 1) * s - 1) / 2;
}

double reflect(double c, double twiceLow, double twiceHigh) {
  if (twiceLow == twiceHigh)
    return 0;
  double lo = twiceLow / 2, span = (twiceHigh - twiceLow) / 2;
  c = std::fabs(c - lo);
  double extra = std::fmod(c, span);
  auto flips = static_cast<int64_t>(std::floor(c / span));
  return flips % 2 == 0 ? extra + lo : span - extra + lo;
}

double padCoord(double c, int64_t size, GridPad pad, bool alignCorners) {
  auto hi = static_cast<double>(size - 1);
  if (pad == GridPad::Border)
    return std::clamp(c, 0.0, hi);
  if (pad == GridPad::Reflection) {
    c = alignCorners ? reflect(c, 0, 2 * hi) : reflect(c, -1, 2 * hi + 1);
    return std::clamp(c, 0.0, hi);
  }
  return c;
}

// The cubic convolution weights (A = -0.75) of the four taps around fraction t.
std::array<double, 4> cubicWeights(double t) {
  const double A = -0.75;
  auto near = [&](double d) { return ((A + 2) * d - (A + 3)) * d * d + 1; };
  auto far = [&](double d) { return ((A * d - 5 * A) * d + 8 * A) * d - 4 * A; };
  return {far(t + 1), near(t), near(1 - t), far(2 - t)};
}

} // namespace

RefResult refGridSample(const RefArgs &a) {
  const Node &n = a.n;
  const HostTensor &x = a.in(0), &grid = a.in(1);
  HostTensor out(a.outShape());
  const int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  const int64_t OH = out.shape[2], OW = out.shape[3];
  const std::string mode = n.attrString("mode", "bilinear");
  const std::string padName = n.attrString("padding_mode", "zeros");
  const GridPad pad = padName == "border"       ? GridPad::Border
                      : padName == "reflection" ? GridPad::Reflection
                                                : GridPad::Zeros;
  const bool align = n.attrInt("align_corners", 0) != 0;
  for (int64_t b = 0; b < N; ++b)
    for (int64_t c = 0; c < C; ++c) {
      const float *plane = x.data.data() + (b * C + c) * H * W;
      // A tap outside the input reads 0 (after the padding mode has moved it, if it does).
      auto at = [&](int64_t yy, int64_t xx) {
        return yy < 0 || yy >= H || xx < 0 || xx >= W ? 0.0
                                                      : static_cast<double>(plane[yy * W + xx]);
      };
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox) {
          const float *gp = grid.data.data() + ((b * OH + oy) * OW + ox) * 2;
          double ix = unnormalize(gp[0], W, align), iy = unnormalize(gp[1], H, align);
          double v = 0;
          if (mode == "bicubic") {
            auto fx = std::floor(ix), fy = std::floor(iy);
            auto wx = cubicWeights(ix - fx), wy = cubicWeights(iy - fy);
            for (int64_t i = 0; i < 4; ++i)
              for (int64_t j = 0; j < 4; ++j) {
                // Each tap is moved by the padding mode on its own (PyTorch's rule).
                double ty = padCoord(fy - 1 + static_cast<double>(i), H, pad, align);
                double tx = padCoord(fx - 1 + static_cast<double>(j), W, pad, align);
                v += wy[size_t(i)] * wx[size_t(j)] *
                     at(static_cast<int64_t>(ty), static_cast<int64_t>(tx));
              }
          } else {
            ix = padCoord(ix, W, pad, align);
            iy = padCoord(iy, H, pad, align);
            if (mode == "nearest") {
              v = at(static_cast<int64_t>(std::nearbyint(iy)),
                     static_cast<int64_t>(std::nearbyint(ix)));
            } else {
              auto fx = std::floor(ix), fy = std::floor(iy);
              double lx = ix - fx, ly = iy - fy;
              auto x0 = static_cast<int64_t>(fx), y0 = static_cast<int64_t>(fy);
              v = (1 - ly) * ((1 - lx) * at(y0, x0) + lx * at(y0, x0 + 1)) +
                  ly * ((1 - lx) * at(y0 + 1, x0) + lx * at(y0 + 1, x0 + 1));
            }
          }
          out.data[((b * C + c) * OH + oy) * OW + ox] = static_cast<float>(v);
        }
    }
  return {out};
}

} // namespace npuc::graph::ref
