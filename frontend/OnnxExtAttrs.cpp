// OnnxExtAttrs.cpp - import of the extended operator set (graph/ExtOps.h): reads inputs that ONNX
// passes as tensors (Reduce axes, Slice starts/ends, Resize scales/sizes, TopK's K, ...) as
// constants and stores them as attributes, resolves defaults and negative axes, and rejects
// attribute values we do not implement with an error naming the node and the attribute.
#include "frontend/OnnxImpl.h"

#include "graph/ExtOps.h"
#include "graph/Rnn.h"
#include "graph/ShapeInference.h"
#include "support/Error.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

namespace npuc::frontend::detail {

using graph::kNoValue;
using graph::Node;

bool present(const Node &n, size_t i) {
  return i < n.inputs.size() && n.inputs[i] != kNoValue;
}

const Shape &shapeOf(Importer &im, const Node &n, size_t i) {
  if (!present(n, i))
    fail("{}: input {} is required, but the node omits it", where(n), i);
  return im.g.value(n.inputs[i]).shape;
}

namespace {

// Optional constant input i as ints, or `dflt` when omitted.
std::vector<int64_t> optInts(Importer &im, const Node &n, size_t i, const char *what,
                             std::vector<int64_t> dflt) {
  return present(n, i) ? constInts(im, n, i, what) : dflt;
}

std::vector<double> constFloats(Importer &im, const Node &n, size_t i, const char *what) {
  const graph::Value &v = constInput(im, n, i, what);
  if (v.f32)
    return {v.f32->begin(), v.f32->end()};
  return {v.i64->begin(), v.i64->end()};
}

void requireOneOf(const Node &n, const char *attr, const std::string &v,
                  std::initializer_list<const char *> ok) {
  for (const char *o : ok)
    if (v == o)
      return;
  fail("{}: attribute {}={} not supported", where(n), attr, v);
}

// Reduce*: axes from the attribute or (ReduceSum >= 13, others >= 18) the second input.
bool reduceAxes(Importer &im, Node &n) {
  std::vector<int64_t> axes = n.attrInts("axes");
  if (present(n, 1))
    axes = constInts(im, n, 1, "axes");
  n.inputs.resize(1);
  size_t r = shapeOf(im, n, 0).size();
  for (int64_t &a : axes)
    a = normaliseAxis(n, a, r);
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
    fail("{}: attribute axes repeats an axis", where(n));
  if (axes.empty() && n.attrInt("noop_with_empty_axes", 0) != 0)
    return false; // the identity
  n.attrs.erase("noop_with_empty_axes");
  n.attrs["axes"] = axes;
  n.attrs["keepdims"] = n.attrInt("keepdims", 1);
  return true;
}

void sliceAttrs(Importer &im, Node &n) {
  const Shape &x = shapeOf(im, n, 0);
  size_t r = x.size();
  std::vector<int64_t> st, en, ax, sp;
  if (im.opset >= 10) {
    st = constInts(im, n, 1, "starts");
    en = constInts(im, n, 2, "ends");
    ax = optInts(im, n, 3, "axes", {});
    sp = optInts(im, n, 4, "steps", {});
  } else {
    st = n.attrInts("starts");
    en = n.attrInts("ends");
    ax = n.attrInts("axes");
  }
  if (ax.empty())
    for (size_t i = 0; i < st.size(); ++i)
      ax.push_back(static_cast<int64_t>(i));
  if (sp.empty())
    sp.assign(st.size(), 1);
  if (en.size() != st.size() || ax.size() != st.size() || sp.size() != st.size())
    fail("{}: starts, ends, axes and steps have different lengths", where(n));
  std::vector<int64_t> b(r, 0), e(x.begin(), x.end()), s(r, 1);
  std::set<int64_t> seen;
  for (size_t i = 0; i < st.size(); ++i) {
    auto a = static_cast<size_t>(normaliseAxis(n, ax[i], r));
    if (!seen.insert(static_cast<int64_t>(a)).second)
      fail("{}: axis {} appears twice", where(n), a);
    int64_t dim = x[a], step = sp[i];
    if (step == 0)
      fail("{}: steps[{}] is 0", where(n), i);
    // Negative positions count from the end; the int64 sentinels exporters use for "to the
    // end" saturate in the clamps below.
    int64_t bb = st[i] < 0 ? std::max<int64_t>(st[i], -dim - 1) + dim : st[i];
    int64_t ee = en[i] < 0 ? std::max<int64_t>(en[i], -dim - 1) + dim : en[i];
    if (step > 0) {
      bb = std::clamp<int64_t>(bb, 0, dim);
      ee = std::clamp<int64_t>(ee, 0, dim);
    } else {
      bb = std::clamp<int64_t>(bb, 0, dim - 1);
      ee = std::clamp<int64_t>(ee, -1, dim - 1);
    }
    b[a] = bb;
    e[a] = ee;
    s[a] = step;
  }
  n.inputs.resize(1);
  n.attrs.erase("axes");
  n.attrs["starts"] = b;
  n.attrs["ends"] = e;
  n.attrs["steps"] = s;
}

// Resize (and opset-9 Upsample, which becomes a Resize). Before opset 11 neither had a
// coordinate_transformation_mode: ONNX's own 10->11 version adapter maps them to "asymmetric" with
// nearest_mode "floor", which for integer scales is the element repetition Upsample specifies.
// Opset 18 adds `axes` (scales/sizes for a subset of the axes), keep_aspect_ratio_policy and
// antialias.
// tf_crop_and_resize's roi (input 1, a constant): the starts, then the ends, of the listed axes
// as fractions of each input extent; returned for every axis (an unlisted one keeps [0, 1]).
std::vector<double> cropRoi(Importer &im, const Node &n, const std::vector<int64_t> &axes) {
  if (!present(n, 1) || numElements(shapeOf(im, n, 1)) == 0)
    fail("{}: coordinate_transformation_mode=tf_crop_and_resize needs roi (input 1)", where(n));
  std::vector<double> given = constFloats(im, n, 1, "roi");
  if (given.size() != 2 * axes.size())
    fail("{}: roi has {} entries, expected {} (a start and an end per axis)", where(n),
         given.size(), 2 * axes.size());
  const size_t r = shapeOf(im, n, 0).size();
  std::vector<double> roi(2 * r, 0.0);
  std::fill(roi.begin() + static_cast<long>(r), roi.end(), 1.0);
  for (size_t i = 0; i < axes.size(); ++i) {
    roi[static_cast<size_t>(axes[i])] = given[i];
    roi[static_cast<size_t>(axes[i]) + r] = given[i + axes.size()];
  }
  return roi;
}

// The longest axis a Resize may produce: far beyond any tensor npuc can hold, and exactly
// representable as both double and int64, so that checking against it keeps the conversion
// defined.
constexpr double kMaxExtent = 4611686018427387904.0; // 2^62

void resizeAttrs(Importer &im, Node &n) {
  const Shape &x = shapeOf(im, n, 0);
  const size_t r = x.size();
  const bool legacy = im.opset < 11 || n.kind == OpKind::Upsample;
  std::string mode = n.attrString("mode", "nearest");
  requireOneOf(n, "mode", mode, {"nearest", "linear", "cubic"});
  std::string ctm =
      legacy ? "asymmetric" : n.attrString("coordinate_transformation_mode", "half_pixel");
  requireOneOf(n, "coordinate_transformation_mode", ctm,
               {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                "tf_half_pixel_for_nn", "tf_crop_and_resize"});
  std::string nearest = legacy ? "floor" : n.attrString("nearest_mode", "round_prefer_floor");
  requireOneOf(n, "nearest_mode", nearest,
               {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"});
  if (n.attrInt("antialias", 0) != 0)
    fail("{}: attribute antialias=1 not supported", where(n));
  std::string policy = n.attrString("keep_aspect_ratio_policy", "stretch");
  requireOneOf(n, "keep_aspect_ratio_policy", policy, {"stretch", "not_larger", "not_smaller"});
  // The axes the scales/sizes inputs describe (all of them unless opset-18 `axes` says otherwise).
  std::vector<int64_t> axes = n.attrInts("axes");
  if (axes.empty())
    for (size_t d = 0; d < r; ++d)
      axes.push_back(static_cast<int64_t>(d));
  std::set<int64_t> seen;
  for (int64_t &a : axes)
    if (!seen.insert(a = normaliseAxis(n, a, r)).second)
      fail("{}: attribute axes repeats axis {}", where(n), a);
  std::vector<double> givenScales;
  std::vector<int64_t> givenSizes;
  size_t scaleIn = im.opset >= 11 && n.kind == OpKind::Resize ? 2 : 1;
  if (present(n, scaleIn) && numElements(shapeOf(im, n, scaleIn)) > 0)
    givenScales = constFloats(im, n, scaleIn, "scales");
  if (scaleIn == 2 && present(n, 3) && numElements(shapeOf(im, n, 3)) > 0)
    givenSizes = constInts(im, n, 3, "sizes");
  if (givenScales.empty() == givenSizes.empty())
    fail("{}: exactly one of scales and sizes must be given", where(n));
  size_t given = givenScales.empty() ? givenSizes.size() : givenScales.size();
  if (given != axes.size())
    fail("{}: {} has {} entries for {} axes", where(n), givenScales.empty() ? "sizes" : "scales",
         given, axes.size());
  if (policy != "stretch" && givenSizes.empty())
    fail("{}: keep_aspect_ratio_policy={} needs sizes, not scales", where(n), policy);
  std::vector<double> scales(r, 1.0);
  std::vector<int64_t> sizes(x.begin(), x.end());
  if (!givenScales.empty()) {
    for (size_t i = 0; i < axes.size(); ++i) {
      auto d = static_cast<size_t>(axes[i]);
      if (!(givenScales[i] > 0) || !std::isfinite(givenScales[i]))
        fail("{}: scales[{}] = {} must be positive and finite", where(n), i, givenScales[i]);
      scales[d] = givenScales[i];
      // Checked before the conversion, which is undefined past int64 (a fuzzer's 1e300 scale).
      const double extent = std::floor(static_cast<double>(x[d]) * scales[d]);
      if (!(extent < kMaxExtent))
        fail("{}: scales[{}] = {} makes axis {} longer than 2^62", where(n), i, givenScales[i], d);
      sizes[d] = static_cast<int64_t>(extent);
      if (sizes[d] <= 0)
        fail("{}: scales[{}] = {} leaves axis {} empty", where(n), i, givenScales[i], d);
    }
  } else {
    for (size_t i = 0; i < axes.size(); ++i)
      if (givenSizes[i] <= 0)
        fail("{}: sizes[{}] = {} must be positive", where(n), i, givenSizes[i]);
    if (policy == "stretch") {
      for (size_t i = 0; i < axes.size(); ++i) {
        auto d = static_cast<size_t>(axes[i]);
        sizes[d] = givenSizes[i];
        scales[d] = static_cast<double>(sizes[d]) / static_cast<double>(x[d]);
      }
    } else {
      // One scale for every listed axis: the largest that fits (not_larger) or the smallest that
      // covers (not_smaller) the requested sizes; sizes are then rounded (half away from zero).
      double s = policy == "not_larger" ? std::numeric_limits<double>::infinity() : 0.0;
      for (size_t i = 0; i < axes.size(); ++i) {
        double q = static_cast<double>(givenSizes[i]) / static_cast<double>(x[size_t(axes[i])]);
        s = policy == "not_larger" ? std::min(s, q) : std::max(s, q);
      }
      for (int64_t a : axes) {
        auto d = static_cast<size_t>(a);
        scales[d] = s;
        const double extent = s * static_cast<double>(x[d]);
        if (!(extent < kMaxExtent))
          fail("{}: keep_aspect_ratio_policy={} makes axis {} longer than 2^62", where(n), policy,
               d);
        sizes[d] = std::max<int64_t>(1, std::llround(extent));
      }
    }
  }
  if (ctm == "tf_crop_and_resize")
    n.attrs["roi"] = cropRoi(im, n, axes);
  else
    n.attrs.erase("extrapolation_value"); // only tf_crop_and_resize reads it
  n.kind = OpKind::Resize;
  n.inputs.resize(1);
  for (const char *a : {"antialias", "axes", "keep_aspect_ratio_policy"})
    n.attrs.erase(a);
  if (mode != "cubic") // the cubic kernel's own attributes
    for (const char *a : {"cubic_coeff_a", "exclude_outside"})
      n.attrs.erase(a);
  n.attrs["mode"] = mode;
  n.attrs["coordinate_transformation_mode"] = ctm;
  n.attrs["nearest_mode"] = nearest;
  n.attrs["scales"] = scales;
  n.attrs["sizes"] = sizes;
}

// ConvTranspose over 1 to 3 spatial axes: auto_pad and output_shape become explicit pads.
void convTransposeAttrs(Importer &im, Node &n) {
  const Shape &x = shapeOf(im, n, 0), &w = shapeOf(im, n, 1);
  if (x.size() < 3 || x.size() > 5 || w.size() != x.size())
    fail("{}: input must have 1 to 3 spatial axes and the weight its rank, got shapes {} and {}",
         where(n), shapeToString(x), shapeToString(w));
  const size_t r = x.size() - 2;
  const std::vector<int64_t> ws(w.begin() + 2, w.end());
  auto k = n.attrInts("kernel_shape", ws);
  if (k != ws)
    fail("{}: attribute kernel_shape does not match the weight shape {}", where(n),
         shapeToString(w));
  auto s = n.attrInts("strides", std::vector<int64_t>(r, 1));
  auto d = n.attrInts("dilations", std::vector<int64_t>(r, 1));
  auto p = n.attrInts("pads", std::vector<int64_t>(2 * r, 0));
  auto op = n.attrInts("output_padding", std::vector<int64_t>(r, 0));
  if (s.size() != r || d.size() != r || p.size() != 2 * r || op.size() != r)
    fail("{}: strides/dilations/output_padding need {} entries and pads {}", where(n), r, 2 * r);
  std::string autoPad = n.attrString("auto_pad", "NOTSET");
  requireOneOf(n, "auto_pad", autoPad, {"NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"});
  std::vector<int64_t> outShape = n.attrInts("output_shape");
  // output_shape may list the spatial extents only or (as some exporters write) N and C too.
  if (outShape.size() == r + 2)
    outShape.erase(outShape.begin(), outShape.begin() + 2);
  if (!outShape.empty() && outShape.size() != r)
    fail("{}: attribute output_shape needs {} (spatial) entries", where(n), r);
  if (autoPad == "VALID")
    std::fill(p.begin(), p.end(), 0);
  if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER" || !outShape.empty()) {
    for (size_t i = 0; i < r; ++i) {
      int64_t in = x[2 + i];
      int64_t out = outShape.empty() ? in * s[i] : outShape[i];
      int64_t total = s[i] * (in - 1) + op[i] + (k[i] - 1) * d[i] + 1 - out;
      // A larger output than the strided input covers: the extra positions (at the end, as in
      // ONNX Runtime) get only the bias, which is what output_padding expresses.
      if (total < 0 && op[i] - total >= std::max(s[i], d[i]))
        fail("{}: output_shape {} is larger than the input allows", where(n), out);
      if (total < 0) {
        op[i] -= total;
        total = 0;
      }
      // ONNX: SAME_UPPER puts the extra padding at the end, SAME_LOWER at the start.
      bool upper = autoPad != "SAME_LOWER";
      p[i] = upper ? total / 2 : total - total / 2;
      p[i + r] = total - p[i];
    }
  }
  n.attrs.erase("auto_pad");
  n.attrs.erase("output_shape");
  n.attrs["kernel_shape"] = k;
  n.attrs["strides"] = s;
  n.attrs["dilations"] = d;
  n.attrs["pads"] = p;
  n.attrs["output_padding"] = op;
  n.attrs["group"] = n.attrInt("group", 1);
}

// Split: explicit sizes (attribute before 13, input after), else equal parts — one per output,
// or opset 18's num_outputs, where an uneven extent leaves the last part smaller.
void splitAttrs(Importer &im, Node &n) {
  const Shape &x = shapeOf(im, n, 0);
  int64_t axis = normaliseAxis(n, n.attrInt("axis", 0), x.size());
  std::vector<int64_t> split = n.attrInts("split");
  if (present(n, 1))
    split = constInts(im, n, 1, "split");
  int64_t outputs = static_cast<int64_t>(n.outputs.size());
  int64_t numOutputs = n.attrInt("num_outputs", 0);
  if (numOutputs != 0 && !split.empty())
    fail("{}: num_outputs and split are both given", where(n));
  if (numOutputs != 0 && numOutputs != outputs)
    fail("{}: attribute num_outputs={} but the node has {} outputs", where(n), numOutputs, outputs);
  int64_t dim = x[static_cast<size_t>(axis)];
  if (split.empty()) {
    if (numOutputs != 0) {
      int64_t chunk = (dim + outputs - 1) / outputs;
      if (chunk * (outputs - 1) >= dim)
        fail("{}: axis extent {} cannot give {} non-empty outputs", where(n), dim, outputs);
      split.assign(static_cast<size_t>(outputs), chunk);
      split.back() = dim - chunk * (outputs - 1);
    } else {
      if (dim % outputs)
        fail("{}: axis extent {} does not split evenly into {} outputs", where(n), dim, outputs);
      split.assign(static_cast<size_t>(outputs), dim / outputs);
    }
  }
  n.inputs.resize(1);
  n.attrs.erase("num_outputs");
  n.attrs["axis"] = axis;
  n.attrs["split"] = split;
}

// MaxUnpool: the output shape from the optional constant output_shape input, else ONNX's
// default (in - 1) * stride + kernel - pad begin - pad end per spatial axis.
void maxUnpoolAttrs(Importer &im, Node &n) {
  const Shape &x = shapeOf(im, n, 0);
  if (x.size() < 3)
    fail("{}: input must be [N, C, spatial...], got shape {}", where(n), shapeToString(x));
  const size_t r = x.size() - 2;
  auto k = n.attrInts("kernel_shape");
  auto s = n.attrInts("strides", std::vector<int64_t>(r, 1));
  auto p = n.attrInts("pads", std::vector<int64_t>(2 * r, 0));
  if (k.size() != r || s.size() != r || p.size() != 2 * r)
    fail("{}: kernel_shape/strides need {} entries and pads {}", where(n), r, 2 * r);
  graph::checkWindowAttrs(n, k, s, std::vector<int64_t>(r, 1), p);
  std::vector<int64_t> out(x.begin(), x.end());
  for (size_t i = 0; i < r; ++i)
    out[2 + i] = (x[2 + i] - 1) * s[i] + k[i] - p[i] - p[r + i];
  if (present(n, 2))
    out = constInts(im, n, 2, "output_shape");
  n.inputs.resize(2);
  n.attrs["output_shape"] = out;
}

// The opset-17 NN operators beyond the convolutions: checks their string attributes and fills
// the defaults the kernels read.
void nnExtAttrs(Importer &im, Node &n, const onnx::NodeProto &p) {
  const OpKind op = n.kind;
  if (op == OpKind::MeanVarianceNormalization) {
    const size_t r = shapeOf(im, n, 0).size();
    std::vector<int64_t> axes = n.attrInts("axes", {0, 2, 3});
    for (int64_t &a : axes)
      a = normaliseAxis(n, a, r);
    std::sort(axes.begin(), axes.end());
    if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
      fail("{}: attribute axes repeats an axis", where(n));
    n.attrs["axes"] = axes;
  } else if (op == OpKind::MaxUnpool) {
    maxUnpoolAttrs(im, n);
  } else if (op == OpKind::RoiAlign) {
    requireOneOf(n, "mode", n.attrString("mode", "avg"), {"avg", "max"});
    // Opset 10 had no coordinate_transformation_mode and behaved as output_half_pixel.
    std::string ctm = n.attrString("coordinate_transformation_mode",
                                   im.opset >= 16 ? "half_pixel" : "output_half_pixel");
    requireOneOf(n, "coordinate_transformation_mode", ctm, {"half_pixel", "output_half_pixel"});
    n.attrs["coordinate_transformation_mode"] = ctm;
    if (n.attrInt("sampling_ratio", 0) < 0)
      fail("{}: attribute sampling_ratio={} must not be negative", where(n),
           n.attrInt("sampling_ratio", 0));
  } else if (op == OpKind::GridSample) {
    requireOneOf(n, "mode", n.attrString("mode", "bilinear"), {"bilinear", "nearest", "bicubic"});
    requireOneOf(n, "padding_mode", n.attrString("padding_mode", "zeros"),
                 {"zeros", "border", "reflection"});
  } else if (op == OpKind::NegativeLogLikelihoodLoss || op == OpKind::SoftmaxCrossEntropyLoss) {
    requireOneOf(n, "reduction", n.attrString("reduction", "mean"), {"none", "sum", "mean"});
    if (op == OpKind::SoftmaxCrossEntropyLoss && p.output_size() > 1 && p.output(1).empty())
      n.outputs.resize(1); // log_prob not asked for
  }
}

} // namespace

std::optional<bool> normaliseExt(Importer &im, Node &n, const onnx::NodeProto &p) {
  if (std::optional<bool> keep = normaliseDataOps(im, n, p))
    return keep;
  graph::Graph &g = im.g;
  const OpKind op = n.kind;
  auto rank = [&](size_t i) { return shapeOf(im, n, i).size(); };
  if (op == OpKind::Gelu) {
    requireOneOf(n, "approximate", n.attrString("approximate", "none"), {"none", "tanh"});
  } else if (op == OpKind::CastLike) {
    // A Cast to the second input's type (which only lends its type).
    n.kind = OpKind::Cast;
    n.attrs["to"] = graph::onnxDTypeCode(g.value(n.inputs.at(1)).dtype);
    n.inputs.resize(1);
  } else if (op == OpKind::BitShift) {
    requireOneOf(n, "direction", n.attrString("direction", ""), {"LEFT", "RIGHT"});
  } else if (op == OpKind::Mod) {
    if (isFloatType(g.value(n.inputs.at(0)).dtype) && n.attrInt("fmod", 0) == 0)
      n.attrs["fmod"] = int64_t{0}; // float inputs with fmod=0: the remainder takes the
                                    // divisor's sign (numpy.mod), the integer rule
  } else if (graph::isReduceOp(op)) {
    if (op == OpKind::ArgMax || op == OpKind::ArgMin) {
      n.attrs["axis"] = normaliseAxis(n, n.attrInt("axis", 0), rank(0));
      n.attrs["keepdims"] = n.attrInt("keepdims", 1);
      return true;
    }
    return reduceAxes(im, n);
  } else if (op == OpKind::LayerNormalization) {
    n.attrs["axis"] = normaliseAxis(n, n.attrInt("axis", -1), rank(0));
    if (n.attrInt("stash_type", 1) != 1)
      fail("{}: attribute stash_type={} not supported", where(n), n.attrInt("stash_type", 1));
    n.outputs.resize(1); // Mean and InvStdDev: separate nodes (OnnxNode.cpp emitLayerNormStats)
  } else if (op == OpKind::LpNormalization) {
    n.attrs["axis"] = normaliseAxis(n, n.attrInt("axis", -1), rank(0));
    int64_t pw = n.attrInt("p", 2);
    if (pw != 1 && pw != 2)
      fail("{}: attribute p={} not supported (1 or 2)", where(n), pw);
  } else if (op == OpKind::LRN) {
    if (n.attrInt("size", 0) <= 0)
      fail("{}: attribute size must be positive", where(n));
  } else if (op == OpKind::CumSum) {
    std::vector<int64_t> a = constInts(im, n, 1, "axis", ConstRole::Parameter);
    if (a.size() != 1)
      fail("{}: axis must be a scalar", where(n));
    n.attrs["axis"] = normaliseAxis(n, a[0], rank(0));
    n.inputs.resize(1);
  } else if (op == OpKind::Trilu) {
    // k: a constant becomes the attribute; a run-time scalar stays input 1, which the kernels
    // compare with each position's column - row.
    if (present(n, 1)) {
      const graph::Value &k = im.g.value(n.inputs[1]);
      if (numElements(k.shape) != 1 || k.dtype != graph::DType::I64)
        fail("{}: k (input 1) must be an int64 scalar, got {} of shape {}", where(n),
             graph::dtypeName(k.dtype), shapeToString(k.shape));
      if (k.isConstant()) {
        n.attrs["k"] = constInts(im, n, 1, "k", ConstRole::Parameter).at(0);
        n.inputs.resize(1);
      }
    } else {
      n.inputs.resize(1);
    }
  } else if (op == OpKind::GlobalLpPool || op == OpKind::LpPool) {
    if (n.attrInt("p", 2) <= 0)
      fail("{}: attribute p={} must be positive", where(n), n.attrInt("p", 2));
    return std::nullopt; // LpPool's window attributes: the core normaliseWindow
  } else if (op == OpKind::ConvTranspose) {
    convTransposeAttrs(im, n);
  } else if (op == OpKind::Split) {
    splitAttrs(im, n);
  } else if (op == OpKind::Slice) {
    sliceAttrs(im, n);
  } else if (op == OpKind::Expand) {
    n.attrs["shape"] = constInts(im, n, 1, "shape");
    n.inputs.resize(1);
  } else if (op == OpKind::Tile) {
    n.attrs["repeats"] = constInts(im, n, 1, "repeats");
    n.inputs.resize(1);
  } else if (op == OpKind::Resize || op == OpKind::Upsample) {
    resizeAttrs(im, n);
  } else if (op == OpKind::DepthToSpace) {
    requireOneOf(n, "mode", n.attrString("mode", "DCR"), {"DCR", "CRD"});
  } else if (op == OpKind::ConstantOfShape) {
    double v = 0;
    int64_t dt = 0;
    for (const auto &a : p.attribute())
      if (a.name() == "value") {
        graph::ValueId t = importTensor(im, a.t(), n.name + ".value");
        const graph::Value &tv = g.value(t);
        if (numElements(tv.shape) != 1)
          fail("{}: attribute value must hold one element", where(n));
        v = tv.f32 ? (*tv.f32)[0] : static_cast<double>((*tv.i64)[0]);
        dt = static_cast<int64_t>(tv.dtype); // the DType enumerator (ShapeData.cpp)
      }
    n.attrs["value"] = v;
    n.attrs["dtype"] = dt;
  } else if (op == OpKind::Size) {
    graph::Value &out = g.value(n.outputs.at(0));
    out.dtype = graph::DType::I64;
    out.shape = {};
    out.i64 = std::make_shared<const std::vector<int64_t>>(
        std::vector<int64_t>{numElements(shapeOf(im, n, 0))});
    return false;
  } else if (op == OpKind::TopK) {
    std::vector<int64_t> k =
        im.opset >= 10 ? constInts(im, n, 1, "K") : std::vector<int64_t>{n.attrInt("k", -1)};
    if (k.size() != 1)
      fail("{}: K must hold one value", where(n));
    n.attrs["k"] = k[0];
    n.attrs["axis"] = normaliseAxis(n, n.attrInt("axis", -1), rank(0));
    n.inputs.resize(1);
  } else if (op == OpKind::MeanVarianceNormalization || op == OpKind::MaxUnpool ||
             op == OpKind::RoiAlign || op == OpKind::MaxRoiPool || op == OpKind::GridSample ||
             op == OpKind::NegativeLogLikelihoodLoss || op == OpKind::SoftmaxCrossEntropyLoss) {
    nnExtAttrs(im, n, p);
  } else if (op == OpKind::GatherElements) {
    n.attrs["axis"] = normaliseAxis(n, n.attrInt("axis", 0), rank(0));
  } else if (graph::isRecurrentOp(op)) {
    rnnAttrs(im, n, p);
  } else if (graph::opInfo(op).family == graph::OpFamily::Basic || op == OpKind::LogSoftmax ||
             op == OpKind::Hardmax) {
    // LogSoftmax and Hardmax share Softmax's axis rule (default -1 from opset 13, 1 before),
    // which OnnxNode.cpp applies.
    return std::nullopt;
  }
  return true;
}

} // namespace npuc::frontend::detail
