// TextLexer.h - the tokens of TIR text (internal to Parser.cpp, kept apart to keep files small).
//
// Newlines are tokens (a statement ends at the end of its line); `//` comments are skipped;
// a character outside the language is a located npuc::Error.
#pragma once

#include "tir/Parser.h"

#include <string>
#include <vector>

namespace npuc::tir::detail {

enum class Tok { Ident, Int, Float, Punct, Newline, End };

struct Token {
  Tok kind = Tok::End;
  std::string text;
  int line = 0, col = 0;
};

/// The tokens of `text`, ending with one End token.
std::vector<Token> lex(const std::string &text, const SourceLoc &loc);
/// "int32", "uint8", "float16", "bool", "handle" -> the type; false for anything else.
bool parseTypeName(const std::string &s, DataType &t);

} // namespace npuc::tir::detail
