// Simplify.h - local algebraic simplification of TIR.
//
// Bottom-up rewriting, no global reasoning: constant folding of every integer operator (and of
// float +,-,*,/,min,max and comparisons, rounded to the expression's type), identities x+0, x-0,
// x*1, x*0 (integers only: for floats x*0 is not 0 when x is inf/NaN), x/1, floordiv(x,1),
// floormod(x,1), x%1, nested constants (x+c1)+c2 and (x*c1)*c2 (constants moved right first),
// integer constants moved outward through + and - ((x+c)+y -> (x+y)+c, x-(y-c) -> (x-y)+c) and
// distributed over a constant factor ((x+c1)*c2 -> x*c2 + c1*c2),
// select/if on constant conditions, logic with constant operands, casts of constants.
// Statement simplification also drops loops with a constant extent <= 0 and flattens nested
// Seq; it never unrolls. Unchanged subtrees are returned as-is (pointer-equal).
#pragma once

#include "tir/IR.h"

namespace npuc::tir {

Expr simplify(const Expr &e);
Stmt simplify(const Stmt &s);

} // namespace npuc::tir
