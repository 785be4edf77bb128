// ShapeNNExt.cpp - shape rules of the opset-17 NN operators beyond the convolutions:
// MeanVarianceNormalization, MaxUnpool, RoiAlign/MaxRoiPool, GridSample and the two losses
// (ShapeInternal.h). Attributes are in the frontend's normalised form (OnnxExtAttrs.cpp).
#include "graph/ShapeInternal.h"

#include "support/Error.h"

#include <fmt/ranges.h>

namespace npuc::graph::shape {

OutTypes inferMvn(const Graph &g, Node &n) {
  const Shape &x = inShape(g, n, 0);
  for (int64_t a : n.attrInts("axes"))
    if (a < 0 || a >= static_cast<int64_t>(x.size()))
      fail("{}: attribute axes = [{}] names an axis outside the input's rank {}", where(n),
           fmt::join(n.attrInts("axes"), ", "), x.size());
  return {{x, DType::F32}};
}

// MaxUnpool(X, I): X's values scattered to the flat positions I into a zero tensor of the
// normalised output_shape attribute (the frontend computes the default).
OutTypes inferMaxUnpool(const Graph &g, Node &n) {
  const Shape &x = inShape(g, n, 0);
  if (inShape(g, n, 1) != x)
    fail("{}: indices shape {} must equal the input shape {}", where(n),
         shapeToString(inShape(g, n, 1)), shapeToString(x));
  Shape out = n.attrInts("output_shape");
  if (out.size() != x.size() || out[0] != x[0] || out[1] != x[1])
    fail("{}: output_shape [{}] must keep the input's rank, N and C ({})", where(n),
         fmt::join(out, ", "), shapeToString(x));
  for (int64_t d : out)
    if (d <= 0)
      fail("{}: output_shape [{}] must be positive", where(n), fmt::join(out, ", "));
  return {{out, DType::F32}};
}

// RoiAlign(X, rois [R, 4], batch_indices [R]) and MaxRoiPool(X, rois [R, 5]): [R, C, oh, ow].
OutTypes inferRoiPool(const Graph &g, Node &n) {
  requireRank(g, n, 0, 4);
  requireRank(g, n, 1, 2);
  const Shape &x = inShape(g, n, 0), &rois = inShape(g, n, 1);
  const bool align = n.kind == OpKind::RoiAlign;
  const int64_t cols = align ? 4 : 5;
  if (rois[1] != cols)
    fail("{}: rois shape {} must be [num_rois, {}]", where(n), shapeToString(rois), cols);
  if (align && inShape(g, n, 2) != Shape{rois[0]})
    fail("{}: batch_indices shape {} must be [{}]", where(n), shapeToString(inShape(g, n, 2)),
         rois[0]);
  int64_t oh = 0, ow = 0;
  if (align) {
    oh = n.attrInt("output_height", 1);
    ow = n.attrInt("output_width", 1);
  } else {
    auto ps = n.attrInts("pooled_shape");
    if (ps.size() != 2)
      fail("{}: attribute pooled_shape needs 2 entries", where(n));
    oh = ps[0];
    ow = ps[1];
  }
  if (oh < 1 || ow < 1)
    fail("{}: the output extents {}x{} must be positive", where(n), oh, ow);
  return {{{rois[0], x[1], oh, ow}, DType::F32}};
}

// GridSample(X [N, C, H, W], grid [N, oh, ow, 2]): [N, C, oh, ow].
OutTypes inferGridSample(const Graph &g, Node &n) {
  requireRank(g, n, 0, 4);
  requireRank(g, n, 1, 4);
  const Shape &x = inShape(g, n, 0), &grid = inShape(g, n, 1);
  if (grid[0] != x[0] || grid[3] != 2)
    fail("{}: grid shape {} must be [{}, H_out, W_out, 2]", where(n), shapeToString(grid), x[0]);
  return {{{x[0], x[1], grid[1], grid[2]}, DType::F32}};
}

// NegativeLogLikelihoodLoss(input [N, C, d...], target [N, d...], weight [C]) and
// SoftmaxCrossEntropyLoss(scores, labels, weights): the loss per element ([N, d...]) with
// reduction none, else a scalar; SoftmaxCrossEntropyLoss's optional log_prob has the scores'
// shape.
OutTypes inferLoss(const Graph &g, Node &n) {
  const Shape &x = inShape(g, n, 0), &t = inShape(g, n, 1);
  if (x.size() < 2)
    fail("{}: input shape {} must be [N, C, ...]", where(n), shapeToString(x));
  Shape perElem = x;
  perElem.erase(perElem.begin() + 1);
  if (t != perElem)
    fail("{}: target shape {} must be the input's without the class axis, {}", where(n),
         shapeToString(t), shapeToString(perElem));
  if (n.inputs.size() > 2 && n.inputs[2] != kNoValue && inShape(g, n, 2) != Shape{x[1]})
    fail("{}: weight shape {} must be [{}]", where(n), shapeToString(inShape(g, n, 2)), x[1]);
  const bool none = n.attrString("reduction", "mean") == "none";
  OutTypes res{{none ? perElem : Shape{}, DType::F32}};
  if (n.outputs.size() > 1)
    res.push_back({x, DType::F32});
  return res;
}

} // namespace npuc::graph::shape
