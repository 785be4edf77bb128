// InstrMatch.h - loop-nest analysis for instruction emission: perfect nests, affine accesses and
// the operation a store computes.
//
// Instruction emission (transform/EmitNpu.h) and PreProcess (transform/PreProcess.h) look at a
// store at the bottom of a perfect loop nest and ask two questions: how does every buffer access
// move with each loop variable (an affine index base + sum(stride_l * var_l)), and which unit
// operation does the stored value compute. Both are answered here, without reference to a
// target; the target's instruction forms and constraints are checked by the emitter.
#pragma once

#include "tir/IR.h"

#include <cstdint>
#include <string>
#include <vector>

namespace npuc::tir {

/// One loop of a perfect nest (outermost first), with constant bounds when `constant`.
struct NestLoop {
  Var var;
  int64_t min = 0, extent = 0;
  bool constant = false;
};

/// A perfect nest: `loops` (outermost first) whose innermost body is `store`.
struct PerfectNest {
  std::vector<NestLoop> loops;
  const StoreNode *store = nullptr;
};

/// Follows For -> For -> ... -> Store from `s`; false when the chain ends elsewhere (a sequence,
/// an if, an allocation, an NPU op). A bare Store is a nest of no loops.
bool perfectNest(const Stmt &s, PerfectNest &out);

/// buffer[index] with index == base + sum(strides[l] * loops[l].var) over the nest's loops, the
/// base being the index at every loop's minimum (so an access over a loop from 1 is based there).
struct Access {
  Buffer buffer;
  Expr base;                    // free of the analysed loops' variables
  std::vector<int64_t> strides; // per loop of the nest, outermost first
};

/// Fails when the index is not affine in the loop variables with constant strides, or when a
/// loop the access depends on has non-constant bounds.
bool affineAccess(const Buffer &b, const Expr &index, const std::vector<NestLoop> &loops,
                  Access &out);

/// The operation a stored value computes, in the vocabulary of the target description's units:
/// `op` is a vector op name (copy add sub mul div max min relu clip muladd exp tanh sqrt
/// sigmoid ...), "fill" (a constant), or "matmul" (dst + a * b accumulated into the store's own
/// element). Operands are the loads the unit reads (a float cast around a load is the unit's
/// dtype conversion and is looked through); imm0/imm1 are the op's immediates (clip bounds,
/// muladd scale and shift) or the fill value.
struct OpMatch {
  std::string op;
  std::vector<Expr> srcs; // Load expressions, in operand order
  double imm0 = 0, imm1 = 0;
};

/// Every single-operation reading of `value` stored to dst[dstIndex] (e.g. max(x, 0) is both
/// `relu` and `clip` with imm1 = +inf; x * 2 is `muladd` 2, 0; x / 4 is `muladd` 0.25, 0 - a
/// division only by a power of two, the one case where the reciprocal's product is exact). Empty when the value is not one
/// unit operation over loads and constants.
std::vector<OpMatch> matchOps(const Expr &value, const Buffer &dst, const Expr &dstIndex);

/// select(a > b, a, b) as max(a, b) and the other orderings as max/min (equal for every non-NaN
/// value, which is how the lowering writes Relu); any other expression unchanged.
Expr selectAsMinMax(const Expr &e);

/// The expression with float casts around it removed (the vector unit converts on load and
/// rounds on store), e.g. float32(A[i]) -> A[i].
Expr stripFloatCast(const Expr &e);

} // namespace npuc::tir
