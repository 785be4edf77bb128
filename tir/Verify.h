// Verify.h - well-formedness checks of a PrimFunc.
//
// Checks: every variable is bound by an enclosing For before it is used; each For binds a
// distinct variable (a Var node bound by two loops is an error, even in sibling nests, because
// later passes key maps by variable); every buffer that is loaded or stored is a parameter or is
// Allocate'd by an enclosing statement; parameters are distinct and no buffer is allocated
// twice. Passes run verify() after transforming; tests inspect verifyErrors().
#pragma once

#include "tir/IR.h"

#include <string>
#include <vector>

namespace npuc::tir {

/// Human-readable problems, in traversal order; empty when the function is well formed.
std::vector<std::string> verifyErrors(const PrimFunc &f);
/// NPUC_ASSERT that verifyErrors(f) is empty (a malformed function is a compiler bug).
void verify(const PrimFunc &f);

} // namespace npuc::tir
