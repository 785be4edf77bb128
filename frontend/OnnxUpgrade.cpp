// OnnxUpgrade.cpp - models below opset 9 go through ONNX's own version converter
// (onnx/version_converter) up to kUpgradeTarget (13) before import, so that the per-operator
// rules (OnnxNode.cpp, OnnxExtAttrs.cpp) see opsets 9-18 only: legacy attributes
// (consumed_inputs, is_test, BatchNormalization's spatial, broadcast/axis, Upsample's and
// Reshape's attributes that became inputs) and Softmax's flattening before opset 13 are resolved
// by the library's adapters, not by hand. Where ONNX 1.12's adapters get a case wrong, the model
// is fixed around them (before: legacy broadcast alignment; after: Constant dims, Resize modes),
// each with the reason at its function.
#include "frontend/OnnxImpl.h"

#include "support/Error.h"

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>
#include <onnx/version_converter/convert.h>

#include <algorithm>
#include <map>
#include <set>

namespace npuc::frontend::detail {

namespace {

std::string nodeName(const onnx::NodeProto &n, int index) {
  return n.name().empty() ? fmt::format("{}_{}", n.op_type(), index) : n.name();
}

// What the converter does not check itself, reported as the importer would: it looks every
// operator up in its tables and fails with an out-of-range map access (naming nothing) for one
// it does not know, and it crashes on a graph output that nothing defines.
void checkConvertible(const onnx::GraphProto &gp, int64_t opset) {
  std::set<std::string> defined;
  for (const onnx::ValueInfoProto &in : gp.input())
    defined.insert(in.name());
  for (const onnx::TensorProto &t : gp.initializer())
    defined.insert(t.name());
  const std::string undefined = "is not defined by any earlier node, initializer or graph input";
  for (int i = 0; i < gp.node_size(); ++i) {
    const onnx::NodeProto &n = gp.node(i);
    if (!n.domain().empty() && n.domain() != "ai.onnx")
      fail("node '{}' ({}): operator domain '{}' is not supported", nodeName(n, i), n.op_type(),
           n.domain());
    if (!onnx::OpSchemaRegistry::Schema(n.op_type(), static_cast<int>(opset), ""))
      fail("node '{}' ({}): unsupported operator (ONNX defines no {} at opset {})", nodeName(n, i),
           n.op_type(), n.op_type(), opset);
    for (const std::string &in : n.input())
      if (!in.empty() && !defined.count(in))
        fail("node '{}' ({}): input '{}' {}", nodeName(n, i), n.op_type(), in, undefined);
    defined.insert(n.output().begin(), n.output().end());
  }
  for (const onnx::ValueInfoProto &out : gp.output())
    if (!defined.count(out.name()))
      fail("graph output: input '{}' {}", out.name(), undefined);
}

// The model's operators whose definition changes from opset `from` to from + 1: the ones whose
// adapters run at that step.
std::string changedAt(const onnx::GraphProto &gp, int64_t from) {
  std::set<std::string> ops;
  for (const onnx::NodeProto &n : gp.node()) {
    const onnx::OpSchema *s =
        onnx::OpSchemaRegistry::Schema(n.op_type(), static_cast<int>(from + 1), "");
    if (s && s->SinceVersion() == from + 1)
      ops.insert(n.op_type());
  }
  std::string out;
  for (const std::string &op : ops)
    out += (out.empty() ? "" : ", ") + op;
  return out.empty() ? "no operator of the model changes there" : out + " change there";
}

// The library's assertion messages start with its source location and the failed condition
// ("transformers.h:30: operator(): Assertion `...` failed: Attribute spatial must have value 1");
// the reason after them is what the user can act on.
std::string reason(const std::exception &e) {
  std::string what = e.what();
  const std::string marker = "failed: ";
  if (size_t at = what.find(marker); at != std::string::npos)
    what = what.substr(at + marker.size());
  // The message may start with a location too: "./onnx/common/ir.h:259: find: ...".
  if (what.rfind("./onnx/", 0) == 0)
    if (size_t at = what.find(": ", what.find(": ") + 2); at != std::string::npos)
      what = what.substr(at + 2);
  return what;
}

// The rank of every value ONNX's shape inference (on a copy) gives one.
std::map<std::string, int> ranks(const onnx::ModelProto &m) {
  onnx::ModelProto typed = m;
  try {
    onnx::shape_inference::InferShapes(typed, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(false, 0, false));
  } catch (const std::exception &) {
    return {}; // the converter, which infers shapes too, reports it
  }
  std::map<std::string, int> r;
  const onnx::GraphProto &gp = typed.graph();
  for (const auto *list : {&gp.input(), &gp.value_info(), &gp.output()})
    for (const onnx::ValueInfoProto &vi : *list)
      if (vi.type().tensor_type().has_shape())
        r[vi.name()] = vi.type().tensor_type().shape().dim_size();
  for (const onnx::TensorProto &t : gp.initializer())
    r[t.name()] = t.dims_size();
  return r;
}

// How many unit dimensions input 1 of `n` needs at its end for numpy broadcasting to align it
// with input 0 as opsets before 7 did (0: it is aligned already, or the ranks are not known):
//  * a binary op with broadcast=1 aligns B with A's dimensions from `axis` on (Caffe2's
//    per-channel bias: A NxCxHxW, B C, axis 1). ONNX 1.12's 6 -> 7 adapter
//    (BroadcastForwardCompatibility) appends rank(A) - rank(B) unit dimensions, which is that
//    alignment only for axis 0, and fails its own broadcast check otherwise;
//  * PRelu's slope of C values applies per channel (axis 1), where PRelu-7 broadcasts it as
//    numpy does; the converter takes the two as compatible.
// `axis` is normalised on the node (the adapter compares it with rank(A) - rank(B) as given).
int64_t legacyTrailing(onnx::NodeProto &n, int index, const std::map<std::string, int> &rank) {
  // Only binary nodes (looking up "" for the others found a fuzzer's unnamed initializer, and
  // input(1) of a one-input node is a protobuf CHECK failure).
  if (n.input_size() != 2)
    return 0;
  auto a = rank.find(n.input(0)), b = rank.end();
  if (a == rank.end() || (b = rank.find(n.input(1))) == rank.end())
    return 0;
  if (n.op_type() == "PRelu")
    return b->second == 1 && a->second >= 3 ? a->second - 2 : 0;
  bool broadcast = false;
  onnx::AttributeProto *axis = nullptr;
  for (onnx::AttributeProto &at : *n.mutable_attribute()) {
    broadcast = broadcast || (at.name() == "broadcast" && at.i() == 1);
    axis = at.name() == "axis" ? &at : axis;
  }
  if (!broadcast || !axis)
    return 0;
  const int64_t given = axis->i();
  axis->set_i(given < 0 ? given + a->second : given);
  if (axis->i() < 0 || axis->i() > a->second - b->second)
    fail("node '{}' ({}): attribute axis={} cannot align a rank-{} B with a rank-{} A",
         nodeName(n, index), n.op_type(), given, b->second, a->second);
  return a->second - axis->i() - b->second;
}

// Gives every input 1 that legacyTrailing names its unit dimensions with an opset-1 Unsqueeze
// before the converter runs, so that its numpy broadcast is the legacy alignment.
void alignLegacyBroadcast(onnx::ModelProto &m) {
  const std::map<std::string, int> rank = ranks(m);
  onnx::GraphProto &gp = *m.mutable_graph();
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (int i = 0; i < gp.node_size(); ++i) {
    onnx::NodeProto n = gp.node(i);
    if (int64_t trailing = legacyTrailing(n, i, rank); trailing > 0) {
      const int b = rank.at(n.input(1));
      onnx::NodeProto *u = nodes.Add();
      u->set_op_type("Unsqueeze");
      u->set_name(nodeName(n, i) + "_align");
      u->add_input(n.input(1));
      u->add_output(fmt::format("{}_aligned{}", n.input(1), i));
      onnx::AttributeProto *axes = u->add_attribute();
      axes->set_name("axes");
      axes->set_type(onnx::AttributeProto::INTS);
      for (int64_t d = 0; d < trailing; ++d)
        axes->add_ints(b + d);
      n.set_input(1, u->output(0));
    }
    *nodes.Add() = std::move(n);
  }
  gp.mutable_node()->Swap(&nodes);
}

// ONNX 1.12's Reshape 4 -> 5 adapter makes the shape attribute a Constant whose tensor has the
// values but no dims (a scalar holding several values); the dims it means are the values' count.
void fixConstantDims(onnx::ModelProto &m) {
  for (onnx::NodeProto &n : *m.mutable_graph()->mutable_node())
    for (onnx::AttributeProto &a : *n.mutable_attribute())
      if (n.op_type() == "Constant" && a.name() == "value" && a.t().dims_size() == 0 &&
          a.t().int64_data_size() > 1)
        a.mutable_t()->add_dims(a.t().int64_data_size());
}

// Upsample and Resize before opset 11 sample at x_out / scale (asymmetric), nearest rounding
// down. ONNX 1.12's Resize 10 -> 11 adapter adds the roi input but no coordinate mode, which
// leaves opset 11's defaults (half_pixel, round_prefer_floor): a different result for linear
// modes and non-integer nearest scales. Every Resize of a model converted from below opset 11 is
// such a node, and gets the legacy modes here.
void fixLegacyResize(onnx::ModelProto &m) {
  auto set = [](onnx::NodeProto &n, const char *name, const char *value) {
    for (const onnx::AttributeProto &a : n.attribute())
      if (a.name() == name)
        return;
    onnx::AttributeProto *a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(value);
  };
  for (onnx::NodeProto &n : *m.mutable_graph()->mutable_node())
    if (n.op_type() == "Resize") {
      set(n, "coordinate_transformation_mode", "asymmetric");
      set(n, "nearest_mode", "floor");
    }
}

// The converter's adapters read the shapes of their nodes' inputs from the model's value_info
// (as ONNX's Python convert_version, which infers them first).
onnx::ModelProto convert(onnx::ModelProto m, int64_t to) {
  try {
    onnx::shape_inference::InferShapes(m, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(false, 0, false));
  } catch (const std::exception &e) {
    fail("ONNX shape inference failed: {}", e.what());
  }
  onnx::ModelProto out = onnx::version_conversion::ConvertVersion(m, static_cast<int>(to));
  fixConstantDims(out);
  return out;
}

} // namespace

int64_t upgradeOpset(onnx::ModelProto &m, int64_t opset) {
  if (opset >= kFirstImportedOpset)
    return opset;
  checkConvertible(m.graph(), opset);
  if (opset < 7)
    alignLegacyBroadcast(m);
  try {
    m = convert(m, kUpgradeTarget);
    if (opset < 11 && kUpgradeTarget >= 11)
      fixLegacyResize(m);
    return kUpgradeTarget;
  } catch (const Error &) {
    throw;
  } catch (const std::exception &) {
    // Below: one step at a time, to say at which step (and for which operators) it failed.
  }
  onnx::ModelProto at = m;
  for (int64_t v = opset; v < kUpgradeTarget; ++v) {
    try {
      at = convert(at, v + 1);
    } catch (const Error &) {
      throw;
    } catch (const std::exception &e) {
      fail("opset {} is converted to opset {} with ONNX's version converter, which fails at "
           "step {} -> {} ({}): {}",
           opset, kUpgradeTarget, v, v + 1, changedAt(at.graph(), v), reason(e));
    }
  }
  m = std::move(at);
  if (opset < 11 && kUpgradeTarget >= 11)
    fixLegacyResize(m);
  return kUpgradeTarget;
}

} // namespace npuc::frontend::detail
