// OnnxSequence.cpp - the sequence and optional operators of ai.onnx (opsets 11-18), resolved at
// import as a static-shape compiler can (TVM's importer does the same with tuples): each
// sequence's length and each optional's presence are known at compile time, so a sequence is the
// list of its elements' tensor values and an optional is absent or holds one tensor or sequence.
// SequenceAt and OptionalGetElement become the tensor they select, ConcatFromSequence and
// SplitToSequence the Concat/Unsqueeze and Split/Squeeze nodes they stand for, SequenceLength and
// OptionalHasElement constants. Positions must be compile-time constants. Graph inputs and
// outputs stay tensors (the command line feeds and writes only tensors).
#include "frontend/OnnxImpl.h"

#include "graph/Passes.h"
#include "graph/ShapeInference.h"
#include "support/Error.h"

#include <onnx/defs/data_type_utils.h>

#include <numeric>

namespace npuc::frontend::detail {

using graph::kNoValue;
using graph::Node;
using graph::ValueId;

namespace {

bool isSequenceOp(OpKind k) {
  switch (k) {
  case OpKind::SequenceEmpty:
  case OpKind::SequenceConstruct:
  case OpKind::SequenceInsert:
  case OpKind::SequenceErase:
  case OpKind::SequenceAt:
  case OpKind::SequenceLength:
  case OpKind::ConcatFromSequence:
  case OpKind::SplitToSequence:
  case OpKind::Optional:
  case OpKind::OptionalHasElement:
  case OpKind::OptionalGetElement:
    return true;
  default:
    return false;
  }
}

/// What an input name of a node stands for at import.
enum class Kind { Absent, Tensor, Sequence, Optional };

// One node being resolved: its proto and a graph::Node that carries its name and kind for the
// messages, and its tensor inputs as values for constInput (kNoValue for a sequence, optional or
// omitted input).
struct Ctx {
  Importer &im;
  const onnx::NodeProto &p;
  Node n;

  Kind kindOf(size_t i) const {
    if (i >= static_cast<size_t>(p.input_size()) || p.input(static_cast<int>(i)).empty())
      return Kind::Absent;
    const std::string &name = p.input(static_cast<int>(i));
    if (im.sequences.count(name))
      return Kind::Sequence;
    return im.optionals.count(name) ? Kind::Optional : Kind::Tensor;
  }
  const std::string &input(size_t i) const { return p.input(static_cast<int>(i)); }
  const std::string &output() const { return p.output(0); }

  const Sequence &seq(size_t i) const {
    if (kindOf(i) != Kind::Sequence)
      fail("{}: input {} ('{}') must be a sequence", where(n), i, input(i));
    return im.sequences.at(input(i));
  }
  ValueId tensor(size_t i) const {
    if (kindOf(i) != Kind::Tensor)
      fail("{}: input {} ('{}') must be a tensor", where(n), i, input(i));
    return n.inputs[i];
  }
  int64_t attr(const std::string &name, std::optional<int64_t> dflt) const {
    for (const auto &a : p.attribute())
      if (a.name() == name)
        return a.i();
    if (!dflt)
      fail("{}: attribute {} is missing", where(n), name);
    return *dflt;
  }
  void setTensor(ValueId v) const { im.names[output()] = v; }
  void setSequence(Sequence s) const { im.sequences[output()] = std::move(s); }
};

// Adds node `kind` reading `ins` with `outs` outputs (named `outName`, or `outName`.k when
// several), infers their shapes and folds the node when its inputs are constant.
std::vector<ValueId> emit(Importer &im, OpKind kind, const std::string &name,
                          std::vector<ValueId> ins, std::map<std::string, graph::AttrValue> attrs,
                          size_t outs, const std::string &outName) {
  std::vector<ValueId> o;
  for (size_t k = 0; k < outs; ++k)
    o.push_back(im.g.addValue(outs == 1 ? outName : fmt::format("{}.{}", outName, k), {},
                              graph::DType::F32));
  graph::NodeId id = im.g.addNode(kind, name, std::move(ins), o);
  im.g.node(id).attrs = std::move(attrs);
  graph::inferNodeShape(im.g, id);
  graph::foldConstantNode(im.g, id);
  return o;
}

// Input i, a position into a sequence of `len` elements, normalised to [0, len) (to [0, len] when
// `pastEnd`: SequenceInsert may append). It selects which tensor a value is, so it must be known
// at compile time.
int64_t position(const Ctx &c, size_t i, int64_t len, bool pastEnd) {
  const graph::Value &v = constInput(c.im, c.n, i, "position", ConstRole::Parameter);
  if (!v.i64 || v.dtype == graph::DType::Bool || numElements(v.shape) != 1)
    fail("{}: position (input {}) must be an integer scalar, got {} of shape {}", where(c.n), i,
         graph::dtypeName(v.dtype), shapeToString(v.shape));
  const int64_t pos = (*v.i64)[0];
  const int64_t hi = pastEnd ? len : len - 1;
  if (hi < 0)
    fail("{}: position {} is out of range: the sequence is empty (length 0)", where(c.n), pos);
  if (pos < -len || pos > hi)
    fail("{}: position {} is out of range for a sequence of length {} (valid: {} to {})",
         where(c.n), pos, len, -len, hi);
  return pos < 0 ? pos + len : pos;
}

// A tensor joining sequence `s`: sequences hold one element type.
void checkElemType(const Ctx &c, const Sequence &s, ValueId v) {
  const graph::Value &val = c.im.g.value(v);
  if (val.dtype != s.dtype)
    fail("{}: tensor '{}' has element type {}, but the sequence holds {}", where(c.n), val.name,
         graph::dtypeName(val.dtype), graph::dtypeName(s.dtype));
}

void sequenceEmpty(const Ctx &c) {
  const int64_t dt = c.attr("dtype", onnx::TensorProto::FLOAT);
  c.setSequence({{}, tensorDType(static_cast<int32_t>(dt), where(c.n) + ": attribute dtype")});
}

void sequenceConstruct(const Ctx &c) {
  Sequence s;
  s.dtype = c.im.g.value(c.tensor(0)).dtype;
  for (size_t i = 0; i < c.n.inputs.size(); ++i) {
    s.elems.push_back(c.tensor(i));
    checkElemType(c, s, s.elems.back());
  }
  c.setSequence(std::move(s));
}

void sequenceInsert(const Ctx &c) {
  Sequence s = c.seq(0);
  const ValueId t = c.tensor(1);
  checkElemType(c, s, t);
  const auto len = static_cast<int64_t>(s.elems.size());
  const int64_t at = c.kindOf(2) == Kind::Absent ? len : position(c, 2, len, true);
  s.elems.insert(s.elems.begin() + at, t);
  c.setSequence(std::move(s));
}

void sequenceErase(const Ctx &c) {
  Sequence s = c.seq(0);
  const auto len = static_cast<int64_t>(s.elems.size());
  if (c.kindOf(1) == Kind::Absent && len == 0)
    fail("{}: the sequence is empty (length 0); there is no last element to erase", where(c.n));
  const int64_t at = c.kindOf(1) == Kind::Absent ? len - 1 : position(c, 1, len, false);
  s.elems.erase(s.elems.begin() + at);
  c.setSequence(std::move(s));
}

void sequenceAt(const Ctx &c) {
  const Sequence &s = c.seq(0);
  c.setTensor(
      s.elems[static_cast<size_t>(position(c, 1, static_cast<int64_t>(s.elems.size()), false))]);
}

// ConcatFromSequence: Concat along `axis`, or (new_axis=1) along a new axis inserted there by an
// Unsqueeze of each element (numpy.stack).
void concatFromSequence(const Ctx &c) {
  const Sequence &s = c.seq(0);
  if (s.elems.empty())
    fail("{}: the sequence is empty (length 0); there is nothing to concatenate", where(c.n));
  const int64_t newAxis = c.attr("new_axis", 0);
  if (newAxis != 0 && newAxis != 1)
    fail("{}: attribute new_axis={} must be 0 or 1", where(c.n), newAxis);
  const size_t rank = c.im.g.value(s.elems[0]).shape.size() + static_cast<size_t>(newAxis);
  const int64_t axis = normaliseAxis(c.n, c.attr("axis", std::nullopt), rank);
  std::vector<ValueId> parts = s.elems;
  const bool single = parts.size() == 1;
  for (size_t k = 0; newAxis && k < parts.size(); ++k)
    parts[k] = emit(c.im, OpKind::Unsqueeze, fmt::format("{}_unsqueeze{}", c.n.name, k), {parts[k]},
                    {{"axes", std::vector<int64_t>{axis}}}, 1,
                    single ? c.output() : fmt::format("{}.{}", c.output(), k))[0];
  c.setTensor(
      single ? parts[0]
             : emit(c.im, OpKind::Concat, c.n.name, parts, {{"axis", axis}}, 1, c.output())[0]);
}

// SplitToSequence's part sizes along an axis of extent `dim`: 1 each without `split`, chunks of
// a scalar `split` (the last one smaller when it does not divide `dim`), or the 1-D list given.
std::vector<int64_t> splitSizes(const Ctx &c, int64_t dim) {
  if (c.kindOf(1) == Kind::Absent)
    return std::vector<int64_t>(static_cast<size_t>(dim), 1);
  const graph::Value &v = constInput(c.im, c.n, 1, "split");
  if (!v.i64 || v.dtype == graph::DType::Bool || v.shape.size() > 1)
    fail("{}: split must be an integer scalar or 1-D tensor, got {} of shape {}", where(c.n),
         graph::dtypeName(v.dtype), shapeToString(v.shape));
  std::vector<int64_t> sizes = *v.i64;
  if (v.shape.empty()) {
    const int64_t chunk = sizes[0];
    if (chunk <= 0)
      fail("{}: split={} must be positive", where(c.n), chunk);
    sizes.assign(static_cast<size_t>((dim + chunk - 1) / chunk), chunk);
    sizes.back() = dim - chunk * static_cast<int64_t>(sizes.size() - 1);
    return sizes;
  }
  for (int64_t s : sizes)
    if (s <= 0)
      fail("{}: split has a part of size {}; every part must be non-empty (npuc does not support "
           "empty tensors)",
           where(c.n), s);
  const int64_t sum = std::accumulate(sizes.begin(), sizes.end(), int64_t{0});
  if (sum != dim)
    fail("{}: split sums to {}, but the input's axis extent is {}", where(c.n), sum, dim);
  return sizes;
}

// SplitToSequence: a Split into the parts, each Squeezed along the axis when `split` is absent
// and keepdims=0 (ONNX ignores keepdims when `split` is given).
void splitToSequence(const Ctx &c) {
  const ValueId x = c.tensor(0);
  const Shape shape = c.im.g.value(x).shape;
  const int64_t axis = normaliseAxis(c.n, c.attr("axis", 0), shape.size());
  const std::vector<int64_t> sizes = splitSizes(c, shape[static_cast<size_t>(axis)]);
  const bool squeeze = c.kindOf(1) == Kind::Absent && c.attr("keepdims", 1) == 0;
  Sequence s{{x}, c.im.g.value(x).dtype};
  if (sizes.size() > 1)
    s.elems = emit(c.im, OpKind::Split, c.n.name, {x}, {{"axis", axis}, {"split", sizes}},
                   sizes.size(), c.output() + ".part");
  for (size_t k = 0; squeeze && k < s.elems.size(); ++k)
    s.elems[k] =
        emit(c.im, OpKind::Squeeze, fmt::format("{}_squeeze{}", c.n.name, k), {s.elems[k]},
             {{"axes", std::vector<int64_t>{axis}}}, 1, fmt::format("{}.{}", c.output(), k))[0];
  c.setSequence(std::move(s));
}

void optional(const Ctx &c) {
  OptionalValue o;
  switch (c.kindOf(0)) {
  case Kind::Absent:
    if (std::none_of(c.p.attribute().begin(), c.p.attribute().end(),
                     [](const onnx::AttributeProto &a) { return a.name() == "type"; }))
      fail("{}: without an input, attribute type is required", where(c.n));
    break;
  case Kind::Tensor:
    o.present = true;
    o.tensor = c.tensor(0);
    break;
  case Kind::Sequence:
    o.present = true;
    o.seq = c.seq(0);
    break;
  case Kind::Optional:
    fail("{}: input 0 ('{}') is an optional; ONNX has no optional of an optional", where(c.n),
         c.input(0));
  }
  c.im.optionals[c.output()] = std::move(o);
}

// OptionalHasElement: a bool constant. Opset 18 also takes a tensor or sequence (always an
// element) or no input (none).
void optionalHasElement(const Ctx &c) {
  const Kind k = c.kindOf(0);
  const bool has = k == Kind::Optional ? c.im.optionals.at(c.input(0)).present : k != Kind::Absent;
  c.setTensor(c.im.g.addConstantI64(c.output(), {}, {has ? 1 : 0}, graph::DType::Bool));
}

// OptionalGetElement, and Identity of a sequence or optional: the value itself (opset 18's
// OptionalGetElement also takes a tensor or a sequence).
void element(const Ctx &c) {
  switch (c.kindOf(0)) {
  case Kind::Tensor:
    c.setTensor(c.tensor(0));
    return;
  case Kind::Sequence:
    c.setSequence(c.seq(0));
    return;
  case Kind::Optional:
    break;
  case Kind::Absent:
    fail("{}: input 0 is missing", where(c.n));
  }
  const OptionalValue &o = c.im.optionals.at(c.input(0));
  if (c.n.kind == OpKind::Identity) {
    c.im.optionals[c.output()] = o;
    return;
  }
  if (!o.present)
    fail("{}: input '{}' is an empty optional (known at compile time), so there is no element "
         "to get",
         where(c.n), c.input(0));
  if (o.seq)
    c.setSequence(*o.seq);
  else
    c.setTensor(o.tensor);
}

void resolve(const Ctx &c) {
  switch (c.n.kind) {
  case OpKind::SequenceEmpty:
    return sequenceEmpty(c);
  case OpKind::SequenceConstruct:
    return sequenceConstruct(c);
  case OpKind::SequenceInsert:
    return sequenceInsert(c);
  case OpKind::SequenceErase:
    return sequenceErase(c);
  case OpKind::SequenceAt:
    return sequenceAt(c);
  case OpKind::SequenceLength:
    return c.setTensor(
        c.im.g.addConstantI64(c.output(), {}, {static_cast<int64_t>(c.seq(0).elems.size())}));
  case OpKind::ConcatFromSequence:
    return concatFromSequence(c);
  case OpKind::SplitToSequence:
    return splitToSequence(c);
  case OpKind::Optional:
    return optional(c);
  case OpKind::OptionalHasElement:
    return optionalHasElement(c);
  default: // OptionalGetElement, Identity
    return element(c);
  }
}

const char *typeKindName(const onnx::TypeProto &t) {
  switch (t.value_case()) {
  case onnx::TypeProto::kSequenceType:
    return "a sequence";
  case onnx::TypeProto::kOptionalType:
    return "an optional";
  case onnx::TypeProto::kMapType:
    return "a map";
  case onnx::TypeProto::kSparseTensorType:
    return "a sparse tensor";
  default:
    return "not a tensor";
  }
}

} // namespace

bool importSequenceNode(Importer &im, const onnx::NodeProto &p, int index) {
  if (!p.domain().empty() && p.domain() != "ai.onnx")
    return false;
  const std::optional<OpKind> kind = graph::opFromName(p.op_type());
  if (!kind)
    return false;
  const bool identity = *kind == OpKind::Identity && p.input_size() == 1 &&
                        (im.sequences.count(p.input(0)) || im.optionals.count(p.input(0)));
  if (!identity && !isSequenceOp(*kind))
    return false;
  Ctx c{im, p, {}};
  c.n.kind = *kind;
  c.n.name = p.name().empty() ? fmt::format("{}_{}", p.op_type(), index) : p.name();
  checkArity(im, c.n, p);
  if (p.output_size() != 1 || p.output(0).empty())
    fail("{}: the node must have one named output", where(c.n));
  for (int i = 0; i < p.input_size(); ++i)
    c.n.inputs.push_back(c.kindOf(static_cast<size_t>(i)) == Kind::Tensor
                             ? im.lookup(p.input(i), where(c.n))
                             : kNoValue);
  resolve(c);
  return true;
}

void checkTensorInterface(const onnx::GraphProto &g) {
  auto check = [](const onnx::ValueInfoProto &v, const char *what) {
    if (!v.has_type() || v.type().has_tensor_type())
      return;
    // ONNX's type printer throws std::invalid_argument on a type whose value (or an element
    // type's) is unset, as a damaged model can have (found by fuzz_Onnx).
    std::string spelled;
    try {
      spelled = *onnx::Utils::DataTypeUtils::ToType(v.type());
    } catch (const std::exception &) {
      spelled = "a type with no value set";
    }
    fail("{} '{}' is {} ({}); npuc feeds and writes tensors only, so sequences and optionals "
         "are supported inside the graph, not as its inputs or outputs",
         what, v.name(), typeKindName(v.type()), spelled);
  };
  for (const auto &in : g.input())
    check(in, "graph input");
  for (const auto &out : g.output())
    check(out, "graph output");
}

} // namespace npuc::frontend::detail
