// Onnx.cpp - ONNX model loading: protobuf parsing, opset check, input shape pinning, ONNX shape
// inference (as a cross-check of our own), initializers, and the node loop (OnnxNode.cpp).
#include "frontend/Onnx.h"
#include "frontend/OnnxImpl.h"

#include "support/Error.h"
#include "support/Half.h"
#include "support/Npy.h"

#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <vector>

namespace npuc::frontend {

namespace detail {

graph::ValueId Importer::lookup(const std::string &name, const std::string &where) const {
  auto it = names.find(name);
  if (it == names.end() && (sequences.count(name) || optionals.count(name)))
    fail("{}: '{}' is {}; only the sequence and optional operators take one (graph inputs and "
         "outputs are tensors)",
         where, name, sequences.count(name) ? "a sequence" : "an optional");
  if (it == names.end())
    fail("{}: input '{}' is not defined by any earlier node, initializer or graph input", where,
         name);
  return it->second;
}

namespace {

template <typename T> std::vector<T> rawAs(const onnx::TensorProto &t, int64_t n) {
  if (static_cast<int64_t>(t.raw_data().size()) != n * static_cast<int64_t>(sizeof(T)))
    fail("tensor '{}': raw_data has {} bytes, expected {}", t.name(), t.raw_data().size(),
         n * static_cast<int64_t>(sizeof(T)));
  std::vector<T> v(static_cast<size_t>(n));
  if (n > 0) // an empty vector's data() may be null, which memcpy must not get
    std::memcpy(v.data(), t.raw_data().data(), t.raw_data().size()); // ONNX raw data is LE
  return v;
}

// Reads integer-typed tensor contents (raw or typed field) as int64 (uint64 as its bit pattern).
std::vector<int64_t> intContents(const onnx::TensorProto &t, int64_t n) {
  using TP = onnx::TensorProto;
  std::vector<int64_t> out;
  auto widen = [&](auto v) { out.assign(v.begin(), v.end()); };
  bool raw = t.has_raw_data();
  switch (t.data_type()) {
  case TP::INT64:
    if (raw)
      out = rawAs<int64_t>(t, n);
    else
      widen(t.int64_data());
    break;
  case TP::UINT64:
    raw ? widen(rawAs<int64_t>(t, n)) : widen(t.uint64_data());
    break;
  case TP::UINT32:
    raw ? widen(rawAs<uint32_t>(t, n)) : widen(t.uint64_data());
    break;
  case TP::INT32:
    raw ? widen(rawAs<int32_t>(t, n)) : widen(t.int32_data());
    break;
  case TP::INT16:
    raw ? widen(rawAs<int16_t>(t, n)) : widen(t.int32_data());
    break;
  case TP::UINT16:
    raw ? widen(rawAs<uint16_t>(t, n)) : widen(t.int32_data());
    break;
  case TP::INT8:
    raw ? widen(rawAs<int8_t>(t, n)) : widen(t.int32_data());
    break;
  case TP::UINT8:
  case TP::BOOL:
    raw ? widen(rawAs<uint8_t>(t, n)) : widen(t.int32_data());
    break;
  default:
    NPUC_ASSERT(false, "intContents is only called for integer tensors");
  }
  return out;
}

// Reads float-typed tensor contents as fp32 (double rounds; float16 from its bits, which the
// typed field keeps in int32_data).
std::vector<float> floatContents(const onnx::TensorProto &t, int64_t n) {
  using TP = onnx::TensorProto;
  bool raw = t.has_raw_data();
  switch (t.data_type()) {
  case TP::FLOAT:
    return raw ? rawAs<float>(t, n)
               : std::vector<float>(t.float_data().begin(), t.float_data().end());
  case TP::DOUBLE: {
    std::vector<double> d =
        raw ? rawAs<double>(t, n)
            : std::vector<double>(t.double_data().begin(), t.double_data().end());
    return std::vector<float>(d.begin(), d.end());
  }
  case TP::FLOAT16: {
    std::vector<uint16_t> h =
        raw ? rawAs<uint16_t>(t, n)
            : std::vector<uint16_t>(t.int32_data().begin(), t.int32_data().end());
    std::vector<float> f(h.size());
    for (size_t i = 0; i < h.size(); ++i)
      f[i] = halfToFloat(h[i]);
    return f;
  }
  default:
    NPUC_ASSERT(false, "floatContents is only called for float tensors");
  }
  return {};
}

} // namespace

graph::DType tensorDType(int32_t elemType, const std::string &what) {
  std::optional<graph::DType> t = graph::dtypeFromOnnx(elemType);
  if (!t)
    fail("{}: element type {} is not supported (float, double, float16, int8..int64, "
         "uint8..uint64 and bool are)",
         what,
         onnx::TensorProto::DataType_Name(static_cast<onnx::TensorProto::DataType>(elemType)));
  return *t;
}

graph::ValueId importTensor(Importer &im, const onnx::TensorProto &t, const std::string &name) {
  using TP = onnx::TensorProto;
  if (t.data_location() == TP::EXTERNAL)
    fail("tensor '{}': external data is not supported", name);
  Shape shape(t.dims().begin(), t.dims().end());
  for (int64_t d : shape)
    if (d < 0)
      fail("tensor '{}': negative dimension", name);
  int64_t n = 1; // checked: a hostile file's dims may multiply past int64 (a fuzzer's did)
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n))
      fail("tensor '{}': shape {} has more elements than int64 holds", name, shapeToString(shape));
  const graph::DType dt = tensorDType(t.data_type(), fmt::format("tensor '{}'", name));
  if (isIntStored(dt)) {
    std::vector<int64_t> v = intContents(t, n);
    if (static_cast<int64_t>(v.size()) != n)
      fail("tensor '{}': has {} elements, shape {} needs {}", name, v.size(), shapeToString(shape),
           n);
    for (int64_t &x : v)
      x = wrapToType(dt, x); // the typed fields widen; a bool may be stored as any non-zero
    return im.g.addConstantI64(name, shape, std::move(v), dt);
  }
  std::vector<float> f = floatContents(t, n);
  if (static_cast<int64_t>(f.size()) != n)
    fail("tensor '{}': has {} elements, shape {} needs {}", name, f.size(), shapeToString(shape),
         n);
  return im.g.addConstant(name, shape, std::move(f), dt);
}

} // namespace detail

namespace {

using detail::Importer;

int64_t findOpset(const onnx::ModelProto &m) {
  for (const auto &op : m.opset_import())
    if (op.domain().empty() || op.domain() == "ai.onnx")
      return op.version();
  // A model of ai.onnx.preview.training optimizers alone (ONNX's node tests) needs no default
  // domain: those operators do not depend on it, and the ops they become are read at the newest
  // opset the ONNX library knows.
  bool training = m.graph().node_size() > 0;
  for (const auto &n : m.graph().node())
    training = training && detail::isTrainingDomain(n.domain());
  if (training)
    return onnx::OpSchemaRegistry::DomainToVersionRange::Instance()
        .Map()
        .at(onnx::ONNX_DOMAIN)
        .second;
  fail("the model imports no default-domain (ai.onnx) opset");
}

// Pins the graph inputs' shapes (model dims + --input-shape) and writes them back into the
// model so that ONNX shape inference sees static inputs too.
void importInputs(Importer &im, onnx::ModelProto &m, const std::set<std::string> &inits,
                  const std::map<std::string, Shape> &pinned, const std::string &by) {
  std::set<std::string> used;
  for (auto &in : *m.mutable_graph()->mutable_input()) {
    if (inits.count(in.name()))
      continue; // an initializer listed as input (old exporters): a constant
    if (!in.type().has_tensor_type())
      fail("input '{}': only tensor inputs are supported", in.name());
    auto *tt = in.mutable_type()->mutable_tensor_type();
    const graph::DType dtype =
        detail::tensorDType(tt->elem_type(), fmt::format("input '{}'", in.name()));
    if (!tt->has_shape())
      fail("input '{}': the model gives no shape", in.name());
    auto pin = pinned.find(in.name());
    if (pin != pinned.end())
      used.insert(in.name());
    Shape shape;
    auto *dims = tt->mutable_shape()->mutable_dim();
    if (pin != pinned.end() && pin->second.size() != static_cast<size_t>(dims->size()))
      fail("input '{}': {} {} has rank {}, the model's input has rank {}", in.name(), by,
           shapeToString(pin->second), pin->second.size(), dims->size());
    for (int i = 0; i < dims->size(); ++i) {
      auto *d = dims->Mutable(i);
      bool known = d->has_dim_value() && d->dim_value() > 0;
      if (pin != pinned.end()) {
        int64_t want = pin->second[static_cast<size_t>(i)];
        if (known && d->dim_value() != want)
          fail("input '{}': {} gives dim {} = {} but the model fixes it to {}", in.name(), by, i,
               want, d->dim_value());
        if (want <= 0)
          fail("input '{}': {} dim {} must be positive", in.name(), by, i);
        shape.push_back(want);
      } else if (known) {
        shape.push_back(d->dim_value());
      } else if (d->has_dim_value()) {
        fail("input '{}': dim {} is {}; every dimension must be positive", in.name(), i,
             d->dim_value());
      } else {
        fail("input '{}': dim {} ('{}') is dynamic; pin it with --input-shape {}=...", in.name(), i,
             d->has_dim_param() ? d->dim_param() : "?", in.name());
      }
      d->clear_dim_param();
      d->set_dim_value(shape.back());
    }
    graph::ValueId v = im.g.addValue(in.name(), shape, dtype);
    im.g.inputs.push_back(v);
    im.names[in.name()] = v;
  }
  for (const auto &[name, s] : pinned)
    if (!used.count(name))
      fail("{} names '{}', which is not an input of the model", by, name);
}

// Compares our static shapes with the fully static shapes ONNX inferred.
void crossCheck(const Importer &im, const onnx::ModelProto &m) {
  for (const auto &vi : m.graph().value_info()) {
    auto it = im.names.find(vi.name());
    if (it == im.names.end() || !vi.type().tensor_type().has_shape())
      continue;
    Shape theirs;
    for (const auto &d : vi.type().tensor_type().shape().dim())
      if (d.has_dim_value())
        theirs.push_back(d.dim_value());
    if (theirs.size() != static_cast<size_t>(vi.type().tensor_type().shape().dim_size()))
      continue; // a dimension ONNX left symbolic: nothing to compare (the next value may have one)
    const graph::Value &v = im.g.value(it->second);
    if (v.shape != theirs && numElements(v.shape) == numElements(theirs) && v.isConstant())
      continue; // a folded constant: ONNX may keep a different but equivalent layout
    if (v.shape != theirs)
      fail("value '{}': npuc computed shape {} but ONNX shape inference gives {}", vi.name(),
           shapeToString(v.shape), shapeToString(theirs));
  }
}

// Whether every graph output that declares a fully static shape has that shape in npuc's graph
// (and at least one does).
bool outputsMatchDeclared(const Importer &im, const onnx::ModelProto &m) {
  bool any = false;
  for (const auto &out : m.graph().output()) {
    const auto &tt = out.type().tensor_type();
    if (!tt.has_shape())
      continue;
    Shape declared;
    for (const auto &d : tt.shape().dim())
      if (d.has_dim_value())
        declared.push_back(d.dim_value());
    if (declared.size() != static_cast<size_t>(tt.shape().dim_size()))
      continue;
    auto it = im.names.find(out.name());
    if (it == im.names.end() || im.g.value(it->second).shape != declared)
      return false;
    any = true;
  }
  return any;
}

// A node's name in messages: its own, else "<OpType>_<index>" as the importer names it.
std::string nodeLabel(const onnx::NodeProto &n, int index) {
  return n.name().empty() ? fmt::format("{}_{}", n.op_type(), index) : n.name();
}

// ONNX graphs are acyclic; a cycle would otherwise surface later as a shape-inference failure
// ("type is null") that names no node. Depth-first search over producers (iterative: graphs may
// be long chains); the error walks the cycle found.
void checkAcyclic(const onnx::GraphProto &gp) {
  std::map<std::string, int> producer;
  for (int i = 0; i < gp.node_size(); ++i)
    for (const std::string &out : gp.node(i).output())
      if (!out.empty())
        producer.emplace(out, i);
  enum class Mark { New, Open, Done };
  std::vector<Mark> mark(size_t(gp.node_size()), Mark::New);
  std::vector<int> parent(size_t(gp.node_size()), -1);
  for (int root = 0; root < gp.node_size(); ++root) {
    if (mark[size_t(root)] != Mark::New)
      continue;
    std::vector<std::pair<int, int>> stack{{root, 0}}; // (node, next input to follow)
    mark[size_t(root)] = Mark::Open;
    while (!stack.empty()) {
      auto &[n, next] = stack.back();
      const onnx::NodeProto &node = gp.node(n);
      if (next == node.input_size()) {
        mark[size_t(n)] = Mark::Done;
        stack.pop_back();
        continue;
      }
      auto p = producer.find(node.input(next++));
      if (p == producer.end() || mark[size_t(p->second)] == Mark::Done)
        continue;
      if (mark[size_t(p->second)] == Mark::Open) {
        // n reads p's output, and each open node's output is read by its parent, up to p.
        std::string path = nodeLabel(gp.node(p->second), p->second);
        for (int at = n; at != p->second; at = parent[size_t(at)])
          path += " -> " + nodeLabel(gp.node(at), at);
        fail("node '{}' ({}) is on a cycle (each node feeds the next): {} -> {}",
             nodeLabel(gp.node(p->second), p->second), gp.node(p->second).op_type(), path,
             nodeLabel(gp.node(p->second), p->second));
      }
      parent[size_t(p->second)] = n;
      mark[size_t(p->second)] = Mark::Open;
      stack.emplace_back(p->second, 0);
    }
  }
}

graph::Graph importModel(onnx::ModelProto &m, const ImportOptions &options) {
  const std::map<std::string, Shape> &pinned = options.inputShapes;
  Importer im;
  im.opset = findOpset(m);
  if (im.opset < 1 || im.opset > 18)
    fail("opset {} is not supported (supported: 1-18)", im.opset);
  if (!m.has_graph())
    fail("the model has no graph");
  im.g.name = m.graph().name();
  detail::checkTensorInterface(m.graph());
  detail::bindInputs(m, options.bound, pinned);
  std::set<std::string> inits;
  for (const auto &t : m.graph().initializer())
    inits.insert(t.name());
  importInputs(im, m, inits, pinned, options.pinnedBy);
  checkAcyclic(m.graph());
  // After the inputs are pinned: the converter's adapters may need their shapes.
  im.sourceOpset = im.opset;
  if (im.opset == 8)
    detail::checkLegacyScans(m.graph());
  im.opset = detail::upgradeOpset(m, im.opset);
  const onnx::GraphProto &gp = m.graph();
  for (const auto &t : gp.initializer())
    im.names[t.name()] = detail::importTensor(im, t, t.name());
  for (int i = 0; i < gp.node_size(); ++i)
    if (!detail::importSequenceNode(im, gp.node(i), i))
      detail::importNode(im, gp.node(i), i);
  for (const auto &out : gp.output()) {
    graph::ValueId v = im.lookup(out.name(), "graph output");
    const int32_t declared = out.type().tensor_type().elem_type();
    if (declared != onnx::TensorProto::UNDEFINED &&
        detail::tensorDType(declared, fmt::format("output '{}'", out.name())) !=
            im.g.value(v).dtype)
      fail("output '{}': the model declares element type {} but npuc infers {}", out.name(),
           graph::dtypeName(detail::tensorDType(declared, out.name())),
           graph::dtypeName(im.g.value(v).dtype));
    // An output produced through a removed Identity/Dropout/Cast aliases an earlier value, which
    // may be a graph input, a constant or another output's value: the output keeps the name the
    // model declares in outputNames, under which results are reported and written. A computed
    // value no other output claims takes the name too, so that inspect and reports show it.
    graph::Value &val = im.g.value(v);
    bool claimed = std::find(im.g.outputs.begin(), im.g.outputs.end(), v) != im.g.outputs.end();
    if (val.name != out.name() && val.producer >= 0 && !claimed)
      val.name = out.name();
    im.g.outputs.push_back(v);
    im.g.outputNames.push_back(out.name());
  }
  if (im.g.outputs.empty())
    fail("the graph has no outputs");
  // ONNX's shape inference cross-checks ours. It runs after our import so that our checks,
  // which name the node and attribute, see bad attributes first: ONNX's own divides by a zero
  // stride (SIGFPE) in onnx::convPoolShapeInference. The installed ONNX library knows the opsets
  // up to its release; on a newer model it would apply older schemas to changed operators
  // (Split's num_outputs, Resize's axes at 18), so there our own inference stands alone.
  const int64_t knownOpset =
      onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map().at(onnx::ONNX_DOMAIN).second;
  if (im.opset <= knownOpset) {
    try {
      onnx::shape_inference::InferShapes(m, onnx::OpSchemaRegistry::Instance(),
                                         onnx::ShapeInferenceOptions(false, 1, false));
    } catch (const std::exception &e) {
      // A schema of the installed ONNX may infer a shape that contradicts the shape the model
      // declares for a graph output (ONNX 1.12's STFT ignores onesided). When npuc's inference
      // agrees with every declared output shape, two of three agree: ONNX's inference reruns
      // without the declared output shapes, and the cross-check still compares what it infers
      // for the values inside the graph.
      const std::string why = e.what();
      if (why.find("Inferred shape and existing shape differ") == std::string::npos ||
          !outputsMatchDeclared(im, m))
        fail("ONNX shape inference failed: {}", why);
      for (auto &o : *m.mutable_graph()->mutable_output())
        o.mutable_type()->mutable_tensor_type()->clear_shape();
      try {
        onnx::shape_inference::InferShapes(m, onnx::OpSchemaRegistry::Instance(),
                                           onnx::ShapeInferenceOptions(false, 1, false));
      } catch (const std::exception &) {
        fail("ONNX shape inference failed: {}", why);
      }
    }
    crossCheck(im, m);
  }
  im.g.removeDeadNodes();
  return std::move(im.g);
}

} // namespace

graph::Graph importOnnx(const std::string &path, const ImportOptions &options) {
  std::string bytes;
  try {
    bytes = readFile(path);
  } catch (const Error &e) {
    fail("{}: cannot read the model ({})", path, e.what());
  }
  onnx::ModelProto model;
  if (bytes.empty() || !model.ParseFromString(bytes))
    fail("{}: not a valid ONNX model (protobuf parsing failed on {} bytes)", path, bytes.size());
  if (!model.has_graph() || model.opset_import_size() == 0)
    fail("{}: not a valid ONNX model (no graph or no opset_import)", path);
  try {
    return importModel(model, options);
  } catch (const Error &e) {
    fail("{}: {}", path, e.what());
  }
}

} // namespace npuc::frontend
