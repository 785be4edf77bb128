// Ops.h - the operator set of the graph IR as data: one enumerator per ONNX operator with its
// name and classification, generated from graph/Ops.def (whose handler columns each library
// reads itself: shape inference, the reference executor, lowering/).
//
// Nodes carry an OpKind; the ONNX name exists only at the edges (import, messages, the package's
// graph, printers), so that comparing or classifying an operator is an integer compare or a table
// read rather than a string compare against lists repeated in every component.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string_view>

namespace npuc::graph {

enum class OpKind : uint8_t {
#define NPUC_OP(Kind, Name, Family, Pattern, Traits, Shape, Ref, Lower) Kind,
#include "graph/Ops.def"
};

/// The number of rows of Ops.def (OpKind values are 0 .. kNumOpKinds - 1).
constexpr int kNumOpKinds = 0
#define NPUC_OP(Kind, Name, Family, Pattern, Traits, Shape, Ref, Lower) +1
#include "graph/Ops.def"
    ;

/// Which set an operator came in with, which decides how the frontend normalises its attributes
/// (frontend/OnnxNode.cpp for Basic, OnnxExtAttrs.cpp for the rest). Its shape rule, reference
/// kernel and CPU lowering are the handler columns of its Ops.def row, not its family.
enum class OpFamily : uint8_t {
  Basic,        // the NPU-oriented core set
  ExtUnary,     // unary elementwise maps with ONNX semantics (Abs, Erf, LeakyRelu, Not, ...)
  ExtBroadcast, // broadcasting n-ary maps (Pow, Mod, Equal, And, PRelu, Sum, Where, ...)
  Reduce,       // Reduce* and ArgMax/ArgMin
  ExtOther,     // the rest of the extended set (normalisations, Slice, Resize, TopK, ...)
};

/// Operator classes for fusion, weakest first (TVM's OpPatternKind; see Fusion.cpp).
enum class OpPattern : uint8_t {
  ElemWise,
  Broadcast,
  Injective,
  CommReduce,
  OutEWiseFusable,
  Opaque
};
const char *opPatternName(OpPattern p);

/// Trait bits of an operator (the Traits column of Ops.def).
namespace optrait {
/// A pure elementwise/broadcast map of the core set, fusable after an anchor.
constexpr unsigned kElementwise = 1u << 0;
/// Only reinterprets the shape of its input (no data movement in row-major order).
constexpr unsigned kView = 1u << 1;
/// A layout op: a view or a Transpose, which a DRAM layout can absorb (npu/hw/DramLayout.h).
constexpr unsigned kLayout = 1u << 2;
/// Produces a bool tensor (comparisons, logic, IsNaN/IsInf).
constexpr unsigned kBoolResult = 1u << 3;
/// Resolved by the importer and never a graph node (Constant, Upsample -> Resize).
constexpr unsigned kImportOnly = 1u << 4;
} // namespace optrait

struct OpInfo {
  const char *name;
  OpFamily family;
  OpPattern pattern;
  unsigned traits;
};

/// The table row of `k`.
const OpInfo &opInfo(OpKind k);
/// The ONNX op type of `k`.
inline const char *opName(OpKind k) {
  return opInfo(k).name;
}
/// The operator named `name` (an ONNX op type), or nullopt when the table has no such row.
std::optional<OpKind> opFromName(std::string_view name);

/// Streams the ONNX name (gtest prints OpKind values through this).
std::ostream &operator<<(std::ostream &os, OpKind k);

inline bool hasTrait(OpKind k, unsigned trait) {
  return (opInfo(k).traits & trait) != 0;
}
/// Core elementwise/broadcast maps (Add, Sub, Mul, Div, Max, Min, Relu, Clip, Sigmoid, Tanh, Exp).
inline bool isElementwiseOp(OpKind k) {
  return hasTrait(k, optrait::kElementwise);
}
/// Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout.
inline bool isViewOp(OpKind k) {
  return hasTrait(k, optrait::kView);
}
/// Transpose, Reshape, Flatten, Squeeze, Unsqueeze, Identity.
inline bool isLayoutOp(OpKind k) {
  return hasTrait(k, optrait::kLayout);
}
inline bool isExtUnaryOp(OpKind k) {
  return opInfo(k).family == OpFamily::ExtUnary;
}
inline bool isExtBroadcastOp(OpKind k) {
  return opInfo(k).family == OpFamily::ExtBroadcast;
}
inline bool isReduceOp(OpKind k) {
  return opInfo(k).family == OpFamily::Reduce;
}

} // namespace npuc::graph

/// Formats an OpKind as its ONNX name, so that messages read as they did with string op types.
template <> struct fmt::formatter<npuc::graph::OpKind> : fmt::formatter<std::string_view> {
  template <typename Ctx> auto format(npuc::graph::OpKind k, Ctx &ctx) const {
    return fmt::formatter<std::string_view>::format(npuc::graph::opName(k), ctx);
  }
};
