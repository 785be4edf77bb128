// OnnxControl.cpp - If, Loop and Scan, resolved at import into the flat graph, as a static-shape
// compiler resolves control flow it can decide at compile time:
//   * a subgraph (then_branch, else_branch, body) is inlined: its nodes are imported as the
//     model's own, under node and value names prefixed by the control node's name (and the
//     iteration), so that every inlined copy is unique. The importer's name map is the scope: a
//     subgraph sees the enclosing names (outer-scope values, initializers, nested subgraphs
//     see their parents'), and its own names are dropped again when it ends;
//   * If with a constant condition inlines the taken branch; with a run-time one both branches
//     run and Where selects each output (if-conversion), which needs equal shapes and types;
//   * Loop with a compile-time trip count and a condition that is (or folds to) a constant is
//     unrolled, carried values threaded through, scan outputs stacked on a new axis 0;
//   * Scan (opset 9+; opset 8 comes through ONNX's version converter) is unrolled over its
//     static sequence length: Slice/Squeeze per scan input, Unsqueeze/Concat per scan output.
// Unrolling stops with an error past kMaxUnrolledNodes nodes rather than exhausting memory.
#include "frontend/OnnxImpl.h"

#include "graph/Passes.h"
#include "graph/ShapeInference.h"
#include "support/Error.h"

#include <fmt/ranges.h>

#include <algorithm>

namespace npuc::frontend::detail {

using graph::DType;
using graph::kNoValue;
using graph::Node;
using graph::ValueId;

namespace {

/// The most nodes one Loop or Scan may add to the graph when unrolled.
constexpr size_t kMaxUnrolledNodes = 100000;

using Attrs = std::map<std::string, graph::AttrValue>;

// Adds a node computing one value named `name`, infers its shape and folds it when its inputs
// are constants.
ValueId emit(Importer &im, OpKind kind, const std::string &name, std::vector<ValueId> ins,
             Attrs attrs) {
  graph::Graph &g = im.g;
  ValueId out = g.addValue(name, {}, DType::F32);
  graph::NodeId id = g.addNode(kind, name, std::move(ins), {out});
  g.node(id).attrs = std::move(attrs);
  graph::inferNodeShape(g, id);
  graph::foldConstantNode(g, id);
  return out;
}

// The control node as a graph::Node (for where() and constInput's messages): name, kind, inputs.
Node controlNode(Importer &im, const onnx::NodeProto &p, int index, OpKind kind) {
  Node n;
  n.kind = kind;
  n.name = p.name().empty() ? fmt::format("{}_{}", p.op_type(), index) : p.name();
  for (const auto &in : p.input())
    n.inputs.push_back(in.empty() ? kNoValue : im.lookup(in, where(n)));
  return n;
}

const onnx::GraphProto &graphAttr(const Node &n, const onnx::NodeProto &p, const char *name) {
  for (const auto &a : p.attribute())
    if (a.name() == name) {
      if (a.type() != onnx::AttributeProto::GRAPH)
        fail("{}: attribute {} must be a graph", where(n), name);
      return a.g();
    }
  fail("{}: attribute {} (a graph) is missing", where(n), name);
}

int64_t intAttr(const onnx::NodeProto &p, const char *name, int64_t dflt) {
  for (const auto &a : p.attribute())
    if (a.name() == name)
      return a.i();
  return dflt;
}

std::vector<int64_t> intsAttr(const onnx::NodeProto &p, const char *name) {
  for (const auto &a : p.attribute())
    if (a.name() == name)
      return {a.ints().begin(), a.ints().end()};
  return {};
}

// Imports subgraph `body` with its formal inputs bound to `args`, its nodes and values named
// `prefix` + their own names; returns the values of its outputs. The enclosing scope is restored
// afterwards, so the body's names never leak into it.
std::vector<ValueId> inlineBody(Importer &im, const Node &n, const onnx::GraphProto &body,
                                const std::vector<ValueId> &args, const std::string &prefix) {
  if (static_cast<size_t>(body.input_size()) != args.size())
    fail("{}: subgraph '{}' has {} inputs; {} expects {}", where(n), body.name(), body.input_size(),
         n.kind, args.size());
  if (body.sparse_initializer_size() > 0)
    fail("{}: subgraph '{}' has sparse initializers, which are not supported", where(n),
         body.name());
  const std::map<std::string, ValueId> outer = im.names;
  for (size_t i = 0; i < args.size(); ++i)
    im.names[body.input(static_cast<int>(i)).name()] = args[i];
  for (const auto &t : body.initializer())
    im.names[t.name()] = importTensor(im, t, prefix + t.name());
  for (int i = 0; i < body.node_size(); ++i) {
    const onnx::NodeProto &orig = body.node(i);
    onnx::NodeProto q = orig;
    q.set_name(prefix +
               (orig.name().empty() ? fmt::format("{}_{}", orig.op_type(), i) : orig.name()));
    for (int k = 0; k < q.output_size(); ++k)
      if (!orig.output(k).empty())
        q.set_output(k, prefix + orig.output(k));
    importNode(im, q, i);
    for (int k = 0; k < q.output_size(); ++k) {
      auto it = im.names.find(q.output(k));
      if (!orig.output(k).empty() && it != im.names.end())
        im.names[orig.output(k)] = it->second;
    }
  }
  std::vector<ValueId> outs;
  for (const auto &o : body.output())
    outs.push_back(
        im.lookup(o.name(), fmt::format("{}: subgraph '{}' output", where(n), body.name())));
  im.names = outer;
  return outs;
}

// A one-element constant read as a truth value.
bool truth(const graph::Value &v) {
  return v.i64 ? (*v.i64)[0] != 0 : (*v.f32)[0] != 0.0F;
}

std::string pinHint(const Importer &im, ValueId v) {
  std::vector<std::string> from = runtimeSources(im.g, v);
  if (from.empty())
    return "";
  std::string pin;
  for (const std::string &s : from)
    pin += fmt::format(" --bind {}=FILE.npy", s);
  return fmt::format("; it is computed from graph input(s) '{}': pin them with{}",
                     fmt::join(from, "', '"), pin);
}

void checkCount(const Node &n, const onnx::NodeProto &p, size_t produced, const char *what) {
  if (static_cast<size_t>(p.output_size()) > produced)
    fail("{}: has {} outputs, but its {} gives {}", where(n), p.output_size(), what, produced);
}

void bindOutputs(Importer &im, const onnx::NodeProto &p, const std::vector<ValueId> &outs) {
  for (int i = 0; i < p.output_size(); ++i)
    if (!p.output(i).empty())
      im.names[p.output(i)] = outs.at(static_cast<size_t>(i));
}

// ---------------------------------------------------------------------------------------- If

void importIf(Importer &im, const onnx::NodeProto &p, int index) {
  const Node n = controlNode(im, p, index, OpKind::If);
  if (n.inputs.size() != 1 || n.inputs[0] == kNoValue)
    fail("{}: takes one input, the condition", where(n));
  const onnx::GraphProto &thenG = graphAttr(n, p, "then_branch");
  const onnx::GraphProto &elseG = graphAttr(n, p, "else_branch");
  const ValueId cond = n.inputs[0];
  const graph::Value &c = im.g.value(cond);
  if (numElements(c.shape) != 1)
    fail("{}: the condition must hold one element, got shape {}", where(n), shapeToString(c.shape));
  if (c.isConstant()) {
    const bool taken = truth(c);
    const std::vector<ValueId> outs =
        inlineBody(im, n, taken ? thenG : elseG, {}, n.name + (taken ? "/then/" : "/else/"));
    checkCount(n, p, outs.size(), taken ? "then_branch" : "else_branch");
    bindOutputs(im, p, outs);
    return;
  }
  const std::vector<ValueId> t = inlineBody(im, n, thenG, {}, n.name + "/then/");
  const std::vector<ValueId> e = inlineBody(im, n, elseG, {}, n.name + "/else/");
  checkCount(n, p, t.size(), "then_branch");
  checkCount(n, p, e.size(), "else_branch");
  // Where broadcasts the condition: a scalar one leaves each output's shape as it is.
  ValueId scalar = cond;
  if (!im.g.value(cond).shape.empty())
    scalar = emit(im, OpKind::Reshape, n.name + "/cond_scalar",
                  {cond, im.g.addConstantI64(n.name + "/scalar_shape", {0}, {})}, {});
  std::vector<ValueId> outs;
  for (int i = 0; i < p.output_size(); ++i) {
    const auto k = static_cast<size_t>(i);
    const graph::Value &a = im.g.value(t[k]);
    const graph::Value &b = im.g.value(e[k]);
    if (a.shape != b.shape || a.dtype != b.dtype)
      fail("{}: output {} ('{}') is {}[{}] from then_branch but {}[{}] from else_branch; a "
           "run-time condition computes both branches and selects, which needs one static shape "
           "and type (a constant condition inlines one branch){}",
           where(n), i, p.output(i), graph::dtypeName(a.dtype), shapeToString(a.shape),
           graph::dtypeName(b.dtype), shapeToString(b.shape), pinHint(im, cond));
    const std::string name = p.output(i).empty() ? fmt::format("{}/out{}", n.name, i) : p.output(i);
    outs.push_back(t[k] == e[k] ? t[k] : emit(im, OpKind::Where, name, {scalar, t[k], e[k]}, {}));
  }
  bindOutputs(im, p, outs);
}

// ------------------------------------------------------------------------------ stacking

// Stacks `parts` (one per iteration, in output order) along new axis `axis` of the result:
// Unsqueeze each, then Concat. Every part must have one shape and type.
ValueId stack(Importer &im, const Node &n, const std::vector<ValueId> &parts, int64_t axis,
              const std::string &name, const std::string &what) {
  const graph::Value &first = im.g.value(parts.front());
  const auto rank = static_cast<int64_t>(first.shape.size());
  if (axis < -(rank + 1) || axis > rank)
    fail("{}: {}: axis {} is out of range for rank {}", where(n), what, axis, rank + 1);
  if (axis < 0)
    axis += rank + 1;
  std::vector<ValueId> rows;
  for (size_t t = 0; t < parts.size(); ++t) {
    const graph::Value &v = im.g.value(parts[t]);
    if (v.shape != first.shape || v.dtype != first.dtype)
      fail("{}: {} is {}[{}] in iteration 0 but {}[{}] in iteration {}; stacked outputs need one "
           "shape and type",
           where(n), what, graph::dtypeName(first.dtype), shapeToString(first.shape),
           graph::dtypeName(v.dtype), shapeToString(v.shape), t);
    rows.push_back(emit(im, OpKind::Unsqueeze, fmt::format("{}/row{}", name, t), {parts[t]},
                        {{"axes", std::vector<int64_t>{axis}}}));
  }
  if (rows.size() == 1)
    return rows[0];
  return emit(im, OpKind::Concat, name, rows, {{"axis", axis}});
}

// The outputs' values of a body that runs no iteration: scan outputs are empty along the new
// axis. Their shapes come from importing the body once on `args` (its nodes are never used and
// removed as dead code).
std::vector<ValueId> emptyScanOutputs(Importer &im, const Node &n, const onnx::GraphProto &body,
                                      const std::vector<ValueId> &args, size_t first,
                                      const std::vector<int64_t> &axes) {
  const std::vector<ValueId> probe = inlineBody(im, n, body, args, n.name + "/shape_probe/");
  std::vector<ValueId> outs;
  for (size_t k = first; k < probe.size(); ++k) {
    const graph::Value &v = im.g.value(probe[k]);
    Shape s = v.shape;
    const size_t j = k - first;
    int64_t axis = j < axes.size() ? axes[j] : 0;
    if (axis < 0)
      axis += static_cast<int64_t>(s.size()) + 1;
    s.insert(s.begin() + std::clamp<int64_t>(axis, 0, static_cast<int64_t>(s.size())), 0);
    const std::string name = fmt::format("{}/empty{}", n.name, j);
    outs.push_back(isIntStored(v.dtype) ? im.g.addConstantI64(name, s, {}, v.dtype)
                                        : im.g.addConstant(name, s, {}, v.dtype));
  }
  return outs;
}

// Stops an unrolling past kMaxUnrolledNodes nodes, or as many iterations (a body of no nodes,
// a pass-through, adds none: without the second limit a loop whose condition stays true forever
// would never end).
void checkGrowth(const Importer &im, const Node &n, size_t start, int64_t iterations) {
  if (static_cast<size_t>(iterations) > kMaxUnrolledNodes)
    fail("{}: unrolling it takes more than {} iterations; npuc unrolls loops at compile time, "
         "so it refuses a loop this long",
         where(n), kMaxUnrolledNodes);
  if (im.g.nodes.size() - start > kMaxUnrolledNodes)
    fail("{}: unrolling it adds more than {} nodes ({} after {} iterations); npuc unrolls "
         "loops at compile time, so it refuses a loop this large",
         where(n), kMaxUnrolledNodes, im.g.nodes.size() - start, iterations);
}

// -------------------------------------------------------------------------------------- Loop

void importLoop(Importer &im, const onnx::NodeProto &p, int index) {
  graph::Graph &g = im.g;
  const Node n = controlNode(im, p, index, OpKind::Loop);
  const onnx::GraphProto &body = graphAttr(n, p, "body");
  if (n.inputs.size() < 2)
    fail("{}: takes at least 2 inputs (M, cond), got {}", where(n), n.inputs.size());
  const size_t carried = n.inputs.size() - 2;
  if (static_cast<size_t>(body.output_size()) < carried + 1)
    fail("{}: its body gives {} outputs; it needs the condition and {} carried values", where(n),
         body.output_size(), carried);
  const size_t scans = static_cast<size_t>(body.output_size()) - 1 - carried;
  checkCount(n, p, carried + scans, "body (carried values and scan outputs)");
  const bool hasM = present(n, 0), hasCond = present(n, 1);
  if (!hasM && !hasCond)
    fail("{}: has neither a trip count M nor a condition: it never ends", where(n));
  int64_t trips = -1; // unknown: runs while the condition holds
  if (hasM) {
    const ConstRole role = scans > 0 ? ConstRole::SetsShape : ConstRole::Parameter;
    const std::vector<int64_t> m = constInts(im, n, 0, "the trip count M", role);
    if (m.size() != 1)
      fail("{}: the trip count M must hold one value, got {}", where(n), m.size());
    trips = std::max<int64_t>(m[0], 0);
  }
  bool running = true;
  ValueId condV = g.addConstantI64(n.name + "/true", {}, {1}, DType::Bool);
  if (hasCond) {
    const graph::Value &c = constInput(im, n, 1, "the loop condition cond", ConstRole::Parameter);
    if (numElements(c.shape) != 1)
      fail("{}: the condition cond must hold one element, got shape {}", where(n),
           shapeToString(c.shape));
    running = truth(c);
    condV = n.inputs[1];
  }
  if (!hasCond && trips > 0 &&
      static_cast<uint64_t>(trips) * static_cast<uint64_t>(body.node_size()) > kMaxUnrolledNodes)
    fail("{}: unrolling {} iterations of a {}-node body makes more than {} nodes; npuc unrolls "
         "loops at compile time, so it refuses a loop this large",
         where(n), trips, body.node_size(), kMaxUnrolledNodes);
  std::vector<ValueId> state(n.inputs.begin() + 2, n.inputs.end());
  std::vector<std::vector<ValueId>> scanParts(scans);
  const size_t start = g.nodes.size();
  int64_t i = 0;
  for (; running && (trips < 0 || i < trips); ++i) {
    std::vector<ValueId> args{g.addConstantI64(fmt::format("{}/iter{}", n.name, i), {}, {i}),
                              condV};
    args.insert(args.end(), state.begin(), state.end());
    const std::vector<ValueId> outs =
        inlineBody(im, n, body, args, fmt::format("{}/iter{}/", n.name, i));
    const graph::Value &c = g.value(outs[0]);
    if (!c.isConstant())
      fail("{}: its condition (body output '{}') is computed at run time in iteration {}: npuc "
           "unrolls loops at compile time and cannot exit early on a run-time value{}",
           where(n), body.output(0).name(), i, pinHint(im, outs[0]));
    if (numElements(c.shape) != 1)
      fail("{}: the body's condition must hold one element, got shape {}", where(n),
           shapeToString(c.shape));
    running = truth(c);
    condV = outs[0];
    std::copy(outs.begin() + 1, outs.begin() + 1 + static_cast<long>(carried), state.begin());
    for (size_t k = 0; k < scans; ++k)
      scanParts[k].push_back(outs[1 + carried + k]);
    checkGrowth(im, n, start, i + 1);
  }
  std::vector<ValueId> results = state;
  if (scans > 0 && i == 0) {
    std::vector<ValueId> args{g.addConstantI64(n.name + "/iter0", {}, {0}), condV};
    args.insert(args.end(), state.begin(), state.end());
    const std::vector<ValueId> empty =
        emptyScanOutputs(im, n, body, args, 1 + carried, std::vector<int64_t>(scans, 0));
    results.insert(results.end(), empty.begin(), empty.end());
  } else {
    for (size_t k = 0; k < scans; ++k) {
      const int out = static_cast<int>(carried + k);
      const std::string name = out < p.output_size() && !p.output(out).empty()
                                   ? p.output(out)
                                   : fmt::format("{}/scan{}", n.name, k);
      results.push_back(stack(im, n, scanParts[k], 0, name,
                              fmt::format("scan output {} ('{}')", k,
                                          body.output(static_cast<int>(1 + carried + k)).name())));
    }
  }
  bindOutputs(im, p, results);
}

// -------------------------------------------------------------------------------------- Scan

// An attribute list of `count` entries (default all `dflt`); directions must be 0 or 1.
std::vector<int64_t> perTensor(const Node &n, const onnx::NodeProto &p, const char *name,
                               size_t count, bool direction) {
  std::vector<int64_t> v = intsAttr(p, name);
  if (v.empty())
    v.assign(count, 0);
  if (v.size() != count)
    fail("{}: attribute {} has {} entries; it needs {}", where(n), name, v.size(), count);
  if (direction)
    for (int64_t d : v)
      if (d != 0 && d != 1)
        fail("{}: attribute {}: {} is not 0 (forward) or 1 (reverse)", where(n), name, d);
  return v;
}

// Scan input `x` at position `t` of `axis`: Slice [t, t+1) along it, then Squeeze it.
ValueId sliceAt(Importer &im, ValueId x, int64_t axis, int64_t t, const std::string &name) {
  const Shape s = im.g.value(x).shape;
  std::vector<int64_t> starts(s.size(), 0), ends(s.begin(), s.end()), steps(s.size(), 1);
  starts[static_cast<size_t>(axis)] = t;
  ends[static_cast<size_t>(axis)] = t + 1;
  ValueId row = emit(im, OpKind::Slice, name + "_slice", {x},
                     {{"starts", starts}, {"ends", ends}, {"steps", steps}});
  return emit(im, OpKind::Squeeze, name, {row}, {{"axes", std::vector<int64_t>{axis}}});
}

// What one Scan (of the opset-9 form) runs over: its state variables' and scan inputs' values and
// the per-tensor attributes (axes non-negative for the inputs).
struct ScanSpec {
  std::vector<ValueId> state, inputs;
  std::vector<int64_t> inAxes, inDirs, outAxes, outDirs;
};

// Unrolls one Scan over `spec`; returns the final states then the stacked scan outputs.
std::vector<ValueId> unrollScan(Importer &im, const Node &n, const onnx::GraphProto &body,
                                ScanSpec spec, const std::string &prefix) {
  const size_t nState = spec.state.size(), nOut = spec.outAxes.size();
  int64_t length = -1;
  for (size_t j = 0; j < spec.inputs.size(); ++j) {
    const Shape &s = im.g.value(spec.inputs[j]).shape;
    const int64_t len = s[static_cast<size_t>(spec.inAxes[j])];
    if (length >= 0 && len != length)
      fail("{}: scan input {} has {} elements along axis {}, scan input 0 has {}", where(n), j, len,
           spec.inAxes[j], length);
    length = len;
  }
  if (length == 0)
    fail("{}: the scan inputs are empty along their scan axes (sequence length 0)", where(n));
  if (static_cast<uint64_t>(length) * static_cast<uint64_t>(body.node_size()) > kMaxUnrolledNodes)
    fail("{}: unrolling {} iterations of a {}-node body makes more than {} nodes; npuc unrolls "
         "scans at compile time, so it refuses one this large",
         where(n), length, body.node_size(), kMaxUnrolledNodes);
  std::vector<ValueId> state = spec.state;
  std::vector<std::vector<ValueId>> parts(nOut, std::vector<ValueId>(size_t(length), kNoValue));
  const size_t start = im.g.nodes.size();
  for (int64_t t = 0; t < length; ++t) {
    const std::string iter = fmt::format("{}iter{}/", prefix, t);
    std::vector<ValueId> args = state;
    for (size_t j = 0; j < spec.inputs.size(); ++j)
      args.push_back(sliceAt(im, spec.inputs[j], spec.inAxes[j],
                             spec.inDirs[j] ? length - 1 - t : t, fmt::format("{}in{}", iter, j)));
    const std::vector<ValueId> outs = inlineBody(im, n, body, args, iter);
    std::copy(outs.begin(), outs.begin() + static_cast<long>(nState), state.begin());
    for (size_t k = 0; k < nOut; ++k)
      parts[k][size_t(spec.outDirs[k] ? length - 1 - t : t)] = outs[nState + k];
    checkGrowth(im, n, start, t + 1);
  }
  std::vector<ValueId> results = state;
  for (size_t k = 0; k < nOut; ++k) {
    const int out = static_cast<int>(nState + k);
    results.push_back(stack(im, n, parts[k], spec.outAxes[k], fmt::format("{}scan{}", prefix, k),
                            fmt::format("scan output {} ('{}')", k, body.output(out).name())));
  }
  return results;
}

// Scan of opset 8 (the model's opset before ONNX's version converter, whose 8 -> 9 adapter only
// drops the batch axis from the declared shapes): every input and output has a leading batch
// axis, scan inputs scan along axis 1. Each batch entry runs the opset-9 Scan on its slice, and
// the results are stacked along a new axis 0.
std::vector<ValueId> unrollBatchedScan(Importer &im, const Node &n, const onnx::GraphProto &body,
                                       const ScanSpec &spec) {
  std::vector<ValueId> all = spec.state;
  all.insert(all.end(), spec.inputs.begin(), spec.inputs.end());
  int64_t batch = -1;
  for (ValueId v : all) {
    const Shape &s = im.g.value(v).shape;
    if (s.empty() || (batch >= 0 && s[0] != batch))
      fail("{}: Scan of opset 8 needs one leading batch axis on every input", where(n));
    batch = s[0];
  }
  std::vector<std::vector<ValueId>> perBatch;
  for (int64_t b = 0; b < batch; ++b) {
    const std::string prefix = fmt::format("{}/batch{}/", n.name, b);
    ScanSpec one = spec;
    for (size_t j = 0; j < all.size(); ++j) {
      ValueId row = sliceAt(im, all[j], 0, b, fmt::format("{}arg{}", prefix, j));
      (j < spec.state.size() ? one.state[j] : one.inputs[j - spec.state.size()]) = row;
    }
    one.inAxes.assign(spec.inputs.size(), 0);
    perBatch.push_back(unrollScan(im, n, body, one, prefix));
  }
  std::vector<ValueId> results;
  for (size_t k = 0; k < perBatch.front().size(); ++k) {
    std::vector<ValueId> parts;
    for (const auto &r : perBatch)
      parts.push_back(r[k]);
    results.push_back(
        stack(im, n, parts, 0, fmt::format("{}/out{}", n.name, k), fmt::format("output {}", k)));
  }
  return results;
}

void importScan(Importer &im, const onnx::NodeProto &p, int index) {
  const Node n = controlNode(im, p, index, OpKind::Scan);
  const onnx::GraphProto &body = graphAttr(n, p, "body");
  const int64_t numIn = intAttr(p, "num_scan_inputs", -1);
  if (numIn < 1 || static_cast<size_t>(numIn) > n.inputs.size())
    fail("{}: attribute num_scan_inputs={} must be between 1 and its {} inputs", where(n), numIn,
         n.inputs.size());
  const size_t nIn = static_cast<size_t>(numIn), nState = n.inputs.size() - nIn;
  if (static_cast<size_t>(body.output_size()) < nState)
    fail("{}: its body gives {} outputs, fewer than its {} state variables", where(n),
         body.output_size(), nState);
  const size_t nOut = static_cast<size_t>(body.output_size()) - nState;
  checkCount(n, p, nState + nOut, "body (state variables and scan outputs)");
  ScanSpec spec;
  spec.state.assign(n.inputs.begin(), n.inputs.begin() + static_cast<long>(nState));
  spec.inputs.assign(n.inputs.begin() + static_cast<long>(nState), n.inputs.end());
  for (size_t j = 0; j < nState + nIn; ++j)
    if (n.inputs[j] == kNoValue)
      fail("{}: input {} is missing", where(n), j);
  spec.inAxes = perTensor(n, p, "scan_input_axes", nIn, false);
  spec.inDirs = perTensor(n, p, "scan_input_directions", nIn, true);
  spec.outAxes = perTensor(n, p, "scan_output_axes", nOut, false);
  spec.outDirs = perTensor(n, p, "scan_output_directions", nOut, true);
  std::vector<ValueId> results;
  if (im.sourceOpset == 8) {
    results = unrollBatchedScan(im, n, body, spec);
  } else {
    for (size_t j = 0; j < nIn; ++j)
      spec.inAxes[j] = normaliseAxis(n, spec.inAxes[j], im.g.value(spec.inputs[j]).shape.size());
    results = unrollScan(im, n, body, spec, n.name + "/");
  }
  bindOutputs(im, p, results);
}

} // namespace

void checkLegacyScans(const onnx::GraphProto &gp) {
  for (int i = 0; i < gp.node_size(); ++i) {
    const onnx::NodeProto &p = gp.node(i);
    if (p.op_type() == "Scan" && p.input_size() > 0 && !p.input(0).empty())
      fail("node '{}' (Scan): sequence_lens (input 0 of Scan at opset 8) is not supported; "
           "every batch entry must scan the whole sequence",
           p.name().empty() ? fmt::format("Scan_{}", i) : p.name());
    for (const auto &a : p.attribute())
      if (a.type() == onnx::AttributeProto::GRAPH)
        checkLegacyScans(a.g());
  }
}

bool importControlFlow(Importer &im, const onnx::NodeProto &p, int index) {
  if (!p.domain().empty() && p.domain() != "ai.onnx")
    return false;
  if (p.op_type() == "If")
    importIf(im, p, index);
  else if (p.op_type() == "Loop")
    importLoop(im, p, index);
  else if (p.op_type() == "Scan")
    importScan(im, p, index);
  else
    return false;
  return true;
}

} // namespace npuc::frontend::detail
