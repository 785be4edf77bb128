// DramLayout.cpp - the NPU's DRAM layout decision and stride propagation through layout ops
// (see DramLayout.h).
#include "npu/hw/DramLayout.h"

#include "graph/Passes.h"
#include "support/Error.h"

#include <algorithm>
#include <fmt/format.h>
#include <numeric>

namespace npuc::npu {

std::string DramLayout::name() const {
  if (order.empty())
    return "row_major";
  if (*this == NHWC)
    return "nhwc";
  std::string s;
  for (int d : order) {
    if (!s.empty())
      s += ',';
    s += std::to_string(d);
  }
  return s;
}

std::optional<DramLayout> DramLayout::parse(const std::string &s) {
  if (s == "row_major")
    return RowMajor;
  if (s == "nhwc")
    return NHWC;
  DramLayout l;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t end = s.find(',', pos);
    std::string part = s.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    if (part.empty() || part.size() > 2 || !std::all_of(part.begin(), part.end(), ::isdigit))
      return std::nullopt;
    l.order.push_back(std::stoi(part));
    pos = end == std::string::npos ? s.size() : end + 1;
  }
  std::vector<int> sorted = l.order;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i)
    if (sorted[i] != static_cast<int>(i))
      return std::nullopt; // not a permutation
  if (l.order.empty())
    return std::nullopt;
  return l;
}

DramLayout dramLayoutOf(const graph::Value &v) {
  return v.shape.size() == 4 ? DramLayout::NHWC : DramLayout::RowMajor;
}

std::vector<int64_t> layoutStrides(const Shape &shape, const DramLayout &layout) {
  const size_t r = shape.size();
  std::vector<int> order = layout.order;
  if (order.size() != r) {
    order.resize(r);
    std::iota(order.begin(), order.end(), 0);
  }
  std::vector<int64_t> st(r, 0);
  std::vector<bool> seen(r, false);
  int64_t s = 1;
  for (size_t i = r; i-- > 0;) {
    const int d = order[i];
    NPUC_ASSERT(d >= 0 && static_cast<size_t>(d) < r && !seen[static_cast<size_t>(d)],
                "a DRAM layout's order is a permutation of the tensor's dims");
    seen[static_cast<size_t>(d)] = true;
    st[static_cast<size_t>(d)] = s;
    s *= shape[static_cast<size_t>(d)];
  }
  return st;
}

std::optional<std::vector<int64_t>>
reshapeStrides(const Shape &from, const std::vector<int64_t> &st, const Shape &to) {
  NPUC_ASSERT(numElements(from) == numElements(to), "a reshape keeps the element count");
  std::vector<size_t> in, out; // the non-unit dims
  for (size_t i = 0; i < from.size(); ++i)
    if (from[i] != 1)
      in.push_back(i);
  for (size_t j = 0; j < to.size(); ++j)
    if (to[j] != 1)
      out.push_back(j);
  std::vector<int64_t> res(to.size(), 0);
  size_t i = 0, j = 0;
  // Pair runs of input dims with runs of output dims of the same element count: each input run
  // must be one contiguous block in memory, which the output run then splits.
  while (i < in.size() && j < out.size()) {
    const size_t i0 = i, j0 = j;
    int64_t ni = from[in[i]], nj = to[out[j]];
    while (ni != nj) {
      if (ni < nj)
        ni *= from[in[++i]];
      else
        nj *= to[out[++j]];
    }
    for (size_t k = i0; k < i; ++k)
      if (st[in[k]] != st[in[k + 1]] * from[in[k + 1]])
        return std::nullopt;
    res[out[j]] = st[in[i]];
    for (size_t k = j; k > j0; --k)
      res[out[k - 1]] = res[out[k]] * to[out[k]];
    ++i;
    ++j;
  }
  NPUC_ASSERT(i == in.size() && j == out.size(), "equal element counts pair every non-unit dim");
  return res;
}

std::optional<DramLayout> layoutWithStrides(const Shape &s, const std::vector<int64_t> &st) {
  auto matches = [&](const DramLayout &l) {
    const std::vector<int64_t> want = layoutStrides(s, l);
    for (size_t i = 0; i < s.size(); ++i)
      if (s[i] != 1 && st[i] != want[i])
        return false;
    return true;
  };
  // The usual layouts first, so that unit dims do not make an equivalent order of their own.
  if (matches(DramLayout::RowMajor))
    return DramLayout::RowMajor;
  if (s.size() == 4 && matches(DramLayout::NHWC))
    return DramLayout::NHWC;
  std::vector<int> order(s.size());
  std::iota(order.begin(), order.end(), 0);
  // Unit dims first (their stride is arbitrary), then by decreasing stride.
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const bool ua = s[static_cast<size_t>(a)] == 1, ub = s[static_cast<size_t>(b)] == 1;
    if (ua != ub)
      return ua;
    return !ua && st[static_cast<size_t>(a)] > st[static_cast<size_t>(b)];
  });
  const DramLayout l{order};
  if (!matches(l))
    return std::nullopt;
  return l;
}

namespace {

// The element strides of the chain's input that make it read as its output stored with strides
// `st`: the chain run backwards (a Transpose's inverse permutation, a reshape the other way).
std::optional<std::vector<int64_t>> backwards(const graph::Graph &g, const graph::FusedGroup &grp,
                                              std::vector<int64_t> st) {
  for (size_t k = grp.nodes.size(); k-- > 0;) {
    const graph::Node &n = g.node(grp.nodes[k]);
    const Shape &from = g.value(n.inputs[0]).shape, &to = g.value(n.outputs[0]).shape;
    if (n.kind == graph::OpKind::Transpose) {
      std::vector<int64_t> perm = n.attrInts("perm", {});
      if (perm.empty())
        for (size_t i = from.size(); i-- > 0;)
          perm.push_back(static_cast<int64_t>(i));
      std::vector<int64_t> in(from.size(), 0);
      for (size_t i = 0; i < perm.size(); ++i)
        in[static_cast<size_t>(perm[i])] = st[i];
      st = std::move(in);
    } else if (auto r = reshapeStrides(to, st, from)) {
      st = std::move(*r);
    } else {
      return std::nullopt;
    }
  }
  return st;
}

std::string list(const std::vector<int64_t> &v) {
  std::string s;
  for (int64_t x : v) {
    if (!s.empty())
      s += ',';
    s += std::to_string(x);
  }
  return "[" + s + "]";
}

} // namespace

LayoutChain analyzeLayoutChain(const graph::Graph &g, const graph::FusedGroup &grp) {
  LayoutChain c;
  for (graph::NodeId id : grp.nodes) {
    const graph::Node &n = g.node(id);
    if (!graph::isLayoutOp(n.kind) || n.inputs.empty() || n.outputs.size() != 1)
      return c;
  }
  if (grp.nodes.empty() || !graph::isNodeChain(g, grp))
    return c;
  for (size_t k = 1; k < grp.nodes.size(); ++k) // the chain runs through the data input
    if (g.node(grp.nodes[k]).inputs[0] != g.node(grp.nodes[k - 1]).outputs[0])
      return c;
  c.layoutOnly = true;
  c.ops = static_cast<int>(grp.nodes.size());
  c.input = g.node(grp.nodes.front()).inputs[0];
  c.output = g.node(grp.nodes.back()).outputs[0];
  Shape shape = g.value(c.input).shape;
  std::vector<int64_t> st = layoutStrides(shape, dramLayoutOf(g.value(c.input)));
  for (graph::NodeId id : grp.nodes) {
    const graph::Node &n = g.node(id);
    const Shape &to = g.value(n.outputs[0]).shape;
    if (n.kind == graph::OpKind::Transpose) {
      std::vector<int64_t> perm = n.attrInts("perm", {});
      if (perm.empty()) // ONNX default: reverse the axes
        for (size_t i = shape.size(); i-- > 0;)
          perm.push_back(static_cast<int64_t>(i));
      NPUC_ASSERT(perm.size() == shape.size(), "shape inference checked Transpose's perm");
      std::vector<int64_t> pst(perm.size());
      for (size_t i = 0; i < perm.size(); ++i)
        pst[i] = st.at(static_cast<size_t>(perm[i]));
      st = std::move(pst);
    } else if (auto r = reshapeStrides(shape, st, to)) {
      st = std::move(*r);
    } else {
      c.describe = fmt::format("transform runs (one copy): {} ({}) merges dims that are not "
                               "contiguous in the DRAM layout (shape {}, strides {})",
                               n.name, n.kind, shapeToString(shape), list(st));
      st.clear();
      break;
    }
    shape = to;
  }
  const DramLayout outLayout = dramLayoutOf(g.value(c.output));
  std::vector<int64_t> want = layoutStrides(g.value(c.output).shape, outLayout);
  if (auto in = backwards(g, grp, want))
    c.inputAs = layoutWithStrides(g.value(c.input).shape, *in);
  if (st.empty())
    return c;
  c.outputAs = layoutWithStrides(shape, st);
  c.cancels = true;
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] != 1 && st[i] != want[i])
      c.cancels = false;
  if (c.cancels) {
    c.describe = "transforms cancel (zero-copy view)";
    c.outputAs = c.inputAs = std::nullopt;
  } else
    c.describe = fmt::format("transform runs (one copy): the output {} reads its input at "
                             "element strides {}, its {} layout has {}",
                             shapeToString(shape), list(st), outLayout.name(), list(want));
  return c;
}

} // namespace npuc::npu
