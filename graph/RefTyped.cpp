// RefTyped.cpp - the reference's integer and bool semantics (RefInternal.h): which kernel
// evalNode runs for a node with integer inputs, the integer kernels of the ops whose results
// differ from fp32 arithmetic (wrap-around, truncating division, Mod's sign rule, exact
// comparisons beyond 2^24, BitShift), and Cast between every pair of dtypes.
//
// Integers are int64 in HostTensor::ints: arithmetic runs on uint64 (two's complement, so that
// overflow wraps instead of being undefined) and each result is wrapped to the output's dtype;
// uint64 values above 2^63 are bit patterns and compare and divide as unsigned.
#include "graph/RefInternal.h"
#include "graph/Reference.h"

#include "support/Error.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

namespace npuc::graph {

namespace ref {

namespace {

using U64 = uint64_t;

bool isCompare(OpKind k) {
  return k == OpKind::Equal || k == OpKind::Less || k == OpKind::Greater ||
         k == OpKind::LessOrEqual || k == OpKind::GreaterOrEqual;
}

// a < b in type t (uint64 compares its bit patterns as unsigned).
bool lessThan(DType t, int64_t a, int64_t b) {
  return t == DType::U64 ? U64(a) < U64(b) : a < b;
}

int64_t intPow(int64_t base, int64_t e) {
  if (e < 0) // 1 / base^|e| truncated: 0 unless |base| == 1 (0^-n is left to the fp32 rule)
    return base == 1 ? 1 : base == -1 ? (e % 2 ? -1 : 1) : 0;
  U64 r = 1, b = U64(base);
  for (; e > 0; e >>= 1, b *= b)
    if (e & 1)
      r *= b;
  return int64_t(r);
}

// One step of a binary integer op on operands of type t (the input type).
int64_t intBinary(const Node &n, DType t, int64_t a, int64_t b) {
  const bool u = t == DType::U64;
  switch (n.kind) {
  case OpKind::Add:
  case OpKind::Sum:
    return int64_t(U64(a) + U64(b));
  case OpKind::Sub:
    return int64_t(U64(a) - U64(b));
  case OpKind::Mul:
    return int64_t(U64(a) * U64(b));
  case OpKind::Div:
  case OpKind::Mod: {
    if (b == 0)
      fail("node '{}' ({}): integer division by zero", n.name, n.kind);
    if (!u && a == INT64_MIN && b == -1) // the one quotient that overflows: wraps to itself
      return n.kind == OpKind::Div ? a : 0;
    if (n.kind == OpKind::Div) // C++ division truncates toward zero, as ONNX's integer Div
      return u ? int64_t(U64(a) / U64(b)) : a / b;
    int64_t r = u ? int64_t(U64(a) % U64(b)) : a % b; // the dividend's sign (fmod=1)
    if (!u && n.attrInt("fmod", 0) == 0 && r != 0 && ((r < 0) != (b < 0)))
      r += b; // fmod=0: the divisor's sign, as numpy.mod
    return r;
  }
  case OpKind::Max:
    return lessThan(t, a, b) ? b : a;
  case OpKind::Min:
    return lessThan(t, b, a) ? b : a;
  case OpKind::Pow:
    return intPow(a, b);
  case OpKind::BitShift: {
    if (U64(b) >= 64)
      return 0;
    return n.attrString("direction", "") == "LEFT" ? int64_t(U64(a) << b) : int64_t(U64(a) >> b);
  }
  case OpKind::Equal:
    return a == b;
  case OpKind::Less:
    return lessThan(t, a, b);
  case OpKind::Greater:
    return lessThan(t, b, a);
  case OpKind::LessOrEqual:
    return !lessThan(t, b, a);
  case OpKind::GreaterOrEqual:
    return !lessThan(t, a, b);
  case OpKind::And:
    return a != 0 && b != 0;
  case OpKind::Or:
    return a != 0 || b != 0;
  case OpKind::Xor:
    return (a != 0) != (b != 0);
  default:
    break;
  }
  NPUC_ASSERT(false, fmt::format("no integer rule for {}", n.kind));
  return 0;
}

// Broadcasting n-ary integer ops fold left (variadic Max/Min/Sum); every step is wrapped to the
// operands' type, the result to the output's (bool for comparisons and logic).
RefResult refIntBroadcast(const RefArgs &a) {
  const Shape &os = a.outShape();
  const DType t = a.in(0).dtype;
  if (a.n.kind == OpKind::BitShift && t != DType::U8 && t != DType::U16 && t != DType::U32 &&
      t != DType::U64)
    fail("node '{}' (BitShift): input type {} is not an unsigned integer", a.n.name, dtypeName(t));
  std::vector<int64_t> acc(static_cast<size_t>(numElements(os)));
  Index st0 = broadcastStrides(a.in(0).shape, os);
  forEachBroadcast(os, {st0}, [&](int64_t o, const std::vector<int64_t> &off) {
    acc[size_t(o)] = a.in(0).ints[size_t(off[0])];
  });
  for (size_t k = 1; k < a.ins.size(); ++k) {
    const HostTensor &x = a.in(k);
    Index st = broadcastStrides(x.shape, os);
    forEachBroadcast(os, {st}, [&](int64_t o, const std::vector<int64_t> &off) {
      int64_t v = intBinary(a.n, t, acc[size_t(o)], x.intAt(off[0]));
      acc[size_t(o)] = isCompare(a.n.kind) ? v : wrapToType(t, v);
    });
  }
  HostTensor out(os, a.outType(), std::move(acc));
  for (int64_t &v : out.ints)
    v = wrapToType(out.dtype, v);
  return {out};
}

// Pow with an integer base: an integer exponent computes exactly, a float one in double and
// truncates (ONNX's result type is the base's).
RefResult refIntPow(const RefArgs &a) {
  if (a.in(1).isInt())
    return refIntBroadcast(a);
  const Shape &os = a.outShape();
  HostTensor out(os, a.outType());
  std::vector<Index> st{broadcastStrides(a.in(0).shape, os), broadcastStrides(a.in(1).shape, os)};
  forEachBroadcast(os, st, [&](int64_t o, const std::vector<int64_t> &off) {
    out.ints[size_t(o)] =
        floatToIntType(out.dtype, std::pow(a.in(0).valueAt(off[0]), a.in(1).valueAt(off[1])));
  });
  return {out};
}

// Neg, Abs, Sign, Not, Relu, Clip on integers.
RefResult refIntUnary(const RefArgs &a) {
  const HostTensor &x = a.in(0);
  const bool u = x.dtype == DType::U64;
  double lo = a.n.attrFloat("min", -HUGE_VAL), hi = a.n.attrFloat("max", HUGE_VAL);
  HostTensor out(a.outShape(), a.outType());
  for (size_t i = 0; i < x.ints.size(); ++i) {
    int64_t v = x.ints[i], r = v;
    switch (a.n.kind) {
    case OpKind::Neg:
      r = int64_t(U64(0) - U64(v));
      break;
    case OpKind::Abs:
      r = !u && v < 0 ? int64_t(U64(0) - U64(v)) : v;
      break;
    case OpKind::Sign:
      r = v == 0 ? 0 : (!u && v < 0 ? -1 : 1);
      break;
    case OpKind::Not:
      r = v == 0;
      break;
    case OpKind::Relu:
      r = !u && v < 0 ? 0 : v;
      break;
    case OpKind::Clip: // the bounds are integers of the input's type (ONNX's Clip on ints)
      if (static_cast<double>(v) < lo)
        r = static_cast<int64_t>(lo);
      else if (static_cast<double>(v) > hi)
        r = static_cast<int64_t>(hi);
      break;
    default:
      NPUC_ASSERT(false, fmt::format("no integer unary rule for {}", a.n.kind));
    }
    out.ints[i] = wrapToType(out.dtype, r);
  }
  return {out};
}

// ReduceSum/Prod/Max/Min/Mean/L1/SumSquare and ArgMax/ArgMin over integers.
RefResult refIntReduce(const RefArgs &a) {
  const HostTensor &x = a.in(0);
  const OpKind op = a.n.kind;
  const bool arg = op == OpKind::ArgMax || op == OpKind::ArgMin;
  const size_t r = x.shape.size();
  std::vector<bool> red(r, arg ? false : a.n.attrInts("axes").empty());
  if (arg)
    red[static_cast<size_t>(a.n.attrInt("axis", 0))] = true;
  else
    for (int64_t ax : a.n.attrInts("axes"))
      red[static_cast<size_t>(ax)] = true;
  Shape keep = x.shape;
  for (size_t d = 0; d < r; ++d)
    keep[d] = red[d] ? 1 : keep[d];
  Index kst = stridesOf(keep), xst = stridesOf(x.shape);
  const size_t outN = static_cast<size_t>(numElements(keep));
  std::vector<int64_t> acc(outN, op == OpKind::ReduceProd ? 1 : 0), best(outN), cnt(outN, 0);
  const bool last = a.n.attrInt("select_last_index", 0) != 0;
  for (int64_t i = 0; i < x.size(); ++i) {
    int64_t o = 0, pos = 0;
    for (size_t d = 0; d < r; ++d) {
      int64_t c = (i / xst[d]) % x.shape[d];
      o += red[d] ? 0 : c * kst[d];
      pos = red[d] ? c : pos;
    }
    const int64_t v = x.ints[size_t(i)];
    const size_t u = size_t(o);
    const bool first = cnt[u]++ == 0;
    if (arg) {
      bool better =
          op == OpKind::ArgMax ? lessThan(x.dtype, best[u], v) : lessThan(x.dtype, v, best[u]);
      bool tie = v == best[u];
      if (first || better || (last && tie)) {
        best[u] = v;
        acc[u] = pos;
      }
    } else if (op == OpKind::ReduceMax) {
      acc[u] = first || lessThan(x.dtype, acc[u], v) ? v : acc[u];
    } else if (op == OpKind::ReduceMin) {
      acc[u] = first || lessThan(x.dtype, v, acc[u]) ? v : acc[u];
    } else if (op == OpKind::ReduceProd) {
      acc[u] = int64_t(U64(acc[u]) * U64(v));
    } else if (op == OpKind::ReduceSumSquare) {
      acc[u] = int64_t(U64(acc[u]) + U64(v) * U64(v));
    } else if (op == OpKind::ReduceL1) {
      acc[u] = int64_t(U64(acc[u]) + U64(v < 0 && x.dtype != DType::U64 ? -v : v));
    } else {
      acc[u] = int64_t(U64(acc[u]) + U64(v)); // Sum, Mean
    }
  }
  if (op == OpKind::ReduceMean) // numpy's mean cast back to the integer type: truncated
    for (size_t u = 0; u < outN; ++u)
      acc[u] = acc[u] / cnt[u];
  HostTensor out(a.outShape(), a.outType(), std::move(acc));
  for (int64_t &v : out.ints)
    v = wrapToType(out.dtype, v);
  return {out};
}

// CumSum over integers (wrapping).
RefResult refIntCumSum(const RefArgs &a) {
  const HostTensor &x = a.in(0);
  auto axis = static_cast<size_t>(a.n.attrInt("axis", 0));
  int64_t len = x.shape[axis],
          inner = numElements(Shape(x.shape.begin() + int64_t(axis) + 1, x.shape.end()));
  int64_t outer = len ? x.size() / (len * inner) : 0;
  bool excl = a.n.attrInt("exclusive", 0) != 0, rev = a.n.attrInt("reverse", 0) != 0;
  HostTensor out(x.shape, x.dtype);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      U64 acc = 0;
      for (int64_t j = 0; j < len; ++j) {
        int64_t k = rev ? len - 1 - j : j;
        size_t at = size_t((o * len + k) * inner + i);
        if (!excl)
          acc += U64(x.ints[at]);
        out.ints[at] = wrapToType(x.dtype, int64_t(acc));
        if (excl)
          acc += U64(x.ints[at]);
      }
    }
  return {out};
}

// TopK over integers: values keep their type, indices are int64; ties keep the lower index.
RefResult refIntTopK(const RefArgs &a) {
  const HostTensor &x = a.in(0);
  const Shape &os = a.outShape();
  auto axis = static_cast<size_t>(a.n.attrInt("axis", -1));
  int64_t k = a.n.attrInt("k", 1), len = x.shape[axis];
  int64_t inner = numElements(Shape(x.shape.begin() + int64_t(axis) + 1, x.shape.end()));
  int64_t outer = len ? x.size() / (len * inner) : 0;
  bool largest = a.n.attrInt("largest", 1) != 0;
  HostTensor vals(os, x.dtype), idx(os, DType::I64);
  std::vector<int64_t> order(static_cast<size_t>(len));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t j) { return x.ints[size_t((o * len + j) * inner + i)]; };
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int64_t p, int64_t q) {
        return largest ? lessThan(x.dtype, at(q), at(p)) : lessThan(x.dtype, at(p), at(q));
      });
      for (int64_t j = 0; j < k; ++j) {
        size_t to = size_t((o * k + j) * inner + i);
        vals.ints[to] = at(order[size_t(j)]);
        idx.ints[to] = order[size_t(j)];
      }
    }
  return {vals, idx};
}

// Where(cond, x, y) for every dtype of x and y: cond is bool.
RefResult refWhere(const RefArgs &a) {
  const Shape &os = a.outShape();
  const HostTensor &c = a.in(0), &x = a.in(1), &y = a.in(2);
  NPUC_ASSERT(x.dtype == y.dtype && x.dtype == a.outType(), "Where's branches share its type");
  HostTensor out(os, x.dtype);
  std::vector<Index> st;
  for (size_t k = 0; k < 3; ++k)
    st.push_back(broadcastStrides(a.in(k).shape, os));
  forEachBroadcast(os, st, [&](int64_t o, const std::vector<int64_t> &off) {
    if (c.valueAt(off[0]) != 0)
      out.copyElement(o, x, off[1]);
    else
      out.copyElement(o, y, off[2]);
  });
  return {out};
}

} // namespace

RefResult refCast(const RefArgs &a) {
  return {castTensor(a.in(0), a.outType())};
}

RefResult refBitShift(const RefArgs &a) {
  if (!a.in(0).isInt() || !a.in(1).isInt())
    fail("node '{}' (BitShift): the inputs must be unsigned integers, not {} and {}", a.n.name,
         dtypeName(a.in(0).dtype), dtypeName(a.in(1).dtype));
  return refIntBroadcast(a);
}

RefKernel integerKernel(const Node &n, const std::vector<const HostTensor *> &ins) {
  if (n.kind == OpKind::Where)
    return refWhere;
  if (n.kind == OpKind::Cast)
    return refCast;
  // Every other integer rule applies when the data operands are integers (ONNX gives the
  // operands of these ops one type; Pow's exponent may differ).
  if (ins.empty() || !ins[0] || !ins[0]->isInt())
    return nullptr;
  switch (n.kind) {
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::Mul:
  case OpKind::Div:
  case OpKind::Max:
  case OpKind::Min:
  case OpKind::Sum:
  case OpKind::Mod:
  case OpKind::Equal:
  case OpKind::Less:
  case OpKind::Greater:
  case OpKind::LessOrEqual:
  case OpKind::GreaterOrEqual:
  case OpKind::And:
  case OpKind::Or:
  case OpKind::Xor:
    for (const HostTensor *t : ins)
      if (!t || !t->isInt())
        return nullptr; // mixed types: the fp32 rule
    return refIntBroadcast;
  case OpKind::Pow:
    return refIntPow;
  case OpKind::Neg:
  case OpKind::Abs:
  case OpKind::Sign:
  case OpKind::Not:
  case OpKind::Relu:
  case OpKind::Clip:
    return refIntUnary;
  case OpKind::ReduceSum:
  case OpKind::ReduceMax:
  case OpKind::ReduceMin:
  case OpKind::ReduceProd:
  case OpKind::ReduceMean:
  case OpKind::ReduceL1:
  case OpKind::ReduceSumSquare:
  case OpKind::ArgMax:
  case OpKind::ArgMin:
    return refIntReduce;
  case OpKind::CumSum:
    return refIntCumSum;
  case OpKind::TopK:
    return refIntTopK;
  default:
    return nullptr;
  }
}

bool readsTypedTensors(OpKind k) {
  switch (k) {
  case OpKind::Flatten:
  case OpKind::Reshape:
  case OpKind::Identity:
  case OpKind::Dropout:
  case OpKind::Unsqueeze:
  case OpKind::Squeeze:
  case OpKind::Transpose:
  case OpKind::Concat:
  case OpKind::Split:
  case OpKind::Pad:
  case OpKind::Slice:
  case OpKind::Expand:
  case OpKind::Tile:
  case OpKind::DepthToSpace:
  case OpKind::SpaceToDepth:
  case OpKind::Gather:
  case OpKind::GatherElements:
  case OpKind::Shape:
  case OpKind::Size:
  case OpKind::BitShift:
  case OpKind::ConvInteger:
  case OpKind::MatMulInteger:
    return true;
  default:
    return false;
  }
}

} // namespace ref

} // namespace npuc::graph
