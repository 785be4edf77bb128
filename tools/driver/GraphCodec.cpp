// GraphCodec.cpp - the graph part of a .npub package, plus the checked JSON reader it uses.
//
// A package must reproduce the compiled graph exactly (ids included), because fused groups,
// segments and DRAM tensors refer to values and nodes by id. Values, nodes and groups are
// therefore stored as arrays indexed by id, and every id read back is range-checked. Constant
// tensors go to the blob area as raw little-endian fp32/int64 data (no text round trip).
#include "tools/driver/PackageCodec.h"

#include "support/Error.h"
#include "support/HugePages.h"

#include <bit>
#include <cmath>
#include <cstring>

namespace npuc::driver::detail {

static_assert(std::endian::native == std::endian::little,
              "the .npub blob area stores host-order data; npuc targets little-endian hosts");

json BlobWriter::add(const void *data, size_t bytes) {
  json ref = {{"off", bytes_.size()}, {"len", bytes}};
  bytes_.append(static_cast<const char *>(data), bytes);
  return ref;
}

void JsonIn::bad(const std::string &why) const {
  fail("{}: corrupt npuc package: header field '{}': {}", origin_, path_, why);
}

JsonIn JsonIn::operator[](const char *key) const {
  if (!j_->is_object())
    bad("expected an object");
  auto it = j_->find(key);
  if (it == j_->end())
    fail("{}: corrupt npuc package: header field '{}{}{}' is missing", origin_, path_,
         path_.empty() ? "" : ".", key);
  return JsonIn(*it, origin_, path_.empty() ? key : path_ + "." + key, blobs_);
}

bool JsonIn::has(const char *key) const {
  return j_->is_object() && j_->contains(key);
}

size_t JsonIn::size() const {
  if (!j_->is_array())
    bad("expected an array");
  return j_->size();
}

JsonIn JsonIn::at(size_t i) const {
  if (i >= size())
    bad(fmt::format("index {} out of range", i));
  return JsonIn((*j_)[i], origin_, fmt::format("{}[{}]", path_, i), blobs_);
}

int64_t JsonIn::asInt() const {
  if (!j_->is_number_integer())
    bad("expected an integer");
  return j_->get<int64_t>();
}

int64_t JsonIn::asIntIn(int64_t lo, int64_t hi) const {
  int64_t v = asInt();
  if (v < lo || v > hi)
    bad(fmt::format("{} is outside [{}, {}]", v, lo, hi));
  return v;
}

double JsonIn::asDouble() const {
  // Non-finite doubles are stored as strings because JSON has no literal for them.
  if (j_->is_string()) {
    std::string s = j_->get<std::string>();
    if (s == "nan")
      return std::nan("");
    if (s == "inf")
      return HUGE_VAL;
    if (s == "-inf")
      return -HUGE_VAL;
    bad("expected a number");
  }
  if (!j_->is_number())
    bad("expected a number");
  return j_->get<double>();
}

bool JsonIn::asBool() const {
  if (!j_->is_boolean())
    bad("expected a boolean");
  return j_->get<bool>();
}

std::string JsonIn::asString() const {
  if (!j_->is_string())
    bad("expected a string");
  return j_->get<std::string>();
}

std::vector<int64_t> JsonIn::asInts() const {
  std::vector<int64_t> out;
  for (size_t i = 0; i < size(); ++i)
    out.push_back(at(i).asInt());
  return out;
}

Shape JsonIn::asShape() const {
  Shape s;
  for (size_t i = 0; i < size(); ++i)
    s.push_back(at(i).asIntIn(0, int64_t(1) << 40));
  return s;
}

std::vector<std::string> JsonIn::asStrings() const {
  std::vector<std::string> out;
  for (size_t i = 0; i < size(); ++i)
    out.push_back(at(i).asString());
  return out;
}

std::string_view JsonIn::blobView() const {
  int64_t off = (*this)["off"].asIntIn(0, INT64_MAX);
  int64_t len = (*this)["len"].asIntIn(0, INT64_MAX);
  if (uint64_t(off) > blobs_.size() || uint64_t(len) > blobs_.size() - uint64_t(off))
    bad(fmt::format("blob [{}, +{}) lies outside the {}-byte blob area", off, len, blobs_.size()));
  return blobs_.substr(size_t(off), size_t(len));
}

namespace {

json doubleToJson(double d) {
  if (std::isnan(d))
    return "nan";
  if (std::isinf(d))
    return d > 0 ? "inf" : "-inf";
  return d;
}

json attrToJson(const graph::AttrValue &a) {
  return std::visit(
      [](const auto &v) -> json {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int64_t>)
          return {{"int", v}};
        else if constexpr (std::is_same_v<T, double>)
          return {{"float", doubleToJson(v)}};
        else if constexpr (std::is_same_v<T, std::string>)
          return {{"string", v}};
        else if constexpr (std::is_same_v<T, std::vector<int64_t>>)
          return {{"ints", v}};
        else {
          json arr = json::array();
          for (double d : v)
            arr.push_back(doubleToJson(d));
          return {{"floats", arr}};
        }
      },
      a);
}

graph::AttrValue attrFromJson(const JsonIn &j) {
  if (j.has("int"))
    return j["int"].asInt();
  if (j.has("float"))
    return j["float"].asDouble();
  if (j.has("string"))
    return j["string"].asString();
  if (j.has("ints"))
    return j["ints"].asInts();
  if (j.has("floats")) {
    std::vector<double> v;
    JsonIn arr = j["floats"];
    for (size_t i = 0; i < arr.size(); ++i)
      v.push_back(arr.at(i).asDouble());
    return v;
  }
  j.bad("expected one of int/float/string/ints/floats");
}

const char *placementKey(graph::Placement p) {
  switch (p) {
  case graph::Placement::Unassigned:
    return "unassigned";
  case graph::Placement::Npu:
    return "npu";
  case graph::Placement::Cpu:
    return "cpu";
  }
  NPUC_ASSERT(false, "Placement has three enumerators");
}

template <typename T> std::shared_ptr<const std::vector<T>> blobAs(const JsonIn &j, int64_t n) {
  std::string_view b = j.blobView();
  if (b.size() != size_t(n) * sizeof(T))
    j.bad(fmt::format("holds {} bytes, the value's shape needs {}", b.size(), n * sizeof(T)));
  // The blob may sit at any alignment in the package; copied into an advised buffer (a package's
  // constants are most of its bytes, HugePages.h).
  auto v = std::make_shared<std::vector<T>>(reservedLarge<T>(size_t(n)));
  v->resize(size_t(n));
  if (!b.empty()) // an empty vector's data() may be null, which memcpy must not get
    std::memcpy(v->data(), b.data(), b.size());
  return v;
}

} // namespace

json graphToJson(const graph::Graph &g, BlobWriter &blobs) {
  // A constant nothing reads any more (a convolution's weights before batch-norm folding, a
  // folded subgraph's operands) keeps its value entry, so that ids stay put, but not its data:
  // it would be half of ResNet-50's package, read on every `npuc run`.
  const std::vector<std::vector<graph::NodeId>> uses = g.useLists();
  json values = json::array();
  for (size_t i = 0; i < g.values.size(); ++i) {
    const graph::Value &v = g.values[i];
    json jv = {{"name", v.name},
               {"shape", v.shape},
               {"dtype", graph::dtypeName(v.dtype)},
               {"producer", v.producer}};
    const bool read = !uses[i].empty() || g.isGraphOutput(graph::ValueId(i));
    if (v.f32 && read)
      jv["f32"] = blobs.addVector(*v.f32);
    if (v.i64 && read)
      jv["i64"] = blobs.addVector(*v.i64);
    values.push_back(std::move(jv));
  }
  json nodes = json::array();
  for (const graph::Node &n : g.nodes) {
    json attrs = json::object();
    for (const auto &[k, a] : n.attrs)
      attrs[k] = attrToJson(a);
    nodes.push_back({{"name", n.name},
                     {"op", graph::opName(n.kind)},
                     {"inputs", n.inputs},
                     {"outputs", n.outputs},
                     {"dead", n.dead},
                     {"attrs", attrs}});
  }
  json groups = json::array();
  for (const graph::FusedGroup &grp : g.groups)
    groups.push_back({{"id", grp.id},
                      {"name", grp.name},
                      {"nodes", grp.nodes},
                      {"anchor", grp.anchor},
                      {"inputs", grp.inputs},
                      {"outputs", grp.outputs},
                      {"placement", placementKey(grp.placement)},
                      {"cpu_reason", grp.cpuReason},
                      {"note", grp.note}});
  return {{"name", g.name},     {"values", values},     {"nodes", nodes},
          {"inputs", g.inputs}, {"outputs", g.outputs}, {"output_names", g.outputNames},
          {"groups", groups}};
}

graph::Graph graphFromJson(const JsonIn &j) {
  graph::Graph g;
  g.name = j["name"].asString();
  JsonIn values = j["values"], nodes = j["nodes"], groups = j["groups"];
  const int64_t nv = int64_t(values.size()), nn = int64_t(nodes.size());
  auto valueIds = [&](const JsonIn &arr, bool allowNone) {
    std::vector<graph::ValueId> ids;
    for (size_t i = 0; i < arr.size(); ++i)
      ids.push_back(int(arr.at(i).asIntIn(allowNone ? graph::kNoValue : 0, nv - 1)));
    return ids;
  };
  for (size_t i = 0; i < values.size(); ++i) {
    JsonIn jv = values.at(i);
    graph::Value v;
    v.id = int(i);
    v.name = jv["name"].asString();
    v.shape = jv["shape"].asShape();
    std::string dt = jv["dtype"].asString();
    std::optional<graph::DType> dtype = dtypeFromName(dt);
    if (!dtype)
      jv["dtype"].bad("unknown dtype '" + dt + "'");
    v.dtype = *dtype;
    v.producer = int(jv["producer"].asIntIn(-1, nn - 1));
    if (jv.has("f32"))
      v.f32 = blobAs<float>(jv["f32"], numElements(v.shape));
    if (jv.has("i64"))
      v.i64 = blobAs<int64_t>(jv["i64"], numElements(v.shape));
    g.values.push_back(std::move(v));
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    JsonIn jn = nodes.at(i);
    graph::Node n;
    n.id = int(i);
    n.name = jn["name"].asString();
    const std::string op = jn["op"].asString();
    std::optional<graph::OpKind> kind = graph::opFromName(op);
    if (!kind)
      jn["op"].bad(fmt::format("unknown operator '{}'", op));
    n.kind = *kind;
    n.inputs = valueIds(jn["inputs"], true);
    n.outputs = valueIds(jn["outputs"], false);
    n.dead = jn["dead"].asBool();
    JsonIn attrs = jn["attrs"];
    if (!attrs.raw().is_object())
      attrs.bad("expected an object");
    for (const auto &[k, a] : attrs.raw().items())
      n.attrs[k] = attrFromJson(attrs[k.c_str()]);
    g.nodes.push_back(std::move(n));
  }
  g.inputs = valueIds(j["inputs"], false);
  g.outputs = valueIds(j["outputs"], false);
  if (j.has("output_names")) { // packages written before outputs kept their names had none
    g.outputNames = j["output_names"].asStrings();
    if (!g.outputNames.empty() && g.outputNames.size() != g.outputs.size())
      j["output_names"].bad(fmt::format("expected {} names, one per output", g.outputs.size()));
  }
  for (size_t i = 0; i < groups.size(); ++i) {
    JsonIn jg = groups.at(i);
    graph::FusedGroup grp;
    grp.id = int(jg["id"].asIntIn(int64_t(i), int64_t(i))); // ids index the vector
    grp.name = jg["name"].asString();
    JsonIn gn = jg["nodes"];
    for (size_t k = 0; k < gn.size(); ++k)
      grp.nodes.push_back(int(gn.at(k).asIntIn(0, nn - 1)));
    grp.anchor = int(jg["anchor"].asIntIn(-1, nn - 1));
    grp.inputs = valueIds(jg["inputs"], false);
    grp.outputs = valueIds(jg["outputs"], false);
    std::string p = jg["placement"].asString();
    if (p == "npu")
      grp.placement = graph::Placement::Npu;
    else if (p == "cpu")
      grp.placement = graph::Placement::Cpu;
    else
      jg["placement"].bad("expected \"npu\" or \"cpu\", got '" + p + "'");
    grp.cpuReason = jg["cpu_reason"].asString();
    if (jg.has("note")) // packages written before retries had no note
      grp.note = jg["note"].asString();
    g.groups.push_back(std::move(grp));
  }
  return g;
}

} // namespace npuc::driver::detail
