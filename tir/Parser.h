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
#pragma once

#include "tir/IR.h"

#include <string>
#include <vector>

namespace npuc::tir {

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
