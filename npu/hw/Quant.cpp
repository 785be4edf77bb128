// Quant.cpp - calibration, weight quantisation and the fake-quantised reference (Quant.h).
#include "npu/hw/Quant.h"

#include "npu/hw/Calibration.h"

#include "graph/Reference.h"
#include "graph/ShapeInference.h"
#include "support/Error.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace npuc::npu {

using graph::ValueId;

float QuantTable::of(ValueId v) const {
  auto it = scale.find(v);
  NPUC_ASSERT(it != scale.end(), "calibration gives every non-constant value a scale");
  return it->second;
}

namespace {

float maxAbsOf(const std::vector<float> &xs) {
  float m = 0;
  for (float x : xs)
    m = std::max(m, std::fabs(x));
  return m;
}

} // namespace

float QuantTable::ofOperand(const graph::Graph &g, ValueId v) const {
  const graph::Value &val = g.value(v);
  return val.isConstant() ? symmetricScale(maxAbsOf(graph::constantTensor(val).data)) : of(v);
}

float symmetricScale(float maxAbs) {
  const float scale = maxAbs / 127.0f;
  // The host and the NPU multiply by 1/scale (quantise, `muladd` imm0): it must be finite.
  return std::isfinite(scale) && scale > 0 && std::isfinite(1.0f / scale) ? scale : 1.0f / 127.0f;
}

int8_t quantise(float x, float scale) {
  // The same two fp32 steps as the vector unit: x * (1/scale), then round-to-nearest-even and
  // saturate (docs/ISA.md, integer destinations).
  const float inv = 1.0f / scale;
  float v = x * inv;
  if (std::isnan(v))
    return 0;
  double r = std::nearbyint(static_cast<double>(v));
  return static_cast<int8_t>(std::clamp(r, -128.0, 127.0));
}

std::vector<float> quantiseWeights(const std::vector<float> &w, int64_t channels,
                                   std::vector<int8_t> &q) {
  NPUC_ASSERT(channels > 0 && static_cast<int64_t>(w.size()) % channels == 0,
              "weights split into equal rows per output channel");
  const size_t row = w.size() / static_cast<size_t>(channels);
  std::vector<float> scales(static_cast<size_t>(channels));
  q.assign(w.size(), 0);
  for (size_t c = 0; c < scales.size(); ++c) {
    float m = 0;
    for (size_t i = 0; i < row; ++i)
      m = std::max(m, std::fabs(w[c * row + i]));
    scales[c] = symmetricScale(m);
    // Symmetric: |w| <= max maps into [-127, 127], never -128.
    for (size_t i = 0; i < row; ++i)
      q[c * row + i] = std::max<int8_t>(-127, quantise(w[c * row + i], scales[c]));
  }
  return scales;
}

std::map<ValueId, HostTensor> defaultCalibrationInputs(const graph::Graph &g) {
  std::mt19937 rng(20240229);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::map<ValueId, HostTensor> in;
  for (ValueId v : g.inputs) {
    // Integer and bool inputs (token ids, masks) are zeros of their type: a valid index and
    // mask whatever the model's extents.
    HostTensor t(g.value(v).shape, g.value(v).dtype);
    for (float &x : t.data)
      x = nd(rng);
    in[v] = std::move(t);
  }
  return in;
}

namespace {

// The weight tensor of a tensor-unit anchor and the axis of its output channels, or kNoValue.
ValueId weightOf(const graph::Graph &g, const graph::Node &n, int &axis) {
  if (n.kind == graph::OpKind::Conv && n.inputs.size() > 1) {
    axis = 0;
    return n.inputs[1];
  }
  if (n.kind == graph::OpKind::Gemm && n.inputs.size() > 1) {
    axis = n.attrInt("transB", 0) != 0 ? 0 : 1;
    return n.inputs[1];
  }
  if (n.kind == graph::OpKind::MatMul && n.inputs.size() > 1 &&
      g.value(n.inputs[1]).shape.size() == 2) {
    axis = 1;
    return n.inputs[1];
  }
  return graph::kNoValue;
}

// Per-output-channel fake quantisation of a 2-D-or-more weight along `axis` (0 or 1 of 2-D).
HostTensor fakeQuantiseWeights(const HostTensor &w, int axis) {
  const int64_t rows = w.shape.at(0), cols = w.size() / rows;
  HostTensor t = w;
  if (axis == 1) { // [K][N] with channels in columns: transpose, quantise rows, transpose back
    std::vector<float> tr(w.data.size());
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        tr[static_cast<size_t>(c * rows + r)] = w.data[static_cast<size_t>(r * cols + c)];
    std::vector<int8_t> q;
    std::vector<float> s = quantiseWeights(tr, cols, q);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        t.data[static_cast<size_t>(r * cols + c)] =
            dequantise(q[static_cast<size_t>(c * rows + r)], s[static_cast<size_t>(c)]);
    return t;
  }
  std::vector<int8_t> q;
  std::vector<float> s = quantiseWeights(w.data, rows, q);
  for (size_t i = 0; i < q.size(); ++i)
    t.data[i] = dequantise(q[i], s[i / static_cast<size_t>(cols)]);
  return t;
}

} // namespace

namespace {

// The clipping threshold of every non-constant value over the samples: the largest |x| (one
// reference run per sample), or for the other methods the one chosen from a histogram of |x|
// over [0, largest] (a second run per sample, so that no sample's activations are kept).
std::map<ValueId, float> measureRanges(const graph::Graph &g,
                                       const std::vector<std::map<ValueId, HostTensor>> &samples,
                                       const CalibrationSpec &spec) {
  std::map<ValueId, float> range;
  for (const auto &inputs : samples)
    for (const auto &[v, t] : graph::runReferenceAll(g, inputs))
      if (!g.value(v).isConstant())
        range[v] = std::max(range.count(v) ? range.at(v) : 0.0f, maxAbsOf(t.data));
  if (spec.method == CalibrationMethod::Max)
    return range;
  std::map<ValueId, MagnitudeHistogram> hist;
  for (const auto &[v, m] : range)
    hist.emplace(v, MagnitudeHistogram(m));
  for (const auto &inputs : samples)
    for (const auto &[v, t] : graph::runReferenceAll(g, inputs))
      if (auto it = hist.find(v); it != hist.end())
        it->second.add(t.data);
  for (auto &[v, m] : range)
    if (std::isfinite(m))
      m = chooseThreshold(hist.at(v), spec);
  return range;
}

void shareRanges(const graph::Graph &g, std::map<ValueId, float> &range);

} // namespace

QuantTable calibrate(const graph::Graph &g, const std::map<ValueId, HostTensor> &inputs,
                     std::string source) {
  return calibrate(g, std::vector<std::map<ValueId, HostTensor>>{inputs}, CalibrationSpec{},
                   std::move(source));
}

QuantTable calibrate(const graph::Graph &g,
                     const std::vector<std::map<ValueId, HostTensor>> &samples,
                     const CalibrationSpec &spec, std::string source) {
  NPUC_ASSERT(!samples.empty(), "the driver calibrates on at least one sample");
  // Ranges first, scales last: a value that calibrates to the range 0 (x + (-x)) shares its
  // bytes with others through the unification below without raising their scales to its
  // default one (difftest finding F2: a Concat of Relu(min(w, 0)) and min(w, 0) quantised
  // min(w, 0) with scale 1, every value in (-0.5, 0.5) to 0).
  std::map<ValueId, float> range = measureRanges(g, samples, spec);
  shareRanges(g, range);
  QuantTable q;
  q.source = std::move(source);
  for (const auto &[v, m] : range)
    q.scale[v] = symmetricScale(m);
  return q;
}

namespace {

// A view shares its input's int8 bytes, and a Concat copies bytes: they share one threshold.
void shareRanges(const graph::Graph &g, std::map<ValueId, float> &range) {
  // A Transpose whose transforms cancel in the NPU layout is a view too (npu/hw/DramLayout.h): it
  // shares its input's int8 bytes, so it shares the scale (a permutation keeps the range anyway).
  auto viewLike = [](graph::OpKind op) {
    return graph::isViewOp(op) || op == graph::OpKind::Transpose;
  };
  for (graph::NodeId nid : g.topoOrder()) {
    const graph::Node &n = g.node(nid);
    if (viewLike(n.kind) && !n.inputs.empty() && range.count(n.inputs[0]))
      range[n.outputs[0]] = range.at(n.inputs[0]);
  }
  // A Concat on the NPU copies int8 bytes, so its inputs and output share one scale: that of
  // the largest range (constant inputs count with their own). Raising a value's range can raise
  // another Concat's or a view's, hence the fixed point (ranges only grow, so it ends).
  for (bool changed = true; changed;) {
    changed = false;
    for (graph::NodeId nid : g.topoOrder()) {
      const graph::Node &n = g.node(nid);
      const bool view = viewLike(n.kind) && !n.inputs.empty();
      if (!view && n.kind != graph::OpKind::Concat)
        continue;
      std::vector<ValueId> vals = {n.outputs[0]};
      float m = range.count(n.outputs[0]) ? range.at(n.outputs[0]) : 0.0f;
      for (size_t i = 0; i < (view ? 1 : n.inputs.size()); ++i) {
        ValueId v = n.inputs[i];
        if (v == graph::kNoValue)
          continue;
        if (g.value(v).isConstant()) {
          m = std::max(m, maxAbsOf(graph::constantTensor(g.value(v)).data));
        } else if (range.count(v)) {
          m = std::max(m, range.at(v));
          vals.push_back(v);
        }
      }
      for (ValueId v : vals)
        if (range.count(v) && range[v] < m) {
          range[v] = m;
          changed = true;
        }
    }
  }
}

} // namespace

std::map<ValueId, HostTensor> runQuantisedReference(const graph::Graph &g, const QuantTable &q,
                                                    const std::map<ValueId, HostTensor> &inputs) {
  std::map<ValueId, HostTensor> env;
  for (ValueId v : g.inputs) {
    auto it = inputs.find(v);
    if (it == inputs.end())
      fail("quantised reference: no tensor given for input '{}'", g.value(v).name);
    env[v] = it->second;
  }
  for (const graph::FusedGroup &grp : g.groups)
    NPUC_ASSERT(grp.placement != graph::Placement::Unassigned, "groups are placed");
  evalQuantised(g, q, env, 0,
                [&](size_t i) { return g.groups[i].placement == graph::Placement::Npu; });
  return env;
}

void evalQuantised(const graph::Graph &g, const QuantTable &q, std::map<ValueId, HostTensor> &env,
                   size_t from, const std::function<bool(size_t)> &int8) {
  auto fq = [&](const HostTensor &t, ValueId v) {
    HostTensor r = t;
    const float s = q.of(v);
    for (float &x : r.data)
      x = fakeQuantise(x, s);
    return r;
  };
  for (size_t gi = from; gi < g.groups.size(); ++gi) {
    const graph::FusedGroup &grp = g.groups[gi];
    const bool npu = int8(gi);
    // What this group reads: NPU groups read int8 copies of their inputs (the host quantises a
    // CPU-produced value for an NPU consumer, while CPU consumers keep the fp32 value).
    std::map<ValueId, HostTensor> local;
    auto fetch = [&](ValueId v) -> const HostTensor * {
      if (v == graph::kNoValue)
        return nullptr;
      if (auto it = local.find(v); it != local.end())
        return &it->second;
      if (auto it = env.find(v); it != env.end()) {
        if (!npu || std::find(grp.inputs.begin(), grp.inputs.end(), v) == grp.inputs.end())
          return &it->second;
        return &(local[v] = fq(it->second, v));
      }
      NPUC_ASSERT(g.value(v).isConstant(), "a group reads inputs, constants or earlier values");
      return &(local[v] = graph::constantTensor(g.value(v)));
    };
    if (npu) {
      int axis = 0;
      ValueId w = weightOf(g, g.node(grp.anchor), axis);
      if (w != graph::kNoValue && g.value(w).isConstant())
        local[w] = fakeQuantiseWeights(graph::constantTensor(g.value(w)), axis);
    }
    for (graph::NodeId nid : grp.nodes) {
      const graph::Node &n = g.node(nid);
      std::vector<const HostTensor *> ins;
      for (ValueId v : n.inputs)
        ins.push_back(fetch(v));
      std::vector<HostTensor> outs = graph::evalNode(g, n, ins);
      for (size_t i = 0; i < outs.size(); ++i)
        env[n.outputs[i]] = std::move(outs[i]);
    }
    if (npu)
      for (ValueId v : grp.outputs)
        env[v] = fq(env.at(v), v);
  }
}

} // namespace npuc::npu
