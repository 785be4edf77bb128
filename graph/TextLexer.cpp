// TextLexer.cpp - the hand-written lexer of graph text (see TextLexer.h).
#include "graph/TextLexer.h"

#include "support/Error.h"

#include <cctype>
#include <cstring>

namespace npuc::graph::detail {
namespace {

bool isDigit(char c) {
  return std::isdigit(static_cast<unsigned char>(c)) != 0;
}

bool isIdentStart(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}

// Identifiers hold ONNX op types, attribute names and keywords; '.' lets a bare value name such
// as `input.1` through.
bool isIdentChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
}

class Lexer {
public:
  Lexer(const std::string &text, const std::string &file, int firstLine)
      : text_(text), file_(file), line_(firstLine) {}

  std::vector<Token> run() {
    while (i_ < text_.size()) {
      char c = text_[i_];
      if (c == '\n') {
        if (out_.empty() || out_.back().kind != Tok::Newline)
          out_.push_back({Tok::Newline, "", line_, col_});
        ++i_, ++line_, col_ = 1;
      } else if (c == ' ' || c == '\t' || c == '\r') {
        advance(1);
      } else if (c == '/' && peek(1) == '/') {
        while (i_ < text_.size() && text_[i_] != '\n')
          ++i_;
      } else {
        token(c);
      }
    }
    out_.push_back({Tok::End, "", line_, col_});
    return out_;
  }

private:
  char peek(size_t k) const { return i_ + k < text_.size() ? text_[i_ + k] : '\0'; }
  void advance(size_t n) {
    i_ += n;
    col_ += static_cast<int>(n);
  }
  [[noreturn]] void error(const std::string &what, int col) const {
    npuc::fail("{}:{}:{}: error: {}", file_, line_, col, what);
  }

  void token(char c) {
    int col = col_;
    size_t start = i_;
    if (isIdentStart(c)) {
      while (i_ < text_.size() && isIdentChar(text_[i_]))
        advance(1);
      out_.push_back({Tok::Ident, text_.substr(start, i_ - start), line_, col});
    } else if (isDigit(c)) {
      number(col);
    } else if (c == '"') {
      out_.push_back({Tok::String, quoted(), line_, col});
    } else if (c == '%') {
      advance(1);
      std::string name;
      if (peek(0) == '"') {
        name = quoted();
      } else {
        while (i_ < text_.size() && isIdentChar(text_[i_]))
          name += text_[i_], advance(1);
        if (name.empty())
          error("expected a value name after '%'", col);
      }
      out_.push_back({Tok::Value, name, line_, col});
    } else if (c == '-' && peek(1) == '>') {
      advance(2);
      out_.push_back({Tok::Punct, "->", line_, col});
    } else if (std::strchr("()[]{},:=<>-", c)) {
      advance(1);
      out_.push_back({Tok::Punct, std::string(1, c), line_, col});
    } else {
      error(fmt::format("unexpected character '{}'", c), col);
    }
  }

  void digits() {
    while (i_ < text_.size() && isDigit(text_[i_]))
      advance(1);
  }

  // 12, 1.5, 2e-05, 1x3x8x8 (a Dims token: a shape's extents).
  void number(int col) {
    size_t start = i_;
    digits();
    Tok kind = Tok::Int;
    if (peek(0) == 'x' && isDigit(peek(1))) {
      while (peek(0) == 'x' && isDigit(peek(1))) {
        advance(1);
        digits();
      }
      kind = Tok::Dims;
    } else {
      if (peek(0) == '.') {
        kind = Tok::Float;
        advance(1);
        digits();
      }
      if (peek(0) == 'e' || peek(0) == 'E') {
        kind = Tok::Float;
        advance(1);
        if (peek(0) == '+' || peek(0) == '-')
          advance(1);
        if (!isDigit(peek(0)))
          error("expected the exponent's digits", col);
        digits();
      }
    }
    if (isIdentChar(peek(0)))
      error(fmt::format("unexpected character '{}' in a number", peek(0)), col_);
    out_.push_back({kind, text_.substr(start, i_ - start), line_, col});
  }

  // A double-quoted string with the escapes \" \\ \n \t and \xHH; returns it unescaped.
  std::string quoted() {
    int col = col_;
    advance(1);
    std::string s;
    while (true) {
      char c = peek(0);
      if (c == '\0' || c == '\n')
        error("unterminated string", col);
      advance(1);
      if (c == '"')
        return s;
      if (c != '\\') {
        s += c;
        continue;
      }
      char e = peek(0);
      advance(1);
      if (e == '"' || e == '\\')
        s += e;
      else if (e == 'n')
        s += '\n';
      else if (e == 't')
        s += '\t';
      else if (e == 'x' && std::isxdigit(static_cast<unsigned char>(peek(0))) &&
               std::isxdigit(static_cast<unsigned char>(peek(1)))) {
        s += static_cast<char>(std::stoi(text_.substr(i_, 2), nullptr, 16));
        advance(2);
      } else {
        error(fmt::format("unknown escape '\\{}' in a string", e), col_ - 2);
      }
    }
  }

  const std::string &text_;
  const std::string &file_;
  std::vector<Token> out_;
  size_t i_ = 0;
  int line_, col_ = 1;
};

} // namespace

std::vector<Token> lex(const std::string &text, const std::string &file, int firstLine) {
  return Lexer(text, file, firstLine).run();
}

std::string describe(const Token &t) {
  switch (t.kind) {
  case Tok::Newline:
    return "the end of the line";
  case Tok::End:
    return "the end of the text";
  case Tok::String:
    return "string \"" + t.text + "\"";
  case Tok::Value:
    return "'%" + t.text + "'";
  default:
    return "'" + t.text + "'";
  }
}

} // namespace npuc::graph::detail
