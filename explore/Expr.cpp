// Expr.cpp - a recursive-descent parser and evaluator for constraint expressions (Expr.h).
#include "explore/Expr.h"

#include "support/Error.h"

#include <cctype>
#include <cmath>
#include <cstdlib>

namespace npuc::explore {

enum class Op { Num, Name, Neg, Not, Or, And, Lt, Le, Gt, Ge, Eq, Ne, Add, Sub, Mul, Div, Mod };

struct Expr::Node {
  Op op = Op::Num;
  double value = 0;
  std::string name;
  std::shared_ptr<const Node> a, b;
};

std::optional<double> parseQuantity(std::string_view text) {
  std::string t(text);
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back())))
    t.pop_back();
  double scale = 1;
  static const std::pair<const char *, double> units[] = {
      {"KiB", 1024.0}, {"MiB", 1024.0 * 1024}, {"GiB", 1024.0 * 1024 * 1024}};
  for (auto [suffix, mult] : units) {
    const std::string s(suffix);
    if (t.size() > s.size() && t.compare(t.size() - s.size(), s.size(), s) == 0) {
      t = t.substr(0, t.size() - s.size());
      while (!t.empty() && t.back() == ' ')
        t.pop_back();
      scale = mult;
      break;
    }
  }
  size_t start = 0;
  while (start < t.size() && t[start] == ' ')
    ++start;
  t = t.substr(start);
  if (t.empty())
    return std::nullopt;
  char *end = nullptr;
  const bool hex = t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X');
  const double v = hex ? double(std::strtoll(t.c_str(), &end, 16)) : std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size() || !std::isfinite(v))
    return std::nullopt;
  return v * scale;
}

namespace {

using NodeP = std::shared_ptr<const Expr::Node>;

NodeP leaf(Op op, double v, std::string name = {}) {
  auto n = std::make_shared<Expr::Node>();
  n->op = op;
  n->value = v;
  n->name = std::move(name);
  return n;
}

NodeP node(Op op, NodeP a, NodeP b = nullptr) {
  auto n = std::make_shared<Expr::Node>();
  n->op = op;
  n->a = std::move(a);
  n->b = std::move(b);
  return n;
}

class Parser {
public:
  Parser(const std::string &s, const std::string &where, std::vector<std::string> &names)
      : s_(s), where_(where), names_(names) {}

  NodeP parseAll() {
    NodeP n = parseOr();
    skip();
    if (pos_ < s_.size())
      error("unexpected '" + s_.substr(pos_, 1) + "'");
    return n;
  }

private:
  [[noreturn]] void error(const std::string &msg) const {
    fail("{}: {} at column {} of '{}'", where_, msg, pos_ + 1, s_);
  }
  void skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_])))
      ++pos_;
  }
  bool isNameChar(char c) const {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
  }
  /// Consumes `tok` (a symbol, or a keyword followed by no name character).
  bool eat(std::string_view tok) {
    skip();
    if (s_.compare(pos_, tok.size(), tok) != 0)
      return false;
    if (std::isalpha(static_cast<unsigned char>(tok[0])) && pos_ + tok.size() < s_.size() &&
        isNameChar(s_[pos_ + tok.size()]))
      return false;
    pos_ += tok.size();
    return true;
  }
  NodeP parseOr() {
    NodeP n = parseAnd();
    while (eat("or") || eat("||"))
      n = node(Op::Or, n, parseAnd());
    return n;
  }
  NodeP parseAnd() {
    NodeP n = parseNot();
    while (eat("and") || eat("&&"))
      n = node(Op::And, n, parseNot());
    return n;
  }
  NodeP parseNot() {
    if (eat("not") || (peekBang() && eat("!")))
      return node(Op::Not, parseNot());
    return parseCompare();
  }
  bool peekBang() {
    skip();
    return pos_ + 1 >= s_.size() ? pos_ < s_.size() && s_[pos_] == '!'
                                 : s_[pos_] == '!' && s_[pos_ + 1] != '=';
  }
  NodeP parseCompare() {
    NodeP n = parseSum();
    static const std::pair<const char *, Op> ops[] = {{"<=", Op::Le}, {">=", Op::Ge},
                                                      {"==", Op::Eq}, {"!=", Op::Ne},
                                                      {"<", Op::Lt},  {">", Op::Gt}};
    for (auto [tok, op] : ops)
      if (eat(tok))
        return node(op, n, parseSum());
    return n;
  }
  NodeP parseSum() {
    NodeP n = parseProduct();
    for (;;) {
      if (eat("+"))
        n = node(Op::Add, n, parseProduct());
      else if (eat("-"))
        n = node(Op::Sub, n, parseProduct());
      else
        return n;
    }
  }
  NodeP parseProduct() {
    NodeP n = parseUnary();
    for (;;) {
      if (eat("*"))
        n = node(Op::Mul, n, parseUnary());
      else if (eat("/"))
        n = node(Op::Div, n, parseUnary());
      else if (eat("%"))
        n = node(Op::Mod, n, parseUnary());
      else
        return n;
    }
  }
  NodeP parseUnary() {
    if (eat("-"))
      return node(Op::Neg, parseUnary());
    return parsePrimary();
  }
  NodeP parsePrimary() {
    skip();
    if (eat("(")) {
      NodeP n = parseOr();
      if (!eat(")"))
        error("expected ')'");
      return n;
    }
    if (pos_ >= s_.size())
      error("expected a number, a name or '('");
    const size_t start = pos_;
    if (std::isdigit(static_cast<unsigned char>(s_[pos_])))
      return parseNumber(start);
    if (std::isalpha(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_') {
      while (pos_ < s_.size() && isNameChar(s_[pos_]))
        ++pos_;
      std::string name = s_.substr(start, pos_ - start);
      names_.push_back(name);
      return leaf(Op::Name, 0, name);
    }
    error("expected a number, a name or '('");
  }
  NodeP parseNumber(size_t start) {
    while (pos_ < s_.size() &&
           (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '.'))
      ++pos_;
    // A unit suffix may follow after one space: "512 KiB".
    for (const char *unit : {"KiB", "MiB", "GiB"})
      if (s_.compare(pos_, 4, std::string(" ") + unit) == 0)
        pos_ += 4;
    const std::string text = s_.substr(start, pos_ - start);
    std::optional<double> v = parseQuantity(text);
    if (!v) {
      pos_ = start;
      error("bad number '" + text + "'");
    }
    return leaf(Op::Num, *v);
  }

  const std::string &s_;
  const std::string &where_;
  std::vector<std::string> &names_;
  size_t pos_ = 0;
};

double evalNode(const Expr::Node &n, const Expr::Lookup &lookup, const std::string &where) {
  auto a = [&] { return evalNode(*n.a, lookup, where); };
  auto b = [&] { return evalNode(*n.b, lookup, where); };
  switch (n.op) {
  case Op::Num:
    return n.value;
  case Op::Name: {
    std::optional<double> v = lookup(n.name);
    if (!v)
      fail("{}: '{}' is neither an axis nor a numeric field of the target", where, n.name);
    return *v;
  }
  case Op::Neg:
    return -a();
  case Op::Not:
    return a() == 0 ? 1 : 0;
  case Op::Or:
    return a() != 0 || b() != 0 ? 1 : 0;
  case Op::And:
    return a() != 0 && b() != 0 ? 1 : 0;
  case Op::Lt:
    return a() < b() ? 1 : 0;
  case Op::Le:
    return a() <= b() ? 1 : 0;
  case Op::Gt:
    return a() > b() ? 1 : 0;
  case Op::Ge:
    return a() >= b() ? 1 : 0;
  case Op::Eq:
    return a() == b() ? 1 : 0;
  case Op::Ne:
    return a() != b() ? 1 : 0;
  case Op::Add:
    return a() + b();
  case Op::Sub:
    return a() - b();
  case Op::Mul:
    return a() * b();
  case Op::Div:
  case Op::Mod: {
    const double x = a(), y = b();
    if (y == 0)
      fail("{}: division by zero", where);
    return n.op == Op::Div ? x / y : std::fmod(x, y);
  }
  }
  NPUC_ASSERT(false, "every Op is evaluated above");
  return 0;
}

} // namespace

Expr Expr::parse(const std::string &text, const std::string &where) {
  Expr e;
  e.text_ = text;
  e.where_ = where;
  e.root_ = Parser(e.text_, e.where_, e.names_).parseAll();
  return e;
}

double Expr::eval(const Lookup &lookup) const {
  return evalNode(*root_, lookup, where_);
}

} // namespace npuc::explore
