// Parser.h - reads back the text tir::toText prints (see Printer.h for the syntax).
//
// The parser accepts exactly the printer's language plus `//` line comments (so lit test files
// can carry RUN/CHECK lines), and reports the first problem as npuc::Error
// "FILE:LINE:COL: error: ..." naming the offending token. What the text does not carry is
// defaulted: variables are int64 (every loop and index variable TIR builds is), and an
// intrinsic call has the type of its first argument (float32 when it has none). A name denotes
// one variable or buffer for the whole text, because the printer makes names unique; a printed
// text therefore reads back into a tree structurally equal to the original (Equal.h), and
// printing that tree gives the same text again.
//
// Text nested deeper than kMaxTextDepth levels is an error at the token that goes past it, as
// clang has -fbracket-depth: the verifier, the printer and every pass recurse over the tree, so
// the parser bounds its depth instead of letting a hostile or generated text exhaust the stack.
// Each statement body ({ ... } of a loop, if, allocation or attribute), bracket, call, '!' and
// binary operator is one level; a chain a + b + ... + z is a tree one level deeper per operator.
// A buffer whose element count does not fit in int64 is an error too.
#pragma once

#include "tir/IR.h"

#include <string>
#include <vector>

namespace npuc::tir {

/// The deepest nesting TIR text may have (see above). The compiler's own nests are a few dozen
/// levels deep; the passes recurse one or a few frames per level, so even a sanitizer build's
/// frames stay far within a thread's default stack.
constexpr int kMaxTextDepth = 256;

/// Where text comes from, for messages; firstLine numbers the text's first line (a chunk of a
/// split file keeps the line numbers of the whole file).
struct SourceLoc {
  std::string file = "<input>";
  int firstLine = 1;
};

/// One or more `func NAME(PARAMS) { ... }` definitions.
std::vector<PrimFunc> parseFuncs(const std::string &text, const SourceLoc &loc = {});
/// Exactly one function.
PrimFunc parseFunc(const std::string &text, const SourceLoc &loc = {});
/// A statement list as toText(Stmt) prints it. `buffers` are the buffers it may name without
/// allocating them (matched by printed name); variables it uses unbound become fresh int64 Vars
/// unless named in `vars`.
Stmt parseStmt(const std::string &text, const std::vector<Buffer> &buffers = {},
               const std::vector<Var> &vars = {}, const SourceLoc &loc = {});
/// One expression as toText(Expr) prints it, with the same name environment as parseStmt.
Expr parseExpr(const std::string &text, const std::vector<Buffer> &buffers = {},
               const std::vector<Var> &vars = {}, const SourceLoc &loc = {});

} // namespace npuc::tir
