// TextLexer.cpp - the hand-written lexer of TIR text (see TextLexer.h).
#include "tir/TextLexer.h"

#include "support/Error.h"

#include <cctype>
#include <cstdlib>
#include <cstring>

namespace npuc::tir::detail {
namespace {

class Lexer {
public:
  Lexer(const std::string &text, const SourceLoc &loc) : text_(text), loc_(loc) {}

  std::vector<Token> run() {
    std::vector<Token> out;
    int line = loc_.firstLine, col = 1;
    size_t i = 0;
    auto push = [&](Tok k, size_t start, size_t len, int l, int c) {
      out.push_back({k, text_.substr(start, len), l, c});
    };
    while (i < text_.size()) {
      char c = text_[i];
      if (c == '\n') {
        if (out.empty() || out.back().kind != Tok::Newline)
          push(Tok::Newline, i, 0, line, col);
        ++i, ++line, col = 1;
        continue;
      }
      if (c == ' ' || c == '\t' || c == '\r') {
        ++i, ++col;
        continue;
      }
      if (c == '/' && i + 1 < text_.size() && text_[i + 1] == '/') {
        while (i < text_.size() && text_[i] != '\n')
          ++i;
        continue;
      }
      size_t start = i;
      int startCol = col;
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        while (i < text_.size() &&
               (std::isalnum(static_cast<unsigned char>(text_[i])) || text_[i] == '_'))
          ++i;
        push(Tok::Ident, start, i - start, line, startCol);
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        bool isFloat = false;
        auto digits = [&] {
          while (i < text_.size() && std::isdigit(static_cast<unsigned char>(text_[i])))
            ++i;
        };
        digits();
        if (i < text_.size() && text_[i] == '.') {
          isFloat = true;
          ++i;
          digits();
        }
        if (i < text_.size() && (text_[i] == 'e' || text_[i] == 'E')) {
          isFloat = true;
          ++i;
          if (i < text_.size() && (text_[i] == '+' || text_[i] == '-'))
            ++i;
          digits();
        }
        if (i < text_.size() && text_[i] == 'f') {
          isFloat = true;
          ++i;
        }
        push(isFloat ? Tok::Float : Tok::Int, start, i - start, line, startCol);
      } else {
        static const char *two[] = {"==", "!=", "<=", ">=", "&&", "||"};
        size_t len = 1;
        for (const char *t : two)
          if (text_.compare(i, 2, t) == 0)
            len = 2;
        if (len == 1 && !std::strchr("(){}[],:@=<>!+-*/%.", c))
          npuc::fail("{}:{}:{}: error: unexpected character '{}'", loc_.file, line, col,
                     std::string(1, c));
        i += len;
        push(Tok::Punct, start, len, line, startCol);
      }
      col += static_cast<int>(i - start);
    }
    out.push_back({Tok::End, "", line, col});
    return out;
  }

private:
  const std::string &text_;
  const SourceLoc &loc_;
};

} // namespace

std::vector<Token> lex(const std::string &text, const SourceLoc &loc) {
  return Lexer(text, loc).run();
}

bool parseTypeName(const std::string &s, DataType &t) {
  auto bits = [&](size_t prefix, DataType::Code code) {
    if (s.size() <= prefix)
      return false;
    for (size_t i = prefix; i < s.size(); ++i)
      if (!std::isdigit(static_cast<unsigned char>(s[i])))
        return false;
    int b = std::atoi(s.c_str() + prefix);
    if (b != 1 && b != 8 && b != 16 && b != 32 && b != 64)
      return false;
    t = {code, b};
    return true;
  };
  if (s == "bool") {
    t = DataType::Bool();
    return true;
  }
  if (s == "handle") {
    t = DataType::Handle();
    return true;
  }
  if (s.rfind("uint", 0) == 0)
    return bits(4, DataType::Code::UInt);
  if (s.rfind("int", 0) == 0)
    return bits(3, DataType::Code::Int);
  if (s.rfind("float", 0) == 0)
    return bits(5, DataType::Code::Float);
  return false;
}

} // namespace npuc::tir::detail
