// TextParser.cpp - reads the graph text TextPrinter.cpp writes (see Text.h for the syntax).
//
// A recursive-descent parser over TextLexer's tokens. Each node is checked against shape
// inference as it is read, so an unknown op, a bad attribute or a declared shape that the op
// would not produce is reported at the node's line rather than later inside a pass.
#include "graph/ShapeInference.h"
#include "graph/Text.h"

#include "graph/Ops.h"
#include "graph/TextLexer.h"
#include "graph/Verify.h"

#include "support/Error.h"

#include <bit>
#include <cerrno>
#include <cstdlib>
#include <limits>
#include <random>
#include <set>

namespace npuc::graph {
namespace {

using detail::Tok;
using detail::Token;

class Parser {
public:
  Parser(const std::string &text, const TextSource &src)
      : toks_(detail::lex(text, src.file, src.firstLine)), file_(src.file) {}

  Graph run() {
    skipNewlines();
    expectIdent("graph");
    g_.name = expect(Tok::String, "the graph's name (a string)").text;
    endOfLine();
    while (cur().kind != Tok::End) {
      const Token &t = cur();
      if (t.kind == Tok::Ident && t.text == "input")
        input();
      else if (t.kind == Tok::Ident && t.text == "const")
        constant();
      else if (t.kind == Tok::Ident && t.text == "output")
        outputs();
      else if (t.kind == Tok::Ident && t.text == "group")
        group();
      else if (t.kind == Tok::Value)
        node();
      else
        error(t, "expected 'input', 'const', 'output', 'group' or a node '%name: type = Op'");
      endOfLine();
    }
    if (!namedOutputs_)
      g_.outputNames.clear(); // every output is named by its value
    // What a line cannot show alone: a group's boundary against its nodes, nodes left out of
    // every group.
    std::vector<std::string> problems = verifyGraph(g_);
    if (!problems.empty())
      npuc::fail("{}: error: {}", file_, problems.front());
    return std::move(g_);
  }

private:
  // ---- tokens ----
  const Token &cur() const { return toks_[pos_]; }
  const Token &next() { return toks_[pos_ < toks_.size() - 1 ? pos_++ : pos_]; }
  bool isPunct(const char *p) const { return cur().kind == Tok::Punct && cur().text == p; }
  bool isIdent(const char *w) const { return cur().kind == Tok::Ident && cur().text == w; }
  bool accept(const char *p) {
    if (!isPunct(p))
      return false;
    next();
    return true;
  }

  [[noreturn]] void error(const Token &t, const std::string &what) const {
    npuc::fail("{}:{}:{}: error: {}", file_, t.line, t.col, what);
  }
  [[noreturn]] void expected(const std::string &what) const {
    error(cur(), fmt::format("expected {}, found {}", what, detail::describe(cur())));
  }
  const Token &expect(Tok k, const char *what) {
    if (cur().kind != k)
      expected(what);
    return next();
  }
  void expectPunct(const char *p) {
    if (!accept(p))
      expected(fmt::format("'{}'", p));
  }
  void expectIdent(const char *w) {
    if (!isIdent(w))
      expected(fmt::format("'{}'", w));
    next();
  }
  void skipNewlines() {
    while (cur().kind == Tok::Newline)
      next();
  }
  void endOfLine() {
    if (cur().kind != Tok::End && cur().kind != Tok::Newline)
      expected("the end of the line");
    skipNewlines();
  }

  // ---- numbers ----
  int64_t integer(const char *what) {
    bool neg = accept("-");
    const Token &t = expect(Tok::Int, what);
    errno = 0;
    long long v = std::strtoll(t.text.c_str(), nullptr, 10);
    if (errno == ERANGE)
      error(t, fmt::format("integer {} is out of range", t.text));
    return neg ? -v : v;
  }

  // A float element: a decimal, inf, nan or bits(N) (any NaN bit pattern).
  float f32() {
    bool neg = accept("-");
    float v = 0;
    if (isIdent("inf")) {
      next();
      v = std::numeric_limits<float>::infinity();
    } else if (isIdent("nan")) {
      next();
      v = std::bit_cast<float>(0x7fc00000u);
    } else if (isIdent("bits") && !neg) {
      next();
      expectPunct("(");
      int64_t b = integer("a float's bits (an integer)");
      if (b < 0 || b > 0xffffffffll)
        error(toks_[pos_ - 1], "float bits must fit 32 bits");
      expectPunct(")");
      return std::bit_cast<float>(static_cast<uint32_t>(b));
    } else if (cur().kind == Tok::Int || cur().kind == Tok::Float) {
      v = std::strtof(next().text.c_str(), nullptr); // ERANGE: inf or a denormal, as C reads it
    } else {
      expected("a number");
    }
    return neg ? -v : v;
  }

  // ---- declarations ----
  ValueId declare(DType dtype, Shape shape, const Token &name) {
    if (byName_.count(name.text))
      error(name, fmt::format("value '%{}' is already defined", name.text));
    ValueId v = g_.addValue(name.text, std::move(shape), dtype);
    byName_[name.text] = v;
    return v;
  }

  // `%name: f32[1x3x8x8]`: returns the name token, fills dtype and shape.
  Token typedName(DType &dtype, Shape &shape) {
    Token name = expect(Tok::Value, "a value name '%name'");
    expectPunct(":");
    const Token &t = expect(Tok::Ident, "a type (f32, i64, bool, ...)");
    std::optional<DType> dt = dtypeFromName(t.text);
    if (!dt)
      error(t, fmt::format("unknown type '{}' (known: f32, f64, f16, i8, i16, i32, i64, u8, u16, "
                           "u32, u64, bool)",
                           t.text));
    dtype = *dt;
    expectPunct("[");
    shape.clear();
    if (cur().kind == Tok::Int || cur().kind == Tok::Dims) {
      const Token &d = next();
      size_t i = 0;
      while (i <= d.text.size()) {
        size_t x = d.text.find('x', i);
        shape.push_back(std::stoll(d.text.substr(i, x == std::string::npos ? x : x - i)));
        if (x == std::string::npos)
          break;
        i = x + 1;
      }
    }
    expectPunct("]");
    return name;
  }

  ValueId use() {
    if (isPunct("<")) {
      next();
      expectIdent("none");
      expectPunct(">");
      return kNoValue;
    }
    const Token &t = expect(Tok::Value, "a value '%name' or '<none>'");
    auto it = byName_.find(t.text);
    if (it == byName_.end())
      error(t, fmt::format("unknown value '%{}' (values are defined before their uses)", t.text));
    return it->second;
  }

  void input() {
    next();
    DType dt;
    Shape s;
    Token name = typedName(dt, s);
    g_.inputs.push_back(declare(dt, std::move(s), name));
  }

  // output %v [as "NAME"], ...: an output declared under another name than its value's.
  void outputs() {
    next();
    do {
      ValueId v = use();
      g_.outputs.push_back(v);
      g_.outputNames.push_back(g_.value(v).name);
      if (isIdent("as")) {
        next();
        g_.outputNames.back() = expect(Tok::String, "the output's name (a string)").text;
        namedOutputs_ = true;
      }
    } while (accept(","));
  }

  void constant();
  std::vector<float> floatData(const Token &at, int64_t n);
  std::vector<int64_t> intData(const Token &at, int64_t n);
  void node();
  AttrValue attrValue();
  AttrValue scalarAttr();
  void checkShapes(NodeId n, const Token &at);
  void group();
  NodeId nodeRef();

  std::vector<Token> toks_;
  size_t pos_ = 0;
  std::string file_;
  Graph g_;
  std::map<std::string, ValueId> byName_;
  std::map<std::string, NodeId> nodesByName_;
  bool namedOutputs_ = false; // an output line used `as`: keep g_.outputNames
};

void Parser::constant() {
  next();
  DType dt;
  Shape s;
  Token name = typedName(dt, s);
  expectPunct("=");
  const Token &at = cur();
  int64_t n = numElements(s);
  if (isFloatType(dt)) {
    std::vector<float> d = floatData(at, n);
    if (static_cast<int64_t>(d.size()) != n)
      error(at, fmt::format("constant '%{}' of shape [{}] needs {} elements, the list has {}",
                            name.text, fmt::join(s, "x"), n, d.size()));
    ValueId v = declare(dt, s, name);
    g_.value(v).f32 = std::make_shared<const std::vector<float>>(std::move(d));
  } else {
    std::vector<int64_t> d = intData(at, n);
    if (static_cast<int64_t>(d.size()) != n)
      error(at, fmt::format("constant '%{}' of shape [{}] needs {} elements, the list has {}",
                            name.text, fmt::join(s, "x"), n, d.size()));
    for (int64_t x : d)
      if (wrapToType(dt, x) != x)
        error(at, fmt::format("constant '%{}': {} is not a {} value", name.text, x, dtypeName(dt)));
    ValueId v = declare(dt, s, name);
    g_.value(v).i64 = std::make_shared<const std::vector<int64_t>>(std::move(d));
  }
}

std::vector<float> Parser::floatData(const Token &at, int64_t n) {
  if (isIdent("splat")) {
    next();
    expectPunct("(");
    float f = f32();
    expectPunct(")");
    return std::vector<float>(static_cast<size_t>(n), f);
  }
  if (isIdent("random")) {
    next();
    expectPunct("(");
    int64_t seed = integer("a seed (an integer)");
    float lo = -1.f, hi = 1.f;
    if (accept(",")) {
      lo = f32();
      expectPunct(",");
      hi = f32();
      if (!(lo < hi))
        error(at, "random(SEED, LO, HI) needs LO < HI");
    }
    expectPunct(")");
    // The distribution and engine the tests' randomData helpers use, so that a graph written
    // as text holds the same data as one those helpers built.
    std::mt19937 rng(static_cast<std::mt19937::result_type>(seed));
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> d(static_cast<size_t>(n));
    for (float &f : d)
      f = dist(rng);
    return d;
  }
  if (!isPunct("["))
    expected("constant data: '[...]', 'splat(V)' or 'random(SEED)'");
  next();
  std::vector<float> d;
  if (!accept("]")) {
    do
      d.push_back(f32());
    while (accept(","));
    expectPunct("]");
  }
  return d;
}

std::vector<int64_t> Parser::intData(const Token &at, int64_t n) {
  if (isIdent("splat")) {
    next();
    expectPunct("(");
    int64_t v = integer("an integer");
    expectPunct(")");
    return std::vector<int64_t>(static_cast<size_t>(n), v);
  }
  if (!isPunct("["))
    error(at, fmt::format("expected integer constant data: '[...]' or 'splat(V)', found {}",
                          detail::describe(cur())));
  next();
  std::vector<int64_t> d;
  if (!accept("]")) {
    do
      d.push_back(integer("an integer"));
    while (accept(","));
    expectPunct("]");
  }
  return d;
}

// %y: f32[...], %z: f32[...] = Op "name"(%a, <none>, %b) {k=v, ...}
void Parser::node() {
  std::vector<Token> names;
  std::vector<std::pair<DType, Shape>> types;
  do {
    DType dt;
    Shape s;
    names.push_back(typedName(dt, s));
    types.emplace_back(dt, std::move(s));
  } while (accept(","));
  expectPunct("=");
  const Token &opTok = expect(Tok::Ident, "an operator (e.g. Conv)");
  const Token &nameTok = expect(Tok::String, "the node's name (a string)");
  const std::optional<OpKind> op = opFromName(opTok.text);
  if (!op) // the importer's message for an operator outside graph/Ops.def
    error(opTok, fmt::format("node '{}' ({}): unsupported operator", nameTok.text, opTok.text));
  if (nodesByName_.count(nameTok.text))
    error(nameTok, fmt::format("node \"{}\" is already defined", nameTok.text));
  expectPunct("(");
  std::vector<ValueId> ins;
  if (!accept(")")) {
    do
      ins.push_back(use());
    while (accept(","));
    expectPunct(")");
  }
  std::map<std::string, AttrValue> attrs;
  if (accept("{")) {
    do {
      const Token &k = expect(Tok::Ident, "an attribute name");
      if (attrs.count(k.text))
        error(k, fmt::format("attribute '{}' is given twice", k.text));
      expectPunct("=");
      attrs[k.text] = attrValue();
    } while (accept(","));
    expectPunct("}");
  }
  std::vector<ValueId> outs;
  for (size_t i = 0; i < names.size(); ++i)
    outs.push_back(declare(types[i].first, types[i].second, names[i]));
  NodeId n = g_.addNode(*op, nameTok.text, std::move(ins), std::move(outs));
  g_.node(n).attrs = std::move(attrs);
  nodesByName_[nameTok.text] = n;
  checkShapes(n, opTok);
}

// A scalar attribute: an integer unless written with a '.', an exponent, inf or nan.
AttrValue Parser::scalarAttr() {
  bool neg = accept("-");
  double v = 0;
  if (isIdent("inf")) {
    next();
    v = std::numeric_limits<double>::infinity();
  } else if (isIdent("nan")) {
    next();
    v = std::numeric_limits<double>::quiet_NaN();
  } else if (cur().kind == Tok::Float) {
    v = std::strtod(next().text.c_str(), nullptr);
  } else {
    const Token &t = expect(Tok::Int, "an attribute value (number, string or list)");
    errno = 0;
    long long i = std::strtoll(t.text.c_str(), nullptr, 10);
    if (errno == ERANGE)
      error(t, fmt::format("integer {} is out of range", t.text));
    return static_cast<int64_t>(neg ? -i : i);
  }
  return neg ? -v : v;
}

// 3, -1.5, "s", [1, 2], [0.5, 1.0], f64[]
AttrValue Parser::attrValue() {
  if (cur().kind == Tok::String)
    return next().text;
  if (isIdent("f64")) {
    next();
    expectPunct("[");
    expectPunct("]");
    return std::vector<double>{};
  }
  if (!accept("["))
    return scalarAttr();
  std::vector<int64_t> ints;
  std::vector<double> floats;
  const Token &first = cur();
  if (!accept("]")) {
    do {
      AttrValue a = scalarAttr();
      if (auto *i = std::get_if<int64_t>(&a))
        ints.push_back(*i);
      else
        floats.push_back(std::get<double>(a));
    } while (accept(","));
    expectPunct("]");
  }
  if (!ints.empty() && !floats.empty())
    error(first, "a list attribute mixes integers and floats (write every float with a '.')");
  if (!floats.empty())
    return floats;
  return ints;
}

// The declared output types must be what shape inference gives: the text cannot describe a
// graph the passes would see differently after a re-inference.
void Parser::checkShapes(NodeId n, const Token &at) {
  const Node &node = g_.node(n);
  std::vector<std::pair<DType, Shape>> declared;
  for (ValueId o : node.outputs)
    declared.emplace_back(g_.value(o).dtype, g_.value(o).shape);
  try {
    inferNodeShape(g_, n);
  } catch (const npuc::Error &e) {
    error(at, e.what());
  }
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    Value &v = g_.value(node.outputs[i]);
    if (v.dtype != declared[i].first || v.shape != declared[i].second)
      error(at, fmt::format("node \"{}\" ({}): output '%{}' is declared {}[{}] but the op gives "
                            "{}[{}]",
                            node.name, opName(node.kind), v.name, dtypeName(declared[i].first),
                            fmt::join(declared[i].second, "x"), dtypeName(v.dtype),
                            fmt::join(v.shape, "x")));
  }
}

NodeId Parser::nodeRef() {
  const Token &t = expect(Tok::String, "a node name (a string)");
  auto it = nodesByName_.find(t.text);
  if (it == nodesByName_.end())
    error(t, fmt::format("unknown node \"{}\"", t.text));
  return it->second;
}

// group ID "name" on PLACEMENT anchor "n" nodes ["n", ...] inputs [%v, ...] outputs [%v, ...]
//   [reason "..."] [note "..."]
void Parser::group() {
  next();
  FusedGroup grp;
  const Token &idTok = cur();
  grp.id = static_cast<int>(integer("the group's id (an integer)"));
  if (grp.id != static_cast<int>(g_.groups.size()))
    error(idTok, fmt::format("group ids count up from 0 in order: expected {}, found {}",
                             g_.groups.size(), grp.id));
  grp.name = expect(Tok::String, "the group's name (a string)").text;
  expectIdent("on");
  const Token &p = expect(Tok::Ident, "a placement (unassigned, npu, cpu)");
  if (p.text == "npu")
    grp.placement = Placement::Npu;
  else if (p.text == "cpu")
    grp.placement = Placement::Cpu;
  else if (p.text == "unassigned")
    grp.placement = Placement::Unassigned;
  else
    error(p, fmt::format("unknown placement '{}' (known: unassigned, npu, cpu)", p.text));
  expectIdent("anchor");
  grp.anchor = nodeRef();
  expectIdent("nodes");
  expectPunct("[");
  do
    grp.nodes.push_back(nodeRef());
  while (accept(","));
  expectPunct("]");
  auto valueList = [&](const char *word, std::vector<ValueId> &vs) {
    expectIdent(word);
    expectPunct("[");
    if (accept("]"))
      return;
    do
      vs.push_back(use());
    while (accept(","));
    expectPunct("]");
  };
  valueList("inputs", grp.inputs);
  valueList("outputs", grp.outputs);
  if (isIdent("reason")) {
    next();
    grp.cpuReason = expect(Tok::String, "the reason (a string)").text;
  }
  if (isIdent("note")) {
    next();
    grp.note = expect(Tok::String, "the note (a string)").text;
  }
  g_.groups.push_back(std::move(grp));
}

} // namespace

Graph parseGraphText(const std::string &text, const TextSource &src) {
  return Parser(text, src).run();
}

} // namespace npuc::graph
