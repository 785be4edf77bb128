// DataOps.cpp - the scatter reduction and Einsum's equation parser (DataOps.h).
#include "graph/DataOps.h"

#include "support/Error.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <string>

namespace npuc::graph {

ScatterReduction scatterReduction(const Node &n) {
  std::string r = n.attrString("reduction", "none");
  if (r == "none")
    return ScatterReduction::None;
  if (r == "add")
    return ScatterReduction::Add;
  if (r == "mul")
    return ScatterReduction::Mul;
  if (r == "max")
    return ScatterReduction::Max;
  if (r == "min")
    return ScatterReduction::Min;
  fail("node '{}' ({}): attribute reduction={} not supported (none, add, mul, max, min)", n.name,
       n.kind, r);
}

std::vector<int> EinsumSpec::summed() const {
  std::vector<int> s;
  for (int l = 0; l < static_cast<int>(extents.size()); ++l)
    if (std::find(output.begin(), output.end(), l) == output.end())
      s.push_back(l);
  return s;
}

namespace {

// One operand's subscripts: its letters, with -1 where the ellipsis stands.
std::vector<int> terms(const Node &n, const std::string &s) {
  std::vector<int> t;
  bool ellipsis = false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s.compare(i, 3, "...") == 0) {
      if (ellipsis)
        fail("node '{}' (Einsum): equation operand '{}' has two ellipses", n.name, s);
      ellipsis = true;
      t.push_back(-1);
      i += 2;
    } else if (std::isalpha(static_cast<unsigned char>(s[i]))) {
      t.push_back(static_cast<unsigned char>(s[i]));
    } else {
      fail("node '{}' (Einsum): equation operand '{}' has character '{}' (letters and '...' only)",
           n.name, s, s[i]);
    }
  }
  return t;
}

std::vector<std::string> splitOn(const std::string &s, char sep) {
  std::vector<std::string> parts{""};
  for (char ch : s) {
    if (ch == sep)
      parts.emplace_back();
    else
      parts.back().push_back(ch);
  }
  return parts;
}

} // namespace

EinsumSpec parseEinsum(const Node &n, const std::vector<Shape> &ins) {
  std::string eq = n.attrString("equation", "");
  size_t arrow = eq.find("->");
  std::vector<std::string> ops = splitOn(eq.substr(0, arrow), ',');
  if (ops.size() != ins.size())
    fail("node '{}' (Einsum): equation '{}' names {} operands for {} inputs", n.name, eq,
         ops.size(), ins.size());
  std::vector<std::vector<int>> t;
  size_t ell = 0; // the dimensions the ellipsis covers (the most over the inputs)
  for (size_t k = 0; k < ops.size(); ++k) {
    t.push_back(terms(n, ops[k]));
    size_t letters =
        static_cast<size_t>(std::count_if(t[k].begin(), t[k].end(), [](int c) { return c >= 0; }));
    bool hasEll = letters != t[k].size();
    if (ins[k].size() < letters || (!hasEll && ins[k].size() != letters))
      fail("node '{}' (Einsum): operand {} '{}' has {} subscripts for rank {}", n.name, k, ops[k],
           letters, ins[k].size());
    if (hasEll)
      ell = std::max(ell, ins[k].size() - letters);
  }
  std::map<int, int> label; // letter -> label id
  EinsumSpec spec;
  std::map<int, int> count;
  for (const auto &tk : t)
    for (int c : tk)
      if (c >= 0 && !label.count(c)) {
        label[c] = static_cast<int>(spec.extents.size());
        spec.extents.push_back(-1);
      }
  const int ellBase = static_cast<int>(spec.extents.size());
  spec.extents.resize(spec.extents.size() + ell, 1);
  bool anyEll = false;
  for (size_t k = 0; k < t.size(); ++k) {
    std::vector<int> dims;
    size_t letters =
        static_cast<size_t>(std::count_if(t[k].begin(), t[k].end(), [](int c) { return c >= 0; }));
    size_t covered = ins[k].size() - letters;
    for (int c : t[k]) {
      if (c >= 0) {
        dims.push_back(label[c]);
        ++count[c];
        continue;
      }
      anyEll = true;
      for (size_t e = ell - covered; e < ell; ++e)
        dims.push_back(ellBase + static_cast<int>(e));
    }
    for (size_t d = 0; d < dims.size(); ++d) {
      int64_t &ext = spec.extents[static_cast<size_t>(dims[d])];
      int64_t x = ins[k][d];
      bool isEll = dims[d] >= ellBase;
      if (ext == -1 || (isEll && ext == 1))
        ext = x;
      else if (x != ext && !(isEll && x == 1))
        fail("node '{}' (Einsum): subscript {} of operand {} has extent {} but {} elsewhere",
             n.name, d, k, x, ext);
    }
    spec.inputs.push_back(dims);
  }
  if (arrow == std::string::npos) {
    if (anyEll)
      for (size_t e = 0; e < ell; ++e)
        spec.output.push_back(ellBase + static_cast<int>(e));
    for (const auto &[c, num] : count) // std::map: ascending character order
      if (num == 1)
        spec.output.push_back(label[c]);
    return spec;
  }
  for (int c : terms(n, eq.substr(arrow + 2))) {
    if (c < 0) {
      for (size_t e = 0; e < ell; ++e)
        spec.output.push_back(ellBase + static_cast<int>(e));
      continue;
    }
    if (!label.count(c))
      fail("node '{}' (Einsum): output subscript '{}' appears in no input", n.name,
           static_cast<char>(c));
    if (std::find(spec.output.begin(), spec.output.end(), label[c]) != spec.output.end())
      fail("node '{}' (Einsum): output subscript '{}' is repeated", n.name, static_cast<char>(c));
    spec.output.push_back(label[c]);
  }
  return spec;
}

} // namespace npuc::graph
