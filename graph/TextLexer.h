// TextLexer.h - the tokens of graph text (internal to TextParser.cpp; see Text.h for the syntax).
//
// Newlines are tokens (a declaration ends at the end of its line); `//` comments are skipped; a
// character outside the language is a located npuc::Error. `%name` and `%"any name"` are one
// Value token whose text is the name; `1x3x8x8` (digits joined by 'x') is one Dims token.
#pragma once

#include <string>
#include <vector>

namespace npuc::graph::detail {

enum class Tok { Ident, Int, Float, String, Value, Dims, Punct, Newline, End };

struct Token {
  Tok kind = Tok::End;
  std::string text; // unescaped for String and Value tokens
  int line = 0, col = 0;
};

/// The tokens of `text`, ending with one End token; `file` and `firstLine` locate messages.
std::vector<Token> lex(const std::string &text, const std::string &file, int firstLine);

/// Describes a token for "expected X, found Y" messages.
std::string describe(const Token &t);

} // namespace npuc::graph::detail
