// OnnxOperands.cpp - operands ONNX passes as tensors: the ones npuc must know at compile time
// (they set an output shape, or a parameter read at compile time), with an error that says where
// a run-time one comes from and how to pin it, and the ones that may stay run-time tensors
// because no shape depends on them (Clip's bounds, Pad's constant_value).
#include "frontend/OnnxImpl.h"

#include "graph/ShapeInference.h"
#include "support/Error.h"

#include <algorithm>
#include <limits>
#include <set>

namespace npuc::frontend::detail {

using graph::kNoValue;
using graph::Node;
using graph::ValueId;

std::vector<std::string> runtimeSources(const graph::Graph &g, ValueId v) {
  std::set<ValueId> seen{v}, sources;
  std::vector<ValueId> work{v};
  while (!work.empty()) {
    const graph::Value &val = g.value(work.back());
    work.pop_back();
    if (val.isConstant())
      continue;
    if (val.producer < 0) {
      sources.insert(val.id);
      continue;
    }
    for (ValueId in : g.node(val.producer).inputs)
      if (in != kNoValue && seen.insert(in).second)
        work.push_back(in);
  }
  std::vector<std::string> names;
  for (ValueId in : g.inputs)
    if (sources.count(in))
      names.push_back(g.value(in).name);
  return names;
}

namespace {

// Adds a node computing one new value (named `name`) and infers its shape.
ValueId addRuntimeNode(Importer &im, OpKind kind, const std::string &name,
                       std::vector<ValueId> inputs, std::map<std::string, graph::AttrValue> attrs) {
  graph::Graph &g = im.g;
  ValueId out = g.addValue(name, {}, graph::DType::F32);
  graph::NodeId id = g.addNode(kind, name, std::move(inputs), {out});
  g.node(id).attrs = std::move(attrs);
  graph::inferNodeShape(g, id);
  return out;
}

} // namespace

const graph::Value &constInput(Importer &im, const Node &n, size_t i, const char *what,
                               ConstRole role) {
  if (i >= n.inputs.size() || n.inputs[i] == kNoValue)
    fail("{}: {} (input {}) is missing", where(n), what, i);
  const graph::Value &v = im.g.value(n.inputs[i]);
  if (v.isConstant())
    return v;
  const std::string why = role == ConstRole::SetsShape
                              ? "sets the output shape, and npuc compiles static shapes"
                              : "is read at compile time";
  std::vector<std::string> from = runtimeSources(im.g, n.inputs[i]);
  std::string pin;
  for (const std::string &s : from)
    pin += fmt::format("{}--bind {}=FILE.npy", pin.empty() ? "" : " ", s);
  if (v.producer < 0)
    fail("{}: {} (input {}) {}: it must be a constant, but it is graph input '{}'; pin it with "
         "{}",
         where(n), what, i, why, v.name, pin);
  const Node &p = im.g.node(v.producer);
  fail("{}: {} (input {}) {}: it must be a constant, but it is computed at run time by node "
       "'{}' ({}){}",
       where(n), what, i, why, p.name, p.kind,
       pin.empty() ? std::string() : "; pin the graph inputs it comes from with " + pin);
}

void shapeOperands(Importer &im, const Node &n) {
  if (n.kind == OpKind::Range)
    for (size_t i = 0; i < 3; ++i)
      constInput(im, n, i, i == 0 ? "start" : i == 1 ? "limit" : "delta");
  else if (n.kind == OpKind::ConstantOfShape)
    constInput(im, n, 0, "input");
}

void clipOperands(Importer &im, Node &n) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  double lo = -kInf, hi = kInf;
  ValueId loV = kNoValue, hiV = kNoValue; // run-time bounds
  if (im.opset >= 11) {
    for (size_t i : {size_t{1}, size_t{2}}) {
      if (i >= n.inputs.size() || n.inputs[i] == kNoValue)
        continue;
      const char *what = i == 1 ? "min" : "max";
      const graph::Value &b = im.g.value(n.inputs[i]);
      if (numElements(b.shape) != 1)
        fail("{}: {} must be a scalar, got shape {}", where(n), what, shapeToString(b.shape));
      if (!b.isConstant())
        (i == 1 ? loV : hiV) = n.inputs[i];
      else
        (i == 1 ? lo : hi) = constScalar(im, n, i, what);
    }
  } else {
    lo = n.attrFloat("min", lo);
    hi = n.attrFloat("max", hi);
  }
  n.attrs.clear();
  n.inputs.resize(1);
  // Clip is min(max(x, min), max) (numpy.clip); a run-time bound becomes that Max or Min node,
  // with the bound as its broadcast scalar operand, and constant bounds stay attributes.
  if (loV != kNoValue) {
    if (hi == kInf && hiV == kNoValue) {
      n.kind = OpKind::Max;
      n.inputs.push_back(loV);
      return;
    }
    n.inputs[0] = addRuntimeNode(im, OpKind::Max, n.name + "_min", {n.inputs[0], loV}, {});
  } else if (lo != -kInf) {
    if (hiV != kNoValue)
      n.inputs[0] = addRuntimeNode(im, OpKind::Clip, n.name + "_min", {n.inputs[0]}, {{"min", lo}});
    else
      n.attrs["min"] = lo;
  }
  if (hiV != kNoValue) {
    n.kind = OpKind::Min;
    n.inputs.push_back(hiV);
  } else if (hi != kInf) {
    n.attrs["max"] = hi;
  }
}

ValueId padValue(Importer &im, Node &n) {
  if (n.inputs.size() <= 2 || n.inputs[2] == kNoValue)
    return kNoValue;
  const graph::Value &v = im.g.value(n.inputs[2]);
  if (numElements(v.shape) != 1)
    fail("{}: constant_value must be a scalar, got shape {}", where(n), shapeToString(v.shape));
  if (!v.isConstant())
    return n.inputs[2];
  n.attrs["value"] = constScalar(im, n, 2, "constant_value");
  return kNoValue;
}

} // namespace npuc::frontend::detail
