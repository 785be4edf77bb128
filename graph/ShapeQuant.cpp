// ShapeQuant.cpp - shape and type rules of ConvInteger and MatMulInteger: uint8/int8 operands,
// zero points of the operand's type (per tensor, or per output channel, row or column as ONNX
// allows), an int32 result of the Conv's or MatMul's shape.
#include "graph/Quant.h"
#include "graph/ShapeInternal.h"

#include <fmt/ranges.h>

namespace npuc::graph::shape {

namespace {

// A shape as ONNX writes it in messages: [2, 3, 4], [] for a scalar.
std::string dims(const Shape &s) {
  return fmt::format("[{}]", fmt::join(s, ", "));
}

const char *const kConvNames[] = {"x", "w", "x_zero_point", "w_zero_point"};
const char *const kMatMulNames[] = {"A", "B", "a_zero_point", "b_zero_point"};

bool present(const Node &n, size_t i) {
  return i < n.inputs.size() && n.inputs[i] != kNoValue;
}

// Operands are uint8 or int8 and each zero point has its operand's type.
void checkTypes(const Graph &g, const Node &n, const char *const names[4]) {
  for (size_t i = 0; i < 2; ++i) {
    DType t = inType(g, n, i);
    if (t != DType::U8 && t != DType::I8)
      fail("{}: input {} ({}) is {}; it must be uint8 or int8", where(n), i, names[i],
           dtypeName(t));
    if (present(n, i + 2) && inType(g, n, i + 2) != t)
      fail("{}: input {} ({}) is {} but input {} ({}) is {}; a zero point has its operand's type",
           where(n), i + 2, names[i + 2], dtypeName(inType(g, n, i + 2)), i, names[i],
           dtypeName(t));
  }
}

// A zero point of `n` whose normalised shape must broadcast to the operand's shape `operand`
// without growing it and be 1 along the reduction axis (`reduced` counted from the end: the
// last for a's rows, the second last for b's columns).
void checkZeroPoint(const Graph &g, const Node &n, size_t i, const char *name, const Shape &zp,
                    const Shape &operand, size_t reduced, const std::string &forms) {
  bool ok = zp.size() <= operand.size() && (zp.size() < reduced || zp[zp.size() - reduced] == 1);
  for (size_t k = 0; ok && k < zp.size(); ++k) {
    int64_t o = operand[operand.size() - zp.size() + k];
    ok = zp[k] == 1 || zp[k] == o;
  }
  if (!ok)
    fail("{}: input {} ({}) has shape {}; for an operand of shape {} it must be {}", where(n), i,
         name, dims(inShape(g, n, i)), dims(operand), forms);
}

} // namespace

OutTypes inferConvInteger(const Graph &g, Node &n) {
  checkTypes(g, n, kConvNames);
  Node conv = n; // Conv's rule without the zero points (Conv reads input 2 as its bias)
  conv.inputs.resize(2);
  Shape out = inferConv(g, conv).at(0).shape;
  const int64_t M = inShape(g, n, 1)[0];
  if (present(n, 2) && numElements(inShape(g, n, 2)) != 1)
    fail("{}: input 2 (x_zero_point) has shape {}; it must be a scalar (one zero point for the "
         "whole input)",
         where(n), dims(inShape(g, n, 2)));
  if (present(n, 3)) {
    const Shape &z = inShape(g, n, 3);
    if (numElements(z) != 1 && z != Shape{M})
      fail("{}: input 3 (w_zero_point) has shape {}; it must be a scalar or [{}] (one per output "
           "channel)",
           where(n), dims(z), M);
  }
  return {{out, DType::I32}};
}

OutTypes inferMatMulInteger(const Graph &g, Node &n) {
  checkTypes(g, n, kMatMulNames);
  Node mm = n;
  mm.inputs.resize(2);
  Shape out = inferMatMul(g, mm).at(0).shape;
  const Shape &a = inShape(g, n, 0), &b = inShape(g, n, 1);
  if (present(n, 2))
    checkZeroPoint(
        g, n, 2, "a_zero_point", matMulZeroPointShape(inShape(g, n, 2), true), a, 1,
        fmt::format("a scalar, [{}] (per row) or [..., {}, 1]", a[a.size() - 2], a[a.size() - 2]));
  if (present(n, 3))
    checkZeroPoint(g, n, 3, "b_zero_point", matMulZeroPointShape(inShape(g, n, 3), false), b, 2,
                   fmt::format("a scalar, [{}] (per column) or [..., 1, {}]", b.back(), b.back()));
  return {{out, DType::I32}};
}

} // namespace npuc::graph::shape
