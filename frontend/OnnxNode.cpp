// OnnxNode.cpp - per-operator import: reads ONNX attributes, resolves opset differences into the
// normalised attribute form documented in Onnx.h, infers output shapes and folds constant nodes.
#include "frontend/OnnxImpl.h"

#include "graph/PadMode.h"
#include "graph/Passes.h"
#include "graph/Rnn.h"
#include "graph/ShapeInference.h"
#include "support/Error.h"

#include <onnx/defs/schema.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <set>

namespace npuc::frontend::detail {

using graph::kNoValue;
using graph::Node;
using graph::ValueId;

std::string where(const Node &n) {
  return fmt::format("node '{}' ({})", n.name, n.kind);
}

std::vector<int64_t> constInts(Importer &im, const Node &n, size_t i, const char *what,
                               ConstRole role) {
  const graph::Value &v = constInput(im, n, i, what, role);
  if (!v.i64)
    fail("{}: {} must be an integer tensor", where(n), what);
  return *v.i64;
}

double constScalar(Importer &im, const Node &n, size_t i, const char *what, ConstRole role) {
  const graph::Value &v = constInput(im, n, i, what, role);
  if (numElements(v.shape) != 1)
    fail("{}: {} must be a scalar, got shape {}", where(n), what, shapeToString(v.shape));
  return v.f32 ? (*v.f32)[0] : static_cast<double>((*v.i64)[0]);
}

int64_t normaliseAxis(const Node &n, int64_t axis, size_t rank) {
  int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r)
    fail("{}: axis {} out of range for rank {}", where(n), axis, rank);
  return axis < 0 ? axis + r : axis;
}

void readAttributes(Node &n, const onnx::NodeProto &p) {
  using AP = onnx::AttributeProto;
  for (const auto &a : p.attribute()) {
    switch (a.type()) {
    case AP::INT:
      n.attrs[a.name()] = static_cast<int64_t>(a.i());
      break;
    case AP::FLOAT:
      n.attrs[a.name()] = static_cast<double>(a.f());
      break;
    case AP::STRING:
      n.attrs[a.name()] = a.s();
      break;
    case AP::INTS:
      n.attrs[a.name()] = std::vector<int64_t>(a.ints().begin(), a.ints().end());
      break;
    case AP::FLOATS:
      n.attrs[a.name()] = std::vector<double>(a.floats().begin(), a.floats().end());
      break;
    case AP::TENSOR:
      break; // only Constant has tensor attributes; handled there
    case AP::STRINGS:
      if (graph::isRecurrentOp(n.kind) && a.name() == "activations")
        break; // read from the proto by OnnxRnn.cpp
      fail("{}: attribute {} has an unsupported type", where(n), a.name());
    default:
      fail("{}: attribute {} has an unsupported type", where(n), a.name());
    }
  }
}

// The input and output counts ONNX's schema allows for the node's operator at the model's
// opset, checked before any rule reads an input (a Conv with no inputs is bad input, not an
// out-of-range index). Operators (or opsets) the installed ONNX library does not know are left
// to the rules, which check what they read.
void checkArity(const Importer &im, const Node &n, const onnx::NodeProto &p) {
  // A model newer than the library: its schemas for that opset are not known (Pad and the
  // Reduce* take more inputs at 18), so the rules alone check such a node.
  const int64_t knownOpset =
      onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map().at(onnx::ONNX_DOMAIN).second;
  if (im.opset > knownOpset)
    return;
  const std::string domain = p.domain() == "ai.onnx" ? "" : p.domain();
  const onnx::OpSchema *schema =
      onnx::OpSchemaRegistry::Schema(p.op_type(), static_cast<int>(im.opset), domain);
  if (!schema)
    return;
  auto range = [](int lo, int hi) {
    return hi == std::numeric_limits<int>::max() ? fmt::format("at least {}", lo)
                                                 : fmt::format("{} to {}", lo, hi);
  };
  if (p.input_size() < schema->min_input() || p.input_size() > schema->max_input())
    fail("{}: has {} inputs; {} takes {}", where(n), p.input_size(), p.op_type(),
         range(schema->min_input(), schema->max_input()));
  // An empty name marks an omitted optional input; a required one may not be omitted (the rules
  // read required inputs unchecked: a fuzzer's Resize with input 0 named "" aborted).
  const auto &formal = schema->inputs();
  for (int i = 0; i < p.input_size() && static_cast<size_t>(i) < formal.size(); ++i)
    if (p.input(i).empty() &&
        formal[static_cast<size_t>(i)].GetOption() == onnx::OpSchema::FormalParameterOption::Single)
      fail("{}: input {} ({}) is required, but its name is empty (omitted)", where(n), i,
           formal[static_cast<size_t>(i)].GetName());
  if (p.output_size() < schema->min_output() || p.output_size() > schema->max_output())
    fail("{}: has {} outputs; {} gives {}", where(n), p.output_size(), p.op_type(),
         range(schema->min_output(), schema->max_output()));
}

namespace {

// MaxPool's optional Indices output: storage_order (0 row-major, 1 column-major) decides how
// its flat indices are counted; without Indices the attribute changes nothing and is dropped.
void maxPoolIndices(Node &n) {
  int64_t order = n.attrInt("storage_order", 0);
  if (order != 0 && order != 1)
    fail("{}: attribute storage_order={} must be 0 or 1", where(n), order);
  if (n.outputs.size() > 1)
    n.attrs["storage_order"] = order;
  else
    n.attrs.erase("storage_order");
}

} // namespace

// Resolves auto_pad and fills defaults for a window op (Conv, MaxPool, AveragePool, LpPool)
// over 1 to 3 spatial axes ([N, C, W], [N, C, H, W] or [N, C, D, H, W]): kernel_shape, strides
// and dilations get one entry per spatial axis, pads two (all begins, then all ends).
void normaliseWindow(Importer &im, Node &n) {
  const Shape &x = im.g.value(n.inputs.at(0)).shape;
  if (x.size() < 3 || x.size() > 5)
    fail("{}: input must have 1 to 3 spatial axes ([N, C, W] to [N, C, D, H, W]), got shape {}",
         where(n), shapeToString(x));
  const size_t r = x.size() - 2;
  std::vector<int64_t> k;
  const bool conv = n.kind == OpKind::Conv || n.kind == OpKind::ConvInteger;
  if (conv) {
    const Shape &w = im.g.value(n.inputs.at(1)).shape;
    if (w.size() != x.size())
      fail("{}: weight must have the input's rank {}, got shape {}", where(n), x.size(),
           shapeToString(w));
    k = n.attrInts("kernel_shape", Shape(w.begin() + 2, w.end()));
  } else {
    k = n.attrInts("kernel_shape");
  }
  if (k.size() != r)
    fail("{}: kernel_shape must have {} entries (one per spatial axis)", where(n), r);
  auto s = n.attrInts("strides", std::vector<int64_t>(r, 1));
  auto d = n.attrInts("dilations", std::vector<int64_t>(r, 1));
  auto p = n.attrInts("pads", std::vector<int64_t>(2 * r, 0));
  if (s.size() != r || d.size() != r || p.size() != 2 * r)
    fail("{}: strides/dilations need {} entries and pads {}", where(n), r, 2 * r);
  graph::checkWindowAttrs(n, k, s, d, p); // SAME_* below divides by the strides
  std::string autoPad = n.attrString("auto_pad", "NOTSET");
  if (autoPad == "VALID") {
    std::fill(p.begin(), p.end(), 0);
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (size_t i = 0; i < r; ++i) {
      int64_t in = x[2 + i];
      int64_t out = (in + s[i] - 1) / s[i];
      int64_t total = std::max<int64_t>(0, (out - 1) * s[i] + (k[i] - 1) * d[i] + 1 - in);
      int64_t small = total / 2, big = total - small;
      p[i] = autoPad == "SAME_UPPER" ? small : big;
      p[i + r] = autoPad == "SAME_UPPER" ? big : small;
    }
  } else if (autoPad != "NOTSET") {
    fail("{}: attribute auto_pad={} not supported", where(n), autoPad);
  }
  n.attrs.erase("auto_pad");
  n.attrs["kernel_shape"] = k;
  n.attrs["strides"] = s;
  n.attrs["dilations"] = d;
  n.attrs["pads"] = p;
  if (conv) {
    n.attrs["group"] = n.attrInt("group", 1);
  } else {
    n.attrs["ceil_mode"] = n.attrInt("ceil_mode", 0);
    if (n.kind == OpKind::AveragePool)
      n.attrs["count_include_pad"] = n.attrInt("count_include_pad", 0);
    if (n.kind == OpKind::MaxPool)
      maxPoolIndices(n);
  }
}

namespace {

// Returns false when the node is removed (its output aliases its input).
bool normalise(Importer &im, Node &n, const onnx::NodeProto &proto) {
  graph::Graph &g = im.g;
  shapeOperands(im, n);
  if (std::optional<bool> keep = normaliseExt(im, n, proto))
    return *keep;
  const OpKind op = n.kind;
  auto rank = [&](size_t i) { return g.value(n.inputs.at(i)).shape.size(); };
  if (op == OpKind::Conv || op == OpKind::MaxPool || op == OpKind::AveragePool ||
      op == OpKind::LpPool) {
    if (op == OpKind::MaxPool && proto.output_size() > 1 && proto.output(1).empty())
      n.outputs.resize(1); // Indices not asked for
    normaliseWindow(im, n);
  } else if (op == OpKind::Gemm) {
    n.attrs["alpha"] = n.attrFloat("alpha", 1.0);
    n.attrs["beta"] = n.attrFloat("beta", 1.0);
    n.attrs["transA"] = n.attrInt("transA", 0);
    n.attrs["transB"] = n.attrInt("transB", 0);
  } else if (op == OpKind::Clip) {
    clipOperands(im, n);
  } else if (op == OpKind::Softmax || op == OpKind::LogSoftmax || op == OpKind::Hardmax) {
    // Before opset 13 these flattened [axis, rank) into one dimension; importNode wraps such a
    // node in Flatten/Reshape (emitLegacySoftmax) unless that equals the new semantics.
    n.attrs["axis"] = normaliseAxis(n, n.attrInt("axis", im.opset >= 13 ? -1 : 1), rank(0));
  } else if (op == OpKind::Concat || op == OpKind::Gather) {
    n.attrs["axis"] = normaliseAxis(n, n.attrInt("axis", op == OpKind::Concat ? -1 : 0), rank(0));
  } else if (op == OpKind::Flatten) {
    int64_t axis = n.attrInt("axis", 1);
    n.attrs["axis"] = axis < 0 ? axis + static_cast<int64_t>(rank(0)) : axis;
  } else if (op == OpKind::Squeeze || op == OpKind::Unsqueeze) {
    if (im.opset >= 13) {
      if (n.inputs.size() > 1 && n.inputs[1] != kNoValue)
        n.attrs["axes"] = constInts(im, n, 1, "axes");
      n.inputs.resize(1);
    }
    if (op == OpKind::Unsqueeze && n.attrInts("axes").empty())
      fail("{}: axes are required", where(n));
  } else if (op == OpKind::Reshape) {
    if (n.attrInt("allowzero", 0) != 0)
      for (int64_t d : constInts(im, n, 1, "shape"))
        if (d == 0)
          fail("{}: attribute allowzero=1 with a 0 in the shape is not supported", where(n));
    constInts(im, n, 1, "shape");
  } else if (op == OpKind::Pad) {
    // constant, edge or reflect (graph::PadMode); ONNX adds wrap only at opset 19.
    std::string mode = n.attrString("mode", "constant");
    if (!graph::padModeFromName(mode))
      fail("{}: attribute mode={} not supported (constant, edge or reflect)", where(n), mode);
    if (im.opset >= 11) {
      n.attrs["pads"] = constInts(im, n, 1, "pads");
      const ValueId runtimeValue = padValue(im, n);
      if (n.inputs.size() > 3 && n.inputs[3] != kNoValue) {
        // Opset 18: pads covers only the listed axes (begins, then ends); the rest get none.
        std::vector<int64_t> axes = constInts(im, n, 3, "axes"), given = n.attrInts("pads");
        size_t r = rank(0);
        if (given.size() != 2 * axes.size())
          fail("{}: pads has {} entries for {} axes", where(n), given.size(), axes.size());
        std::vector<int64_t> pads(2 * r, 0);
        std::set<int64_t> seen;
        for (size_t i = 0; i < axes.size(); ++i) {
          auto a = static_cast<size_t>(normaliseAxis(n, axes[i], r));
          if (!seen.insert(static_cast<int64_t>(a)).second)
            fail("{}: axes repeats axis {}", where(n), a);
          pads[a] = given[i];
          pads[a + r] = given[i + axes.size()];
        }
        n.attrs["pads"] = pads;
      }
      n.inputs.resize(1);
      if (runtimeValue != kNoValue && mode == "constant") // edge and reflect ignore it
        n.inputs.push_back(runtimeValue);
    }
    if (mode == "constant")
      n.attrs.erase("mode"); // the default
    else
      n.attrs.erase("value"); // only constant mode reads it
  } else if (op == OpKind::Shape) {
    // Opset 15 start/end: slice the dims. Folded right away (static shapes).
    const Shape &s = g.value(n.inputs.at(0)).shape;
    int64_t r = static_cast<int64_t>(s.size());
    int64_t b = n.attrInt("start", 0), e = n.attrInt("end", r);
    b = std::clamp(b < 0 ? b + r : b, int64_t{0}, r);
    e = std::clamp(e < 0 ? e + r : e, int64_t{0}, r);
    std::vector<int64_t> dims(s.begin() + b, s.begin() + std::max(b, e));
    ValueId out = n.outputs.at(0);
    g.value(out).dtype = graph::DType::I64;
    g.value(out).shape = {static_cast<int64_t>(dims.size())};
    g.value(out).i64 = std::make_shared<const std::vector<int64_t>>(std::move(dims));
    return false;
  } else if (op == OpKind::Identity || op == OpKind::Dropout) {
    if (op == OpKind::Dropout && n.inputs.size() > 2 && n.inputs[2] != kNoValue) {
      const graph::Value &tm = constInput(im, n, 2, "training_mode", ConstRole::Parameter);
      if (tm.i64 && (*tm.i64)[0] != 0)
        fail("{}: training_mode=true not supported", where(n));
    }
    return false;
  } else if (op == OpKind::Cast) {
    const graph::Value &x = g.value(n.inputs.at(0));
    if (graph::dtypeFromOnnx(n.attrInt("to", 0)) == x.dtype)
      return false; // a cast to the input's own type is the identity
  }
  return true;
}

} // namespace

ValueId emitNode(Importer &im, OpKind kind, const std::string &name, std::vector<ValueId> ins,
                 std::map<std::string, graph::AttrValue> attrs, ValueId out) {
  graph::Graph &g = im.g;
  if (out == kNoValue)
    out = g.addValue(name, {}, graph::DType::F32);
  graph::NodeId id = g.addNode(kind, name, std::move(ins), {out});
  g.node(id).attrs = std::move(attrs);
  graph::inferNodeShape(g, id);
  graph::foldConstantNode(g, id);
  return out;
}

namespace {

// LayerNormalization's optional outputs Mean and InvStdDev (opset 17), as the ONNX function that
// defines the operator computes them: over the axes [axis, rank), kept as 1s. They are separate
// nodes of existing operators, so every path (ref, CPU, NPU) runs them as it runs those.
void emitLayerNormStats(Importer &im, const graph::Node &ln, ValueId mean, ValueId invStd) {
  const ValueId x = ln.inputs.at(0);
  const auto rank = static_cast<int64_t>(im.g.value(x).shape.size());
  std::vector<int64_t> axes;
  for (int64_t a = ln.attrInt("axis", -1); a < rank; ++a)
    axes.push_back(a);
  std::map<std::string, graph::AttrValue> reduce{{"axes", axes}, {"keepdims", int64_t{1}}};
  const std::string base = ln.name + ".stats";
  ValueId m = emitNode(im, OpKind::ReduceMean, base + "_mean", {x}, reduce, mean);
  if (invStd == kNoValue)
    return;
  ValueId d = emitNode(im, OpKind::Sub, base + "_centred", {x, m}, {});
  ValueId d2 = emitNode(im, OpKind::Mul, base + "_sq", {d, d}, {});
  ValueId var = emitNode(im, OpKind::ReduceMean, base + "_var", {d2}, reduce);
  ValueId eps =
      im.g.addConstant(base + ".epsilon", {}, {static_cast<float>(ln.attrFloat("epsilon", 1e-5))});
  ValueId ve = emitNode(im, OpKind::Add, base + "_var_eps", {var, eps}, {});
  ValueId sd = emitNode(im, OpKind::Sqrt, base + "_std", {ve}, {});
  emitNode(im, OpKind::Reciprocal, base + "_inv_std", {sd}, {}, invStd);
}

// BatchNormalization as elementwise nodes, in training mode (batch statistics over every axis
// but the channel axis 1, and the running mean and variance outputs, ONNX opset 14-15) or when a
// parameter is computed at run time. The inference form with constant parameters stays a node:
// it folds into a Conv or a per-channel Mul/Add (graph/FoldBatchNorm.cpp). Returns false when
// the node stays.
bool emitBatchNormNodes(Importer &im, const graph::Node &bn, const onnx::NodeProto &p,
                        const std::vector<ValueId> &outs) {
  graph::Graph &g = im.g;
  const bool training = bn.attrInt("training_mode", 0) != 0;
  bool runtime = false;
  for (size_t i = 1; i < 5; ++i)
    runtime |= !g.value(bn.inputs.at(i)).isConstant();
  if (!training && !runtime)
    return false;
  const ValueId x = bn.inputs[0];
  const Shape &xs0 = g.value(x).shape;
  if (xs0.size() < 2)
    fail("{}: input must have a channel dimension", where(bn));
  for (size_t i = 1; i < 5; ++i)
    if (g.value(bn.inputs[i]).shape != Shape{xs0[1]})
      fail("{}: parameter {} has shape {}, expected [{}]", where(bn), i,
           shapeToString(g.value(bn.inputs[i]).shape), xs0[1]);
  const auto r = static_cast<int64_t>(xs0.size());
  std::vector<int64_t> spatial, batchAxes{0};
  for (int64_t a = 1; a + 1 < r; ++a)
    spatial.push_back(a); // [C] -> [C, 1, ..., 1]: broadcasts along axis 1
  for (int64_t a = 2; a < r; ++a)
    batchAxes.push_back(a);
  const std::string base = bn.name;
  auto perChannel = [&](ValueId v, const std::string &what) {
    return spatial.empty() ? v
                           : emitNode(im, OpKind::Unsqueeze, base + "_" + what + "_c", {v},
                                      {{"axes", spatial}});
  };
  auto scalar = [&](const std::string &what, double v) {
    return g.addConstant(base + "." + what, {}, {static_cast<float>(v)});
  };
  ValueId mean = bn.inputs[3], var = bn.inputs[4];
  if (training) {
    std::map<std::string, graph::AttrValue> reduce{{"axes", batchAxes}, {"keepdims", int64_t{0}}};
    mean = emitNode(im, OpKind::ReduceMean, base + "_batch_mean", {x}, reduce);
    ValueId d = emitNode(im, OpKind::Sub, base + "_centred", {x, perChannel(mean, "mean")}, {});
    ValueId d2 = emitNode(im, OpKind::Mul, base + "_sq", {d, d}, {});
    var = emitNode(im, OpKind::ReduceMean, base + "_batch_var", {d2}, reduce);
  }
  ValueId ve = emitNode(im, OpKind::Add, base + "_var_eps",
                        {var, scalar("epsilon", bn.attrFloat("epsilon", 1e-5))}, {});
  ValueId sd = emitNode(im, OpKind::Sqrt, base + "_std", {ve}, {});
  ValueId s = emitNode(im, OpKind::Div, base + "_scale", {bn.inputs[1], sd}, {});
  ValueId ms = emitNode(im, OpKind::Mul, base + "_mean_scaled", {mean, s}, {});
  ValueId t = emitNode(im, OpKind::Sub, base + "_shift", {bn.inputs[2], ms}, {});
  ValueId xs = emitNode(im, OpKind::Mul, base + "_mul", {x, perChannel(s, "scale")}, {});
  im.names[p.output(0)] =
      emitNode(im, OpKind::Add, base + "_add", {xs, perChannel(t, "shift")}, {}, outs.at(0));
  const double momentum = bn.attrFloat("momentum", 0.9);
  for (size_t i = 1; training && i < 3 && i < outs.size(); ++i) {
    if (p.output(static_cast<int>(i)).empty())
      continue;
    // running = input * momentum + batch * (1 - momentum)
    const std::string what = i == 1 ? "running_mean" : "running_var";
    ValueId old = emitNode(im, OpKind::Mul, base + "_" + what + "_old",
                           {bn.inputs[2 + i], scalar("momentum", momentum)}, {});
    ValueId cur = emitNode(im, OpKind::Mul, base + "_" + what + "_batch",
                           {i == 1 ? mean : var, scalar("one_minus_momentum", 1 - momentum)}, {});
    im.names[p.output(static_cast<int>(i))] =
        emitNode(im, OpKind::Add, base + "_" + what, {old, cur}, {}, outs[i]);
  }
  return true;
}

// Softmax, LogSoftmax and Hardmax before opset 13 work on the input flattened to 2-D at `axis`
// (default 1): Flatten, the operator along axis 1, and a Reshape back. Returns false when the
// axis leaves nothing to flatten (every later dimension is 1), where both semantics agree and the
// node stays as it is.
bool emitLegacySoftmax(Importer &im, const graph::Node &n, const onnx::NodeProto &p,
                       const std::vector<ValueId> &outs) {
  graph::Graph &g = im.g;
  const Shape x = g.value(n.inputs.at(0)).shape;
  const int64_t axis = normaliseAxis(n, n.attrInt("axis", 1), x.size());
  if (std::all_of(x.begin() + axis + 1, x.end(), [](int64_t d) { return d == 1; }))
    return false;
  ValueId flat =
      emitNode(im, OpKind::Flatten, n.name + "_flatten", {n.inputs[0]}, {{"axis", axis}});
  ValueId y = emitNode(im, n.kind, n.name, {flat}, {{"axis", int64_t{1}}});
  ValueId shape = g.addConstantI64(n.name + ".shape", {static_cast<int64_t>(x.size())}, x);
  im.names[p.output(0)] =
      emitNode(im, OpKind::Reshape, n.name + "_reshape", {y, shape}, {}, outs.at(0));
  return true;
}

} // namespace

void importNode(Importer &im, const onnx::NodeProto &p, int index) {
  if (importControlFlow(im, p, index))
    return;
  graph::Graph &g = im.g;
  Node n;
  n.name = p.name().empty() ? fmt::format("{}_{}", p.op_type(), index) : p.name();
  if (isTrainingDomain(p.domain()))
    return importTrainingNode(im, p, index);
  if (!p.domain().empty() && p.domain() != "ai.onnx")
    fail("node '{}' ({}): operator domain '{}' is not supported", n.name, p.op_type(), p.domain());
  // The operator table (graph/Ops.def) is the supported set.
  std::optional<OpKind> kind = graph::opFromName(p.op_type());
  if (!kind)
    fail("node '{}' ({}): unsupported operator", n.name, p.op_type());
  n.kind = *kind;
  readAttributes(n, p);
  if (p.output_size() == 0)
    fail("{}: the node has no outputs", where(n));
  for (const auto &in : p.input())
    n.inputs.push_back(in.empty() ? kNoValue : im.lookup(in, where(n)));
  if (n.kind == OpKind::Constant) {
    for (const auto &a : p.attribute()) {
      ValueId v = kNoValue;
      if (a.name() == "value")
        v = importTensor(im, a.t(), p.output(0));
      else if (a.name() == "value_float")
        v = g.addConstant(p.output(0), {}, {a.f()});
      else if (a.name() == "value_floats")
        v = g.addConstant(p.output(0), {a.floats_size()}, {a.floats().begin(), a.floats().end()});
      else if (a.name() == "value_int")
        v = g.addConstantI64(p.output(0), {}, {a.i()});
      else if (a.name() == "value_ints")
        v = g.addConstantI64(p.output(0), {a.ints_size()}, {a.ints().begin(), a.ints().end()});
      else
        fail("{}: attribute {} not supported", where(n), a.name());
      im.names[p.output(0)] = v;
      return;
    }
    fail("{}: no value attribute", where(n));
  }
  for (int i = 0; i < p.output_size(); ++i)
    n.outputs.push_back(p.output(i).empty() ? kNoValue
                                            : g.addValue(p.output(i), {}, graph::DType::F32));
  for (size_t i = 0; i < n.outputs.size(); ++i)
    if (n.outputs[i] == kNoValue)
      n.outputs[i] = g.addValue(fmt::format("{}.unused{}", n.name, i), {}, graph::DType::F32);
  checkArity(im, n, p);
  const std::vector<ValueId> declared = n.outputs; // normalise may drop optional outputs
  if (importQuant(im, n, p, declared))
    return;
  if (n.kind == OpKind::BatchNormalization && emitBatchNormNodes(im, n, p, declared))
    return;
  if ((n.kind == OpKind::Softmax || n.kind == OpKind::LogSoftmax || n.kind == OpKind::Hardmax) &&
      im.opset < 13 && emitLegacySoftmax(im, n, p, declared))
    return;
  bool keep = normalise(im, n, p);
  if (!keep && n.kind == OpKind::Dropout && p.output_size() > 1 && !p.output(1).empty()) {
    // Inference-mode Dropout keeps every element: its mask is all true.
    const Shape &s = g.value(n.inputs.at(0)).shape;
    ValueId mask = g.addConstantI64(p.output(1), s, std::vector<int64_t>(numElements(s), 1));
    g.value(mask).dtype = graph::DType::Bool;
    im.names[p.output(1)] = mask;
  }
  if (!keep) {
    // Removed node: the primary output aliases the (possibly folded) input or constant.
    ValueId alias =
        n.kind == OpKind::Shape || n.kind == OpKind::Size ? n.outputs[0] : n.inputs.at(0);
    if (n.kind == OpKind::Cast || n.kind == OpKind::Identity || n.kind == OpKind::Dropout)
      alias = n.inputs.at(0);
    im.names[p.output(0)] = alias;
    return;
  }
  graph::NodeId id = g.addNode(n.kind, n.name, n.inputs, n.outputs);
  g.node(id).attrs = std::move(n.attrs);
  graph::inferNodeShape(g, id);
  const graph::Node added = g.node(id); // a copy: emitting nodes below may reallocate
  for (size_t i = 0; i < declared.size(); ++i)
    if (i < added.outputs.size() && !p.output(static_cast<int>(i)).empty())
      im.names[p.output(static_cast<int>(i))] = added.outputs[i];
  graph::foldConstantNode(g, id);
  if (added.kind == OpKind::LayerNormalization && declared.size() > 1) {
    auto wanted = [&](size_t i) {
      return i < declared.size() && !p.output(static_cast<int>(i)).empty() ? declared[i] : kNoValue;
    };
    if (wanted(1) != kNoValue || wanted(2) != kNoValue)
      emitLayerNormStats(im, added, wanted(1), wanted(2));
    for (size_t i = 1; i < declared.size(); ++i)
      if (wanted(i) != kNoValue)
        im.names[p.output(static_cast<int>(i))] = declared[i];
  }
}

} // namespace npuc::frontend::detail
