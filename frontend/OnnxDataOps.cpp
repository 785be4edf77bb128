// OnnxDataOps.cpp - import of the data, math and signal operators of opset 17 that npuc added
// with GatherND (graph/Ops.def, the block at its end): reads the inputs that must be constants
// (OneHot's depth, DFT's dft_length, STFT's frame_step/frame_length, Compress's condition) into
// attributes, resolves defaults and negative axes, maps Scatter (opsets 9-10) to
// ScatterElements and Compress to a Gather with constant indices.
#include "frontend/OnnxImpl.h"

#include "graph/Passes.h"
#include "graph/ShapeInference.h"
#include "support/Error.h"

#include <algorithm>

namespace npuc::frontend::detail {

using graph::kNoValue;
using graph::Node;

namespace {

void requireReduction(const Node &n) {
  std::string r = n.attrString("reduction", "none");
  if (r != "none" && r != "add" && r != "mul" && r != "max" && r != "min")
    fail("{}: attribute reduction={} not supported (none, add, mul, max, min)", where(n), r);
}

// DFT (opset 17): axis as an attribute (default 1), dft_length as an optional constant input.
void dftAttrs(Importer &im, Node &n) {
  const Shape &x = shapeOf(im, n, 0);
  if (x.size() < 2)
    fail("{}: the signal must have rank >= 2, got {}", where(n), shapeToString(x));
  int64_t axis = normaliseAxis(n, n.attrInt("axis", 1), x.size());
  if (axis == static_cast<int64_t>(x.size()) - 1)
    fail("{}: attribute axis={} names the last (real/imaginary) dimension", where(n),
         n.attrInt("axis", 1));
  int64_t len = x[static_cast<size_t>(axis)];
  if (present(n, 1))
    len = static_cast<int64_t>(constScalar(im, n, 1, "dft_length"));
  if (n.attrInt("inverse", 0) != 0 && n.attrInt("onesided", 0) != 0)
    fail("{}: attributes inverse=1 and onesided=1 together are not supported", where(n));
  n.attrs["axis"] = axis;
  n.attrs["dft_length"] = len;
  n.attrs["inverse"] = n.attrInt("inverse", 0);
  n.attrs["onesided"] = n.attrInt("onesided", 0);
  n.inputs.resize(1);
}

// STFT: inputs (signal, frame_step, window?, frame_length?) -> (signal, window?) with
// frame_step and frame_length attributes (the frame length defaults to the window's).
void stftAttrs(Importer &im, Node &n) {
  n.attrs["frame_step"] = static_cast<int64_t>(constScalar(im, n, 1, "frame_step"));
  int64_t len = -1;
  if (present(n, 2)) {
    const Shape &w = shapeOf(im, n, 2);
    if (w.size() != 1)
      fail("{}: window must be 1-D, got {}", where(n), shapeToString(w));
    len = w[0];
  }
  if (present(n, 3))
    len = static_cast<int64_t>(constScalar(im, n, 3, "frame_length"));
  if (len < 0)
    fail("{}: neither window nor frame_length is given", where(n));
  n.attrs["frame_length"] = len;
  n.attrs["onesided"] = n.attrInt("onesided", 1);
  graph::ValueId window = present(n, 2) ? n.inputs[2] : kNoValue;
  n.inputs = {n.inputs[0], window};
}

// Compress with a constant condition selects fixed slices: a Gather with constant indices
// (along `axis`, or of the flattened input when there is none).
void compressToGather(Importer &im, Node &n) {
  graph::Graph &g = im.g;
  if (!g.value(n.inputs.at(1)).isConstant())
    fail("{}: output shape depends on the values of input 1 ('{}'); npuc compiles static shapes, "
         "so the condition must be a constant",
         where(n), g.value(n.inputs[1]).name);
  std::vector<int64_t> cond = constInts(im, n, 1, "condition");
  Shape x = shapeOf(im, n, 0);
  int64_t axis = 0;
  if (n.hasAttr("axis")) {
    axis = normaliseAxis(n, n.attrInt("axis", 0), x.size());
  } else if (x.size() != 1) { // flatten first
    graph::ValueId shape = g.addConstantI64(n.name + ".flat_shape", {1}, {-1});
    graph::ValueId flat = g.addValue(n.name + ".flat", {}, g.value(n.inputs[0]).dtype);
    graph::NodeId r = g.addNode(OpKind::Reshape, n.name + ".flatten", {n.inputs[0], shape}, {flat});
    graph::inferNodeShape(g, r);
    graph::foldConstantNode(g, r);
    n.inputs[0] = flat;
    x = g.value(flat).shape;
  }
  std::vector<int64_t> sel;
  for (size_t i = 0; i < std::min<size_t>(cond.size(), static_cast<size_t>(x[size_t(axis)])); ++i)
    if (cond[i] != 0)
      sel.push_back(static_cast<int64_t>(i));
  if (sel.empty())
    fail("{}: the condition selects nothing; npuc does not support empty tensors", where(n));
  auto count = static_cast<int64_t>(sel.size());
  n.inputs[1] = g.addConstantI64(n.name + ".selected", {count}, std::move(sel));
  n.kind = OpKind::Gather;
  n.attrs = {{"axis", axis}};
}

} // namespace

std::optional<bool> normaliseDataOps(Importer &im, Node &n, const onnx::NodeProto &) {
  auto rank = [&](size_t i) { return shapeOf(im, n, i).size(); };
  switch (n.kind) {
  case OpKind::GatherND:
    n.attrs["batch_dims"] = n.attrInt("batch_dims", 0);
    return true;
  case OpKind::Scatter:
    n.kind = OpKind::ScatterElements;
    [[fallthrough]];
  case OpKind::ScatterElements:
    n.attrs["axis"] = normaliseAxis(n, n.attrInt("axis", 0), rank(0));
    requireReduction(n);
    return true;
  case OpKind::ScatterND:
    requireReduction(n);
    return true;
  case OpKind::OneHot: {
    double depth = constScalar(im, n, 1, "depth");
    n.attrs["depth"] = static_cast<int64_t>(depth);
    n.attrs["axis"] = normaliseAxis(n, n.attrInt("axis", -1), rank(0) + 1);
    n.inputs = {n.inputs.at(0), n.inputs.at(2)};
    return true;
  }
  case OpKind::ReverseSequence:
    n.attrs["batch_axis"] = n.attrInt("batch_axis", 1);
    n.attrs["time_axis"] = n.attrInt("time_axis", 0);
    return true;
  case OpKind::Einsum: {
    std::string eq = n.attrString("equation", "");
    eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
    if (eq.empty())
      fail("{}: attribute equation is missing", where(n));
    n.attrs["equation"] = eq;
    return true;
  }
  case OpKind::HannWindow:
  case OpKind::HammingWindow:
  case OpKind::BlackmanWindow:
    constScalar(im, n, 0, "size");
    n.attrs["periodic"] = n.attrInt("periodic", 1);
    n.attrs["output_datatype"] = n.attrInt("output_datatype", 1);
    return true;
  case OpKind::MelWeightMatrix:
    for (size_t i = 0; i < 5; ++i)
      constScalar(im, n, i, "every input");
    n.attrs["output_datatype"] = n.attrInt("output_datatype", 1);
    return true;
  case OpKind::DFT:
    dftAttrs(im, n);
    return true;
  case OpKind::STFT:
    stftAttrs(im, n);
    return true;
  case OpKind::Compress:
    compressToGather(im, n);
    return true;
  case OpKind::Unique:
    n.attrs["axis"] = n.hasAttr("axis") ? normaliseAxis(n, n.attrInt("axis", 0), rank(0)) : -1;
    n.attrs["sorted"] = n.attrInt("sorted", 1);
    return true;
  case OpKind::Det:
  case OpKind::NonZero:
  case OpKind::NonMaxSuppression:
    return true;
  default:
    return std::nullopt;
  }
}

} // namespace npuc::frontend::detail
