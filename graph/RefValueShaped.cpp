// RefValueShaped.cpp - reference kernels of Unique and NonMaxSuppression, whose output shapes
// depend on their input values: npuc evaluates them at import on constant inputs (the shape rule
// inferValueShaped runs them for the shapes), so they compute their output shapes themselves.
#include "graph/RefInternal.h"

#include "support/Error.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>

namespace npuc::graph::ref {

namespace {

// The slices of x along `axis` (every element whose index on the axis is s, outer-major), the
// unit Unique compares; without an axis every element is a slice of one.
std::vector<std::vector<float>> slices(const HostTensor &x, int64_t axis) {
  if (axis < 0) {
    std::vector<std::vector<float>> s;
    for (float v : x.data)
      s.push_back({v});
    return s;
  }
  auto a = static_cast<size_t>(axis);
  int64_t outer = numElements(Shape(x.shape.begin(), x.shape.begin() + axis));
  int64_t len = x.shape[a];
  int64_t inner = numElements(Shape(x.shape.begin() + axis + 1, x.shape.end()));
  std::vector<std::vector<float>> s(static_cast<size_t>(len));
  for (int64_t k = 0; k < len; ++k)
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i)
        s[static_cast<size_t>(k)].push_back(x.data[(o * len + k) * inner + i]);
  return s;
}

} // namespace

// Outputs: the unique slices (sorted, or in order of first occurrence), the index of each one's
// first occurrence, the unique index of every input slice, and each one's count.
RefResult refUnique(const RefArgs &a) {
  const HostTensor &x = a.in(0);
  int64_t axis = a.n.attrInt("axis", -1);
  std::vector<std::vector<float>> s = slices(x, axis);
  std::vector<int64_t> first; // first occurrence of each distinct slice, in input order
  std::vector<int64_t> inverse(s.size());
  for (size_t k = 0; k < s.size(); ++k) {
    auto it = std::find_if(first.begin(), first.end(),
                           [&](int64_t f) { return s[static_cast<size_t>(f)] == s[k]; });
    inverse[k] = it - first.begin();
    if (it == first.end())
      first.push_back(static_cast<int64_t>(k));
  }
  std::vector<int64_t> order(first.size()); // output position -> index into `first`
  std::iota(order.begin(), order.end(), 0);
  if (a.n.attrInt("sorted", 1) != 0)
    std::stable_sort(order.begin(), order.end(), [&](int64_t p, int64_t q) {
      return s[static_cast<size_t>(first[static_cast<size_t>(p)])] <
             s[static_cast<size_t>(first[static_cast<size_t>(q)])];
    });
  std::vector<int64_t> rank(order.size());
  for (size_t j = 0; j < order.size(); ++j)
    rank[static_cast<size_t>(order[j])] = static_cast<int64_t>(j);
  auto u = static_cast<int64_t>(order.size());
  Shape ys = axis < 0 ? Shape{u} : x.shape;
  if (axis >= 0)
    ys[static_cast<size_t>(axis)] = u;
  HostTensor y(ys), idx({u}), inv({static_cast<int64_t>(s.size())}), counts({u});
  int64_t outer = axis < 0 ? 1 : numElements(Shape(x.shape.begin(), x.shape.begin() + axis));
  int64_t inner = static_cast<int64_t>(s.empty() ? 0 : s[0].size()) / std::max<int64_t>(outer, 1);
  for (int64_t j = 0; j < u; ++j) {
    const std::vector<float> &sl = s[static_cast<size_t>(first[static_cast<size_t>(order[j])])];
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i)
        y.data[(o * u + j) * inner + i] = sl[static_cast<size_t>(o * inner + i)];
    idx.data[j] = static_cast<float>(first[static_cast<size_t>(order[j])]);
  }
  for (size_t k = 0; k < s.size(); ++k) {
    int64_t j = rank[static_cast<size_t>(inverse[k])];
    inv.data[k] = static_cast<float>(j);
    counts.data[j] += 1;
  }
  return {y, idx, inv, counts};
}

namespace {

// Corners (y1, x1, y2, x2) of box b, ordered, from either box format.
std::array<double, 4> corners(const float *b, bool center) {
  if (center) // (x_center, y_center, width, height)
    return {b[1] - b[3] / 2.0, b[0] - b[2] / 2.0, b[1] + b[3] / 2.0, b[0] + b[2] / 2.0};
  return {std::min(b[0], b[2]), std::min(b[1], b[3]), std::max(b[0], b[2]), std::max(b[1], b[3])};
}

double iou(const std::array<double, 4> &p, const std::array<double, 4> &q) {
  double h = std::max(0.0, std::min(p[2], q[2]) - std::max(p[0], q[0]));
  double w = std::max(0.0, std::min(p[3], q[3]) - std::max(p[1], q[1]));
  double inter = h * w;
  double uni = (p[2] - p[0]) * (p[3] - p[1]) + (q[2] - q[0]) * (q[3] - q[1]) - inter;
  return uni > 0 ? inter / uni : 0.0;
}

} // namespace

// Greedy per batch and class: boxes by descending score (ties by index) above score_threshold,
// each kept unless its IoU with a kept one exceeds iou_threshold, at most
// max_output_boxes_per_class. Output rows (batch, class, box).
RefResult refNonMaxSuppression(const RefArgs &a) {
  const HostTensor &boxes = a.in(0), &scores = a.in(1);
  auto scalar = [&](size_t i, float d) { return a.opt(i) ? a.opt(i)->data.at(0) : d; };
  auto maxOut = static_cast<int64_t>(scalar(2, 0));
  double iouMax = scalar(3, 0);
  bool thresholded = a.opt(4) != nullptr;
  double scoreMin = scalar(4, 0);
  bool center = a.n.attrInt("center_point_box", 0) != 0;
  int64_t B = scores.shape.at(0), C = scores.shape.at(1), N = scores.shape.at(2);
  if (boxes.shape != Shape{B, N, 4})
    fail("node '{}' ({}): boxes have shape {}, expected [{}, {}, 4]", a.n.name, a.n.kind,
         shapeToString(boxes.shape), B, N);
  std::vector<float> rows;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < C; ++c) {
      const float *sc = &scores.data[static_cast<size_t>((b * C + c) * N)];
      std::vector<int64_t> cand;
      for (int64_t i = 0; i < N; ++i)
        if (!thresholded || sc[i] > scoreMin)
          cand.push_back(i);
      std::stable_sort(cand.begin(), cand.end(),
                       [&](int64_t p, int64_t q) { return sc[p] > sc[q]; });
      std::vector<std::array<double, 4>> kept;
      for (int64_t i : cand) {
        if (static_cast<int64_t>(kept.size()) >= maxOut)
          break;
        auto box = corners(&boxes.data[static_cast<size_t>((b * N + i) * 4)], center);
        if (std::any_of(kept.begin(), kept.end(),
                        [&](const std::array<double, 4> &k) { return iou(k, box) > iouMax; }))
          continue;
        kept.push_back(box);
        rows.insert(rows.end(),
                    {static_cast<float>(b), static_cast<float>(c), static_cast<float>(i)});
      }
    }
  auto count = static_cast<int64_t>(rows.size() / 3);
  return {HostTensor({count, 3}, std::move(rows))};
}

} // namespace npuc::graph::ref
