// RefInternal.h - index helpers shared by the reference kernel files (Ref*.cpp only).
#pragma once

#include "graph/Graph.h"
#include "support/Tensor.h"

#include <vector>

namespace npuc::graph {

namespace ref {

using Index = std::vector<int64_t>;

inline Index stridesOf(const Shape &s) {
  Index st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;)
    st[i - 1] = st[i] * s[i];
  return st;
}

/// Strides to read `in` as if broadcast to `out` (0 along broadcast axes).
inline Index broadcastStrides(const Shape &in, const Shape &out) {
  Index st = stridesOf(in), res(out.size(), 0);
  size_t off = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i)
    res[i + off] = in[i] == 1 ? 0 : st[i];
  return res;
}

/// Calls f(flatOut, offsets) for every element of `out`; offsets[k] = sum idx[d]*inStrides[k][d].
template <typename F>
void forEachBroadcast(const Shape &out, const std::vector<Index> &inStrides, F f) {
  int64_t total = numElements(out);
  Index idx(out.size(), 0);
  std::vector<int64_t> off(inStrides.size(), 0);
  for (int64_t flat = 0; flat < total; ++flat) {
    for (size_t k = 0; k < inStrides.size(); ++k) {
      off[k] = 0;
      for (size_t d = 0; d < out.size(); ++d)
        off[k] += idx[d] * inStrides[k][d];
    }
    f(flat, off);
    for (size_t d = out.size(); d-- > 0;) {
      if (++idx[d] < out[d])
        break;
      idx[d] = 0;
    }
  }
}

/// The multi-index of flat position i in `shape`.
inline Index unflatten(int64_t i, const Shape &shape) {
  Index idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] ? i % shape[d] : 0;
    i = shape[d] ? i / shape[d] : 0;
  }
  return idx;
}

inline int64_t flatten(const Index &idx, const Shape &shape) {
  int64_t o = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    o = o * shape[d] + idx[d];
  return o;
}

} // namespace ref

/// RefMath.cpp / RefData.cpp halves of evalExtNode.
bool evalExtMath(const Graph &g, const Node &n, const std::vector<const HostTensor *> &ins,
                 std::vector<HostTensor> &outs);
bool evalExtData(const Graph &g, const Node &n, const std::vector<const HostTensor *> &ins,
                 std::vector<HostTensor> &outs);

} // namespace npuc::graph
