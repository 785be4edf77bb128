// Eval.h - evaluation of integer TIR expressions with bound variables.
//
// Used by backends to compute concrete trip counts, addresses and instruction fields once the
// loop variables have values, and by tests as an independent oracle. Arithmetic follows each
// expression's type as foldIntBinary defines it, with C semantics for Div/Mod and floor semantics
// for FloorDiv/FloorMod; comparisons and logic yield 0/1. Unbound variables, float operands,
// loads and calls are compiler bugs (NPUC_ASSERT), as are a division by zero and an int32/int64
// overflow: the backends evaluate the compiler's own index arithmetic, which must not overflow.
//
// Integer overflow, per type (Halide's rules): unsigned types wrap modulo 2^bits, and so do int8
// and int16 (C computes them in int and converts back); int32 and int64 overflow is undefined,
// so a fold that would overflow is not done (the simplifier keeps the expression as written, so
// a transformation never invents a value the program does not have). Casts between integer types
// wrap to the destination's width. An IntImm holds a value of its type's range: sign-extended
// for signed types, zero-extended for unsigned ones below 64 bits, the bit pattern for uint64.
#pragma once

#include "tir/IR.h"

#include <cstdint>
#include <unordered_map>

namespace npuc::tir {

/// env maps VarNode pointers (Var::node() or Expr::get()) to values.
int64_t evalInt(const Expr &e, const std::unordered_map<const void *, int64_t> &env);
inline int64_t evalInt(const Expr &e) {
  return evalInt(e, {});
}

/// Floor division and modulo of integers (Python semantics), b != 0.
int64_t floorDivInt(int64_t a, int64_t b);
int64_t floorModInt(int64_t a, int64_t b);

/// Folds binary kind k over integer constants of operand type t (comparisons yield 0/1, uint64
/// compares and divides unsigned); false when the result is undefined: a division by zero, or
/// int32/int64 overflow.
bool foldIntBinary(NodeKind k, int64_t a, int64_t b, DataType t, int64_t &out);

/// v converted to integer type t: truncated to t's width, sign- or zero-extended (bool: v != 0).
int64_t wrapInt(int64_t v, DataType t);

} // namespace npuc::tir
