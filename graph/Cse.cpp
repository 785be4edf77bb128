// Cse.cpp - common-subexpression elimination by structural hashing.
//
// Two constants are the same expression when their dtype, shape and contents are equal (hashed
// by value, then compared exactly, so a hash collision never merges different data). Two nodes
// are the same expression when they have the same op type, the same attributes (compared
// exactly: doubles by their bit pattern), the same number of outputs and the same inputs after
// the inputs themselves were canonicalised; the inputs of commutative ops are compared as a
// multiset. Nodes are visited in topological order, so a chain of duplicated nodes (a duplicated
// branch) collapses in one sweep. A duplicate whose output is a graph output is kept: replacing
// it would rename a model output. Every operator of the table
// is pure, so any node may merge.
#include "graph/Passes.h"

#include "support/Error.h"
#include "support/Hash.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

namespace npuc::graph {

namespace {

bool isCommutative(OpKind op) {
  return op == OpKind::Add || op == OpKind::Mul || op == OpKind::Max || op == OpKind::Min ||
         op == OpKind::Sum || op == OpKind::Mean || op == OpKind::And || op == OpKind::Or ||
         op == OpKind::Xor || op == OpKind::Equal;
}

std::string attrKey(const AttrValue &a) {
  std::string k;
  auto bits = [](double d) {
    uint64_t u;
    std::memcpy(&u, &d, sizeof u);
    return u;
  };
  if (const auto *i = std::get_if<int64_t>(&a))
    k = fmt::format("i{}", *i);
  else if (const auto *d = std::get_if<double>(&a))
    k = fmt::format("f{}", bits(*d));
  else if (const auto *s = std::get_if<std::string>(&a))
    k = fmt::format("s{}:{}", s->size(), *s);
  else if (const auto *iv = std::get_if<std::vector<int64_t>>(&a)) {
    k = "I";
    for (int64_t x : *iv)
      k += fmt::format("{},", x);
  } else {
    k = "F";
    for (double x : std::get<std::vector<double>>(a))
      k += fmt::format("{},", bits(x));
  }
  return k;
}

std::string nodeKey(const Node &n) {
  std::vector<ValueId> ins = n.inputs;
  if (isCommutative(n.kind))
    std::sort(ins.begin(), ins.end());
  std::string k = fmt::format("{}|{}|", n.kind, n.outputs.size());
  for (ValueId v : ins)
    k += fmt::format("{},", v);
  for (const auto &[name, a] : n.attrs) // std::map: attribute order is canonical
    k += fmt::format("|{}={}", name, attrKey(a));
  return k;
}

uint64_t constantHash(const Value &v) {
  std::string head = fmt::format("{}{}", dtypeName(v.dtype), shapeToString(v.shape));
  uint64_t h = fnv1a(head);
  if (v.f32)
    h ^= fnv1a({reinterpret_cast<const char *>(v.f32->data()), v.f32->size() * sizeof(float)}) * 31;
  if (v.i64)
    h ^= fnv1a({reinterpret_cast<const char *>(v.i64->data()), v.i64->size() * sizeof(int64_t)}) *
         37;
  return h;
}

bool sameConstant(const Value &a, const Value &b) {
  if (a.dtype != b.dtype || a.shape != b.shape || !a.f32 != !b.f32 || !a.i64 != !b.i64)
    return false;
  // Bitwise for floats: -0.0 and 0.0 (or two NaN payloads) are different constants.
  if (a.f32 && std::memcmp(a.f32->data(), b.f32->data(), a.f32->size() * sizeof(float)) != 0)
    return false;
  return !a.i64 || *a.i64 == *b.i64;
}

} // namespace

int eliminateCommonSubexpressions(Graph &g) {
  // canon[v]: the value that replaces v (itself when v is canonical).
  std::vector<ValueId> canon(g.values.size());
  for (size_t i = 0; i < canon.size(); ++i)
    canon[i] = static_cast<ValueId>(i);
  int merged = 0;

  // Constants: only those something reads (dead initializers are left alone) and that are not
  // graph outputs.
  std::vector<bool> used(g.values.size(), false);
  for (NodeId id : g.topoOrder())
    for (ValueId in : g.node(id).inputs)
      if (in != kNoValue)
        used[static_cast<size_t>(in)] = true;
  std::unordered_map<uint64_t, std::vector<ValueId>> constants;
  for (const Value &v : g.values) {
    if (!v.isConstant() || !used[static_cast<size_t>(v.id)] || g.isGraphOutput(v.id))
      continue;
    std::vector<ValueId> &bucket = constants[constantHash(v)];
    auto same = std::find_if(bucket.begin(), bucket.end(),
                             [&](ValueId o) { return sameConstant(g.value(o), v); });
    if (same == bucket.end()) {
      bucket.push_back(v.id);
    } else {
      canon[static_cast<size_t>(v.id)] = *same;
      ++merged;
    }
  }

  std::unordered_map<std::string, NodeId> seen;
  for (NodeId id : g.topoOrder()) {
    Node &n = g.node(id);
    for (ValueId &in : n.inputs)
      if (in != kNoValue)
        in = canon[static_cast<size_t>(in)];
    // Every operator of the table is pure (Ops.def); a random op would need a trait here.
    auto [it, fresh] = seen.try_emplace(nodeKey(n), id);
    if (fresh)
      continue;
    bool isOutput = false;
    for (ValueId o : n.outputs)
      isOutput = isOutput || g.isGraphOutput(o);
    if (isOutput)
      continue;
    const Node &keep = g.node(it->second);
    NPUC_ASSERT(keep.outputs.size() == n.outputs.size(), "the key includes the output count");
    for (size_t i = 0; i < n.outputs.size(); ++i)
      canon[static_cast<size_t>(n.outputs[i])] = keep.outputs[i];
    n.dead = true;
    for (ValueId o : n.outputs)
      g.value(o).producer = -1;
    ++merged;
  }
  // Graph outputs that are constants merged above keep their own value (skipped), and node
  // outputs that are graph outputs were never merged, so g.outputs needs no rewrite.
  g.removeDeadNodes();
  return merged;
}

} // namespace npuc::graph
