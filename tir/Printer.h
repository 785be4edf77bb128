// Printer.h - deterministic, human-readable text of TIR (for dumps, `npuc inspect`, golden tests).
//
// Syntax: expressions in C-like infix with minimal parentheses (floordiv/floormod/min/max/select
// and intrinsics as calls, casts as `float32(x)`, loads as `A[i]`); statements one per line,
// indented two spaces per level: `for (i, 0, 4) {`, `parallel for (...)`, `if (c) {`,
// `A[i] = v`, `allocate T: float32[4, 8] @l1 {`, `attr key = v {`, `npu.ld(dst=..., n=...)`.
// Names are made unique in order of first appearance: a second, distinct variable or buffer
// called `i` prints as `i_1`. Float literals print the shortest round-trip form plus `f`.
#pragma once

#include "tir/IR.h"

#include <string>

namespace npuc::tir {

std::string toText(const Expr &e);
std::string toText(const Stmt &s);
std::string toText(const PrimFunc &f);

} // namespace npuc::tir
