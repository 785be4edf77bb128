// Parser.cpp - the recursive-descent parser of the printer's language (tokens: TextLexer.h).
//
// Newlines are tokens: the printer puts one statement per line and never breaks an expression,
// so a statement ends at the end of its line (an Evaluate of `-3` after a line `x` must not read
// as `x - 3`). Every constructor's precondition (operand types, bool conditions, store types) is
// checked here first, so bad text is a located npuc::Error and never an assertion.
#include "tir/Parser.h"

#include "support/Error.h"
#include "tir/TextLexer.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <unordered_map>

namespace npuc::tir {
namespace {

using detail::parseTypeName;
using detail::Tok;
using detail::Token;

int precedenceOf(const std::string &op, NodeKind &k) {
  static const std::map<std::string, std::pair<NodeKind, int>> ops = {
      {"||", {NodeKind::Or, 1}}, {"&&", {NodeKind::And, 2}}, {"==", {NodeKind::EQ, 3}},
      {"!=", {NodeKind::NE, 3}}, {"<", {NodeKind::LT, 4}},   {"<=", {NodeKind::LE, 4}},
      {">", {NodeKind::GT, 4}},  {">=", {NodeKind::GE, 4}},  {"+", {NodeKind::Add, 5}},
      {"-", {NodeKind::Sub, 5}}, {"*", {NodeKind::Mul, 6}},  {"/", {NodeKind::Div, 6}},
      {"%", {NodeKind::Mod, 6}}};
  auto it = ops.find(op);
  if (it == ops.end())
    return -1;
  k = it->second.first;
  return it->second.second;
}

class Parser {
public:
  Parser(const std::string &text, const SourceLoc &loc, bool freeVars)
      : loc_(loc), toks_(detail::lex(text, loc)), freeVars_(freeVars) {}

  std::unordered_map<std::string, Buffer> globalBuffers;
  std::unordered_map<std::string, Var> globalVars;

  std::vector<PrimFunc> funcs() {
    std::vector<PrimFunc> out;
    skipNewlines();
    while (peek().kind != Tok::End) {
      out.push_back(func());
      skipNewlines();
    }
    if (out.empty())
      error(peek(), "expected 'func'");
    return out;
  }

  Stmt stmtList() {
    Stmt s = block();
    if (peek().kind != Tok::End)
      error(peek(), "expected a statement, found '" + peek().text + "'");
    return s;
  }

  Expr exprOnly() {
    skipNewlines();
    Expr e = expr();
    skipNewlines();
    if (peek().kind != Tok::End)
      error(peek(), "unexpected '" + peek().text + "' after the expression");
    return e;
  }

private:
  const SourceLoc &loc_;
  std::vector<Token> toks_;
  size_t pos_ = 0;
  bool freeVars_;
  std::vector<std::pair<std::string, Var>> varScope_;
  std::vector<std::pair<std::string, Buffer>> bufScope_;
  // The nesting limit (kMaxTextDepth): statement bodies and brackets open around the current
  // token, and the height of each expression node built in the current statement. The map holds
  // the nodes, so that no address in it can be reused by another node while it is looked up.
  int bodies_ = 0, open_ = 0;
  std::unordered_map<const ExprNode *, std::pair<Expr, int>> heights_;

  [[noreturn]] void error(const Token &t, const std::string &msg) {
    npuc::fail("{}:{}:{}: error: {}", loc_.file, t.line, t.col, msg);
  }
  [[noreturn]] void tooDeep(const Token &t) {
    error(t, "nested more than " + std::to_string(kMaxTextDepth) +
                 " levels deep (each statement body, bracket, call and operator is one level, "
                 "so a + b + ... is one per '+'): the limit of TIR text");
  }

  // One bracket, call or '!' open while the parser recurses into it.
  class Nesting {
  public:
    Nesting(Parser &p, const Token &at) : p_(p) {
      if (++p_.open_ + p_.bodies_ > kMaxTextDepth)
        p_.tooDeep(at);
    }
    ~Nesting() { --p_.open_; }
    Nesting(const Nesting &) = delete;
    Nesting &operator=(const Nesting &) = delete;

  private:
    Parser &p_;
  };

  int heightOf(const Expr &e) const {
    auto it = heights_.find(e.get());
    return it == heights_.end() ? 1 : it->second.second;
  }
  // Every interior node the parser builds passes here: a tree deeper than the limit is an error
  // at the token that made it so (the operator of a long chain), since a left-leaning chain
  // parses iteratively but every pass recurses over it.
  Expr built(const Expr &e, const Token &at) {
    int h = 0;
    auto child = [&](const Expr &c) { h = std::max(h, heightOf(c)); };
    if (isBinary(e.kind())) {
      child(static_cast<const BinaryNode *>(e.get())->a);
      child(static_cast<const BinaryNode *>(e.get())->b);
    } else if (const auto *n = e.as<NotNode>()) {
      child(n->a);
    } else if (const auto *s = e.as<SelectNode>()) {
      child(s->cond);
      child(s->trueValue);
      child(s->falseValue);
    } else if (const auto *c = e.as<CastNode>()) {
      child(c->value);
    } else if (const auto *l = e.as<LoadNode>()) {
      child(l->index);
    } else if (const auto *call = e.as<CallNode>()) {
      for (const Expr &a : call->args)
        child(a);
    }
    if (h + 1 + bodies_ > kMaxTextDepth)
      tooDeep(at);
    heights_[e.get()] = {e, h + 1};
    return e;
  }

  const Token &peek(size_t ahead = 0) const {
    return toks_[std::min(pos_ + ahead, toks_.size() - 1)];
  }
  const Token &next() {
    const Token &t = peek();
    if (pos_ < toks_.size() - 1)
      ++pos_;
    return t;
  }
  bool isPunct(const std::string &p, size_t ahead = 0) const {
    return peek(ahead).kind == Tok::Punct && peek(ahead).text == p;
  }
  bool isIdent(const std::string &s, size_t ahead = 0) const {
    return peek(ahead).kind == Tok::Ident && peek(ahead).text == s;
  }
  bool accept(const std::string &p) {
    if (!isPunct(p))
      return false;
    next();
    return true;
  }
  static std::string describe(const Token &t) {
    if (t.kind == Tok::Newline)
      return "end of line";
    if (t.kind == Tok::End)
      return "end of input";
    return "'" + t.text + "'";
  }
  const Token &expect(const std::string &p) {
    if (!isPunct(p))
      error(peek(), "expected '" + p + "', found " + describe(peek()));
    return next();
  }
  std::string ident(const char *what) {
    if (peek().kind != Tok::Ident)
      error(peek(), std::string("expected ") + what + ", found " + describe(peek()));
    return next().text;
  }
  /// An identifier that may contain dots (attribute keys, NPU mnemonics).
  std::string dottedName(const char *what) {
    std::string s = ident(what);
    while (isPunct(".") && peek(1).kind == Tok::Ident) {
      next();
      s += "." + next().text;
    }
    return s;
  }
  void skipNewlines() {
    while (peek().kind == Tok::Newline)
      next();
  }
  void endOfLine() {
    if (peek().kind != Tok::Newline && peek().kind != Tok::End)
      error(peek(), "expected end of line, found " + describe(peek()));
    skipNewlines();
  }
  int64_t intLiteral(const Token &t, bool negative) {
    errno = 0;
    unsigned long long u = std::strtoull(t.text.c_str(), nullptr, 10);
    unsigned long long limit = negative ? (1ull << 63) : (1ull << 63) - 1;
    if (errno == ERANGE || u > limit)
      error(t, "integer literal " + t.text + " does not fit in 64 bits");
    return negative ? static_cast<int64_t>(0ull - u) : static_cast<int64_t>(u);
  }

  // An immediate of integer type dt: its value must be in dt's range (an IntImm holds a value
  // of its type, Eval.h), so int8(300) is an error rather than a constant that wraps.
  int64_t typedLiteral(const Token &t, bool negative, DataType dt) {
    errno = 0;
    unsigned long long u = std::strtoull(t.text.c_str(), nullptr, 10);
    const unsigned long long max =
        dt.isUInt() ? (dt.bits >= 64 ? ~0ull : (1ull << dt.bits) - 1) : (1ull << (dt.bits - 1)) - 1;
    const unsigned long long maxNeg = dt.isUInt() ? 0 : max + 1;
    if (errno == ERANGE || u > (negative ? maxNeg : max))
      error(t, "integer literal " + std::string(negative ? "-" : "") + t.text +
                   " does not fit in " + toString(dt));
    return negative ? static_cast<int64_t>(0ull - u) : static_cast<int64_t>(u);
  }

  DataType typeName(const char *what) {
    const Token &t = peek();
    DataType dt;
    if (t.kind != Tok::Ident || !parseTypeName(t.text, dt))
      error(t, std::string("expected ") + what + ", found " + describe(t));
    next();
    return dt;
  }

  Buffer bufferDecl() {
    const Token &at = peek();
    std::string name = ident("a buffer name");
    expect(":");
    DataType dt = typeName("a data type");
    expect("[");
    std::vector<int64_t> shape;
    while (!isPunct("]")) {
      if (!shape.empty())
        expect(",");
      const Token &t = peek();
      if (t.kind != Tok::Int)
        error(t, "expected an extent of buffer '" + name + "', found " + describe(t));
      next();
      shape.push_back(intLiteral(t, false));
    }
    expect("]");
    if (int64_t n = 0; !elementCount(shape, n))
      error(at, "buffer '" + name + "' has more elements than a 64-bit index can address");
    expect("@");
    return Buffer::make(name, dt, std::move(shape), ident("a memory scope"));
  }

  PrimFunc func() {
    if (!isIdent("func"))
      error(peek(), "expected 'func', found " + describe(peek()));
    next();
    PrimFunc f;
    f.name = ident("a function name");
    expect("(");
    while (!isPunct(")")) {
      if (!f.params.empty())
        expect(",");
      const Token &at = peek();
      Buffer b = bufferDecl();
      for (const Buffer &p : f.params)
        if (p->name == b->name)
          error(at, "parameter '" + b->name + "' is declared twice");
      f.params.push_back(b);
    }
    expect(")");
    expect("{");
    size_t mark = bufScope_.size();
    for (const Buffer &b : f.params)
      bufScope_.emplace_back(b->name, b);
    f.body = block();
    bufScope_.resize(mark);
    expect("}");
    endOfLine();
    return f;
  }

  // Statements up to a closing '}' or the end; one statement is itself, none an empty Seq.
  Stmt block() {
    std::vector<Stmt> stmts;
    skipNewlines();
    while (peek().kind != Tok::End && !isPunct("}")) {
      stmts.push_back(stmt());
      skipNewlines();
    }
    if (stmts.size() == 1)
      return stmts[0];
    return SeqNode::make(std::move(stmts));
  }

  Stmt braced() {
    if (++bodies_ > kMaxTextDepth)
      tooDeep(peek());
    expect("{");
    endOfLine();
    Stmt s = block();
    expect("}");
    --bodies_;
    return s;
  }

  Expr typed(const Expr &e, const Token &at, DataType want, const std::string &what) {
    if (e.type() != want)
      error(at, what + " must be " + toString(want) + ", not " + toString(e.type()));
    return e;
  }

  Stmt stmt() {
    heights_.clear(); // no expression is under construction between statements
    const Token &start = peek();
    if (start.kind == Tok::Ident) {
      static const std::map<std::string, ForKind> kinds = {{"serial", ForKind::Serial},
                                                           {"unrolled", ForKind::Unrolled},
                                                           {"parallel", ForKind::Parallel},
                                                           {"pipelined", ForKind::Pipelined}};
      auto k = kinds.find(start.text);
      if (k != kinds.end() && isIdent("for", 1)) {
        next();
        return forStmt(k->second);
      }
      if (start.text == "for" && isPunct("(", 1))
        return forStmt(ForKind::Serial);
      if (start.text == "if" && isPunct("(", 1))
        return ifStmt();
      if (start.text == "allocate" && peek(1).kind == Tok::Ident && isPunct(":", 2)) {
        next();
        const Token &at = peek();
        Buffer b = bufferDecl();
        if (lookupBuffer(b->name).defined())
          error(at, "buffer '" + b->name + "' is already declared");
        bufScope_.emplace_back(b->name, b);
        Stmt body = braced();
        bufScope_.pop_back();
        endOfLine();
        return AllocateNode::make(b, body);
      }
      if (start.text == "attr" && peek(1).kind == Tok::Ident) {
        next();
        std::string key = dottedName("an attribute key");
        expect("=");
        Expr v = expr();
        Stmt body = braced();
        endOfLine();
        return AttrStmtNode::make(key, v, body);
      }
      if (start.text == "npu" && isPunct(".", 1)) {
        next();
        next();
        std::string mnemonic = dottedName("an NPU mnemonic");
        expect("(");
        std::vector<std::pair<std::string, Expr>> fields;
        while (!isPunct(")")) {
          if (!fields.empty())
            expect(",");
          std::string name = ident("a field name");
          expect("=");
          fields.emplace_back(name, expr());
        }
        expect(")");
        endOfLine();
        return NpuOpNode::make(mnemonic, std::move(fields));
      }
    }
    Expr e = expr();
    if (isPunct("=")) {
      const auto *ld = e.as<LoadNode>();
      if (!ld)
        error(peek(), "only a buffer element can be assigned");
      next();
      const Token &vt = peek();
      Expr v = expr();
      typed(v, vt, ld->buffer->dtype, "the value stored to '" + ld->buffer->name + "'");
      endOfLine();
      return StoreNode::make(ld->buffer, v, ld->index);
    }
    endOfLine();
    return EvaluateNode::make(e);
  }

  Stmt forStmt(ForKind kind) {
    next(); // for
    expect("(");
    std::string name = ident("a loop variable");
    expect(",");
    const Token &mt = peek();
    Expr mn = typed(expr(), mt, DataType::Int(64), "a loop bound");
    expect(",");
    const Token &et = peek();
    Expr ext = typed(expr(), et, DataType::Int(64), "a loop extent");
    expect(")");
    Var v = Var::make(name);
    varScope_.emplace_back(name, v);
    Stmt body = braced();
    varScope_.pop_back();
    endOfLine();
    return ForNode::make(v, mn, ext, kind, body);
  }

  Stmt ifStmt() {
    next(); // if
    expect("(");
    const Token &ct = peek();
    Expr c = typed(expr(), ct, DataType::Bool(), "an if condition");
    expect(")");
    Stmt thenCase = braced(), elseCase;
    if (isIdent("else")) {
      next();
      elseCase = braced();
    }
    endOfLine();
    return IfThenElseNode::make(c, thenCase, elseCase);
  }

  Buffer lookupBuffer(const std::string &name) {
    for (auto it = bufScope_.rbegin(); it != bufScope_.rend(); ++it)
      if (it->first == name)
        return it->second;
    auto g = globalBuffers.find(name);
    return g == globalBuffers.end() ? Buffer() : g->second;
  }

  Var lookupVar(const Token &t) {
    for (auto it = varScope_.rbegin(); it != varScope_.rend(); ++it)
      if (it->first == t.text)
        return it->second;
    auto g = globalVars.find(t.text);
    if (g != globalVars.end())
      return g->second;
    if (!freeVars_)
      error(t, "use of undefined variable '" + t.text + "'");
    Var v = Var::make(t.text);
    globalVars.emplace(t.text, v);
    return v;
  }

  // ------------------------------------------------------------ expressions

  Expr expr(int minPrec = 1) {
    Expr lhs = unary();
    for (;;) {
      const Token &op = peek();
      NodeKind k;
      int p = op.kind == Tok::Punct ? precedenceOf(op.text, k) : -1;
      if (p < minPrec)
        return lhs;
      next();
      Expr rhs = expr(p + 1);
      lhs = binary(k, lhs, rhs, op);
    }
  }

  Expr binary(NodeKind k, const Expr &a, const Expr &b, const Token &at) {
    if (a.type() != b.type())
      error(at, std::string("operands of '") + binarySymbol(k) +
                    "' differ in type: " + toString(a.type()) + " vs " + toString(b.type()));
    if ((k == NodeKind::And || k == NodeKind::Or) && !a.type().isBool())
      error(at, std::string("operands of '") + binarySymbol(k) + "' must be bool");
    return built(makeBinary(k, a, b), at);
  }

  Expr unary() {
    const Token &t = peek();
    if (isPunct("!")) {
      Nesting n(*this, t);
      next();
      const Token &at = peek();
      return built(NotNode::make(typed(unary(), at, DataType::Bool(), "the operand of '!'")), t);
    }
    if (isPunct("-") && (peek(1).kind == Tok::Int || peek(1).kind == Tok::Float)) {
      next();
      return literal(next(), true);
    }
    if (t.kind == Tok::Int || t.kind == Tok::Float)
      return literal(next(), false);
    return primary();
  }

  Expr literal(const Token &t, bool negative) {
    if (t.kind == Tok::Int)
      return IntImmNode::make(intLiteral(t, negative));
    if (t.text.back() != 'f')
      error(t, "a float literal needs an 'f' suffix (float32) or a type, as in float64(" + t.text +
                   ")");
    double v = std::strtod(t.text.c_str(), nullptr);
    return FloatImmNode::make(negative ? -v : v, DataType::Float(32));
  }

  std::vector<Expr> args(const std::string &callee) {
    Nesting n(*this, peek());
    expect("(");
    std::vector<Expr> out;
    while (!isPunct(")")) {
      if (!out.empty())
        expect(",");
      if (peek().kind == Tok::Newline || peek().kind == Tok::End)
        error(peek(), "unterminated argument list of '" + callee + "'");
      out.push_back(expr());
    }
    expect(")");
    return out;
  }

  void arity(const Token &t, const std::vector<Expr> &a, size_t n) {
    if (a.size() != n)
      error(t, "'" + t.text + "' takes " + std::to_string(n) + " arguments, not " +
                   std::to_string(a.size()));
  }

  // TYPE(literal) is an immediate of that type; TYPE(expr) a cast.
  Expr typeCall(const Token &t, DataType dt) {
    Nesting n(*this, peek());
    expect("(");
    size_t save = pos_;
    bool neg = accept("-");
    const Token &lit = peek();
    if (isPunct(")", 1)) {
      bool floatText = lit.kind == Tok::Float && lit.text.back() != 'f';
      if (dt.isFloat() && (floatText || isIdent("inf") || isIdent("nan"))) {
        next();
        next();
        double v = lit.kind == Tok::Float ? std::strtod(lit.text.c_str(), nullptr)
                   : lit.text == "inf"    ? HUGE_VAL
                                          : std::nan("");
        return FloatImmNode::make(neg ? -v : v, dt);
      }
      if ((dt.isInt() || dt.isUInt()) && dt != DataType::Int(64) && lit.kind == Tok::Int) {
        next();
        next();
        return IntImmNode::make(typedLiteral(lit, neg, dt), dt);
      }
    }
    pos_ = save;
    Expr v = expr();
    expect(")");
    if (v.type().isHandle() || dt.isHandle())
      error(t, "cannot cast to or from handle");
    return built(CastNode::make(dt, v), t);
  }

  Expr primary() {
    const Token &t = peek();
    if (isPunct("(")) {
      Nesting n(*this, t);
      next();
      Expr e = expr();
      expect(")");
      return e;
    }
    if (t.kind != Tok::Ident)
      error(t, "expected an expression, found " + describe(t));
    next();
    if (t.text == "true" || t.text == "false")
      return IntImmNode::make(t.text == "true", DataType::Bool());
    if (isPunct("(")) {
      DataType dt;
      if (parseTypeName(t.text, dt))
        return typeCall(t, dt);
      std::vector<Expr> a = args(t.text);
      if (t.text == "select") {
        arity(t, a, 3);
        if (!a[0].type().isBool())
          error(t, "the condition of select must be bool");
        if (a[1].type() != a[2].type())
          error(t, "the arms of select differ in type: " + toString(a[1].type()) + " vs " +
                       toString(a[2].type()));
        return built(SelectNode::make(a[0], a[1], a[2]), t);
      }
      static const std::map<std::string, NodeKind> fns = {{"floordiv", NodeKind::FloorDiv},
                                                          {"floormod", NodeKind::FloorMod},
                                                          {"min", NodeKind::Min},
                                                          {"max", NodeKind::Max}};
      if (auto f = fns.find(t.text); f != fns.end()) {
        arity(t, a, 2);
        return binary(f->second, a[0], a[1], t);
      }
      return built(CallNode::make(a.empty() ? DataType::Float(32) : a[0].type(), t.text, a), t);
    }
    if (isPunct("[")) {
      Buffer b = lookupBuffer(t.text);
      if (!b.defined())
        error(t, "use of undeclared buffer '" + t.text + "'");
      Nesting n(*this, peek());
      next();
      const Token &it = peek();
      Expr idx = expr();
      if (!idx.type().isInt())
        error(it, "the index of '" + t.text + "' must be an integer");
      expect("]");
      return built(LoadNode::make(b, idx), t);
    }
    return lookupVar(t);
  }
};

} // namespace

std::vector<PrimFunc> parseFuncs(const std::string &text, const SourceLoc &loc) {
  return Parser(text, loc, false).funcs();
}

PrimFunc parseFunc(const std::string &text, const SourceLoc &loc) {
  std::vector<PrimFunc> fs = parseFuncs(text, loc);
  if (fs.size() != 1)
    npuc::fail("{}: error: expected one function, found {}", loc.file, fs.size());
  return fs[0];
}

namespace {
Parser withEnv(const std::string &text, const std::vector<Buffer> &buffers,
               const std::vector<Var> &vars, const SourceLoc &loc) {
  Parser p(text, loc, true);
  for (const Buffer &b : buffers)
    p.globalBuffers.emplace(b->name, b);
  for (const Var &v : vars)
    p.globalVars.emplace(v.name(), v);
  return p;
}
} // namespace

Stmt parseStmt(const std::string &text, const std::vector<Buffer> &buffers,
               const std::vector<Var> &vars, const SourceLoc &loc) {
  return withEnv(text, buffers, vars, loc).stmtList();
}

Expr parseExpr(const std::string &text, const std::vector<Buffer> &buffers,
               const std::vector<Var> &vars, const SourceLoc &loc) {
  return withEnv(text, buffers, vars, loc).exprOnly();
}

} // namespace npuc::tir
