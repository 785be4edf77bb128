// Graph.cpp - the graph IR's container operations: building values/nodes, attribute access,
// use lists, dead-code elimination and the deterministic topological order (Boost.Graph).
#include "graph/Graph.h"

#include "support/Error.h"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/topological_sort.hpp>
#include <iterator>
#include <set>

namespace npuc::graph {

namespace {

// ONNX TensorProto::DataType codes, indexed by DType.
constexpr int64_t kOnnxCode[] = {1, 7, 9, 11, 10, 3, 5, 6, 2, 4, 12, 13};
static_assert(std::size(kOnnxCode) == std::size(kAllDTypes), "one ONNX code per DType");

} // namespace

std::optional<DType> dtypeFromOnnx(int64_t code) {
  for (DType t : kAllDTypes)
    if (kOnnxCode[static_cast<size_t>(t)] == code)
      return t;
  return std::nullopt;
}

int64_t onnxDTypeCode(DType t) {
  return kOnnxCode[static_cast<size_t>(t)];
}

const char *placementName(Placement p) {
  switch (p) {
  case Placement::Unassigned:
    return "unassigned";
  case Placement::Npu:
    return "npu";
  case Placement::Cpu:
    return "cpu";
  }
  return "?";
}

int64_t Node::attrInt(const std::string &k, int64_t dflt) const {
  auto it = attrs.find(k);
  if (it == attrs.end())
    return dflt;
  if (auto *i = std::get_if<int64_t>(&it->second))
    return *i;
  if (auto *d = std::get_if<double>(&it->second))
    return static_cast<int64_t>(*d);
  fail("node '{}' ({}): attribute {} is not an integer", name, kind, k);
}

double Node::attrFloat(const std::string &k, double dflt) const {
  auto it = attrs.find(k);
  if (it == attrs.end())
    return dflt;
  if (auto *d = std::get_if<double>(&it->second))
    return *d;
  if (auto *i = std::get_if<int64_t>(&it->second))
    return static_cast<double>(*i);
  fail("node '{}' ({}): attribute {} is not a number", name, kind, k);
}

std::string Node::attrString(const std::string &k, const std::string &dflt) const {
  auto it = attrs.find(k);
  if (it == attrs.end())
    return dflt;
  if (auto *s = std::get_if<std::string>(&it->second))
    return *s;
  fail("node '{}' ({}): attribute {} is not a string", name, kind, k);
}

std::vector<int64_t> Node::attrInts(const std::string &k, std::vector<int64_t> dflt) const {
  auto it = attrs.find(k);
  if (it == attrs.end())
    return dflt;
  if (auto *v = std::get_if<std::vector<int64_t>>(&it->second))
    return *v;
  if (auto *i = std::get_if<int64_t>(&it->second))
    return {*i};
  fail("node '{}' ({}): attribute {} is not a list of integers", name, kind, k);
}

ValueId Graph::addValue(std::string name, Shape shape, DType dtype) {
  Value v;
  v.id = static_cast<ValueId>(values.size());
  v.name = std::move(name);
  v.shape = std::move(shape);
  v.dtype = dtype;
  values.push_back(std::move(v));
  return values.back().id;
}

ValueId Graph::addConstant(std::string name, Shape shape, std::vector<float> data, DType dtype) {
  NPUC_ASSERT(static_cast<int64_t>(data.size()) == numElements(shape),
              "constant data size must match its shape");
  NPUC_ASSERT(isFloatType(dtype), "float constants have a float type");
  ValueId id = addValue(std::move(name), std::move(shape), dtype);
  value(id).f32 = std::make_shared<const std::vector<float>>(std::move(data));
  return id;
}

ValueId Graph::addConstantI64(std::string name, Shape shape, std::vector<int64_t> data,
                              DType dtype) {
  NPUC_ASSERT(static_cast<int64_t>(data.size()) == numElements(shape),
              "constant data size must match its shape");
  NPUC_ASSERT(isIntStored(dtype), "integer constants have an integer or bool type");
  ValueId id = addValue(std::move(name), std::move(shape), dtype);
  value(id).i64 = std::make_shared<const std::vector<int64_t>>(std::move(data));
  return id;
}

NodeId Graph::addNode(OpKind kind, std::string name, std::vector<ValueId> ins,
                      std::vector<ValueId> outs) {
  Node n;
  n.id = static_cast<NodeId>(nodes.size());
  n.kind = kind;
  n.name = std::move(name);
  n.inputs = std::move(ins);
  n.outputs = std::move(outs);
  for (ValueId o : n.outputs) {
    NPUC_ASSERT(value(o).producer == -1 && !value(o).isConstant(),
                "a value has at most one producer and constants have none");
    value(o).producer = n.id;
  }
  nodes.push_back(std::move(n));
  return nodes.back().id;
}

std::optional<ValueId> Graph::findValue(const std::string &name) const {
  for (const Value &v : values)
    if (v.name == name)
      return v.id;
  return std::nullopt;
}

std::vector<NodeId> Graph::topoOrder() const {
  // Vertices are node ids (dead ones are isolated and dropped afterwards). Edges producer ->
  // consumer. Boost's topological_sort is a DFS that emits vertices in reverse finishing order;
  // visiting roots in *descending* id order and listing out-edges in descending consumer order
  // makes the reversed result prefer low (model-order) ids, so ties keep model order.
  using BGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;
  const int n = static_cast<int>(nodes.size());
  std::vector<std::set<int, std::greater<int>>> succ(static_cast<size_t>(n));
  for (const Node &nd : nodes) {
    if (nd.dead)
      continue;
    for (ValueId in : nd.inputs) {
      if (in == kNoValue)
        continue;
      NodeId p = value(in).producer;
      if (p >= 0 && !node(p).dead && p != nd.id)
        succ[static_cast<size_t>(p)].insert(nd.id);
    }
  }
  // topological_sort starts DFS at vertices in vertex order; reverse the vertex numbering so
  // that the DFS starts from the highest id (see above). If the model order is already
  // topological, the result is exactly the model order.
  BGraph rev(static_cast<size_t>(n));
  auto flip = [n](size_t x) { return static_cast<size_t>(n - 1) - x; };
  for (int u = n - 1; u >= 0; --u)
    for (int v : succ[static_cast<size_t>(u)])
      boost::add_edge(flip(static_cast<size_t>(u)), flip(static_cast<size_t>(v)), rev);
  std::vector<size_t> finish;
  try {
    boost::topological_sort(rev, std::back_inserter(finish));
  } catch (const boost::not_a_dag &) {
    fail("graph '{}': the graph has a cycle", name);
  }
  std::vector<NodeId> order;
  order.reserve(finish.size());
  for (auto it = finish.rbegin(); it != finish.rend(); ++it) {
    NodeId id = static_cast<NodeId>(flip(*it));
    if (!node(id).dead)
      order.push_back(id);
  }
  return order;
}

std::vector<NodeId> Graph::consumers(ValueId v) const {
  std::vector<NodeId> out;
  for (const Node &nd : nodes) {
    if (nd.dead)
      continue;
    if (std::find(nd.inputs.begin(), nd.inputs.end(), v) != nd.inputs.end())
      out.push_back(nd.id);
  }
  return out;
}

std::vector<std::vector<NodeId>> Graph::useLists() const {
  std::vector<std::vector<NodeId>> uses(values.size());
  for (const Node &nd : nodes) {
    if (nd.dead)
      continue;
    for (ValueId in : nd.inputs)
      if (in != kNoValue) {
        std::vector<NodeId> &u = uses[static_cast<size_t>(in)];
        if (u.empty() || u.back() != nd.id) // a node reading v twice is one consumer
          u.push_back(nd.id);
      }
  }
  return uses;
}

bool Graph::isGraphOutput(ValueId v) const {
  return std::find(outputs.begin(), outputs.end(), v) != outputs.end();
}

const std::string &Graph::outputName(size_t i) const {
  NPUC_ASSERT(i < outputs.size(), "an output index names a graph output");
  NPUC_ASSERT(outputNames.empty() || outputNames.size() == outputs.size(),
              "outputNames is empty or names every graph output");
  return outputNames.empty() ? value(outputs[i]).name : outputNames[i];
}

void Graph::replaceAllUses(ValueId from, ValueId to) {
  for (Node &nd : nodes) {
    if (nd.dead)
      continue;
    for (ValueId &in : nd.inputs)
      if (in == from)
        in = to;
  }
  if (!isGraphOutput(from))
    return;
  // The output's value changes, its name must not: `npuc ref` and the caller know it by the
  // name the model declares, whatever value computes it after the passes.
  if (outputNames.empty())
    for (ValueId o : outputs)
      outputNames.push_back(value(o).name);
  for (ValueId &o : outputs)
    if (o == from)
      o = to;
}

void Graph::removeDeadNodes() {
  // Iterate to a fixed point: killing a node can make its producers' outputs unused.
  bool changed = true;
  while (changed) {
    changed = false;
    std::vector<int> uses(values.size(), 0);
    for (const Node &nd : nodes)
      if (!nd.dead)
        for (ValueId in : nd.inputs)
          if (in != kNoValue)
            ++uses[static_cast<size_t>(in)];
    for (ValueId o : outputs)
      ++uses[static_cast<size_t>(o)];
    for (Node &nd : nodes) {
      if (nd.dead)
        continue;
      bool used = false;
      for (ValueId o : nd.outputs)
        used = used || uses[static_cast<size_t>(o)] > 0;
      if (!used) {
        nd.dead = true;
        for (ValueId o : nd.outputs)
          value(o).producer = -1;
        changed = true;
      }
    }
  }
}

} // namespace npuc::graph
