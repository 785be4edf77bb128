// Printer.cpp - the TIR text printer (see Printer.h for the syntax).
#include "tir/Printer.h"

#include "support/Error.h"

#include <fmt/format.h>

#include <cmath>
#include <set>
#include <unordered_map>

namespace npuc::tir {
namespace {

// Binding strength of infix operators; calls, loads and literals are atoms.
int precedence(NodeKind k) {
  switch (k) {
  case NodeKind::Or:
    return 1;
  case NodeKind::And:
    return 2;
  case NodeKind::EQ:
  case NodeKind::NE:
    return 3;
  case NodeKind::LT:
  case NodeKind::LE:
  case NodeKind::GT:
  case NodeKind::GE:
    return 4;
  case NodeKind::Add:
  case NodeKind::Sub:
    return 5;
  case NodeKind::Mul:
  case NodeKind::Div:
  case NodeKind::Mod:
    return 6;
  case NodeKind::Not:
    return 7;
  default:
    return 100;
  }
}

bool isInfix(NodeKind k) {
  return isBinary(k) && precedence(k) < 100;
}

class Printer {
public:
  std::string out;

  std::string name(const VarNode *v) { return uniqueName(v, v->name); }
  std::string name(const BufferNode *b) { return uniqueName(b, b->name); }

  std::string bufferDecl(const Buffer &b) {
    std::string s = name(b.get());
    s += ": " + toString(b->dtype) + "[";
    for (size_t i = 0; i < b->shape.size(); ++i)
      s += (i ? ", " : "") + std::to_string(b->shape[i]);
    return s + "] @" + b->scope;
  }

  std::string expr(const Expr &e) {
    if (!e.defined())
      return "<null>";
    switch (e.kind()) {
    case NodeKind::IntImm: {
      const auto *op = e.as<IntImmNode>();
      if (op->type == DataType::Int(64))
        return std::to_string(op->value);
      if (op->type.isBool())
        return op->value ? "true" : "false";
      if (op->type.isUInt() && op->type.bits >= 64) // the value is the bit pattern
        return toString(op->type) + "(" + std::to_string(static_cast<uint64_t>(op->value)) + ")";
      return toString(op->type) + "(" + std::to_string(op->value) + ")";
    }
    case NodeKind::FloatImm: {
      const auto *op = e.as<FloatImmNode>();
      std::string s = op->type.bits == 32 ? fmt::format("{}", static_cast<float>(op->value))
                                          : fmt::format("{}", op->value);
      if (s.find_first_of(".eni") == std::string::npos)
        s += ".0";
      if (op->type.bits == 32 && std::isfinite(op->value))
        return s + "f";
      return toString(op->type) + "(" + s + ")";
    }
    case NodeKind::Var:
      return name(static_cast<const VarNode *>(e.get()));
    case NodeKind::Not: {
      const auto *op = e.as<NotNode>();
      // Appending (not "!" + s) sidesteps a GCC 12 -Wrestrict false positive.
      std::string s = "!";
      s += operand(op->a, precedence(NodeKind::Not), false);
      return s;
    }
    case NodeKind::Select: {
      const auto *op = e.as<SelectNode>();
      std::string c = expr(op->cond);
      std::string t = expr(op->trueValue);
      return "select(" + c + ", " + t + ", " + expr(op->falseValue) + ")";
    }
    case NodeKind::Cast: {
      const auto *op = e.as<CastNode>();
      return toString(op->type) + "(" + expr(op->value) + ")";
    }
    case NodeKind::Load: {
      const auto *op = e.as<LoadNode>();
      std::string b = name(op->buffer.get());
      return b + "[" + expr(op->index) + "]";
    }
    case NodeKind::Call: {
      const auto *op = e.as<CallNode>();
      std::string s = op->name + "(";
      for (size_t i = 0; i < op->args.size(); ++i)
        s += (i ? ", " : "") + expr(op->args[i]);
      return s + ")";
    }
    default:
      break;
    }
    NPUC_ASSERT(isBinary(e.kind()), std::string("printer: unhandled kind ") + kindName(e.kind()));
    const auto *op = static_cast<const BinaryNode *>(e.get());
    // Operands are printed into locals first: the evaluation order of a chain of `+` is
    // unspecified, and first-appearance naming must follow left-to-right order.
    if (!isInfix(e.kind())) {
      std::string a = expr(op->a);
      return std::string(binarySymbol(e.kind())) + "(" + a + ", " + expr(op->b) + ")";
    }
    int p = precedence(e.kind());
    std::string a = operand(op->a, p, false);
    return a + " " + binarySymbol(e.kind()) + " " + operand(op->b, p, true);
  }

  void stmt(const Stmt &s, int indent) {
    std::string pad(static_cast<size_t>(indent) * 2, ' ');
    switch (s.kind()) {
    case NodeKind::For: {
      const auto *op = s.as<ForNode>();
      std::string prefix = op->forKind == ForKind::Serial ? "" : forKindName(op->forKind);
      if (!prefix.empty())
        prefix += " ";
      std::string v = name(op->var.node());
      std::string mn = expr(op->min);
      line(pad + prefix + "for (" + v + ", " + mn + ", " + expr(op->extent) + ") {");
      stmt(op->body, indent + 1);
      line(pad + "}");
      return;
    }
    case NodeKind::IfThenElse: {
      const auto *op = s.as<IfThenElseNode>();
      line(pad + "if (" + expr(op->cond) + ") {");
      stmt(op->thenCase, indent + 1);
      if (op->elseCase.defined()) {
        line(pad + "} else {");
        stmt(op->elseCase, indent + 1);
      }
      line(pad + "}");
      return;
    }
    case NodeKind::Store: {
      const auto *op = s.as<StoreNode>();
      std::string b = name(op->buffer.get());
      std::string idx = expr(op->index);
      line(pad + b + "[" + idx + "] = " + expr(op->value));
      return;
    }
    case NodeKind::Allocate: {
      const auto *op = s.as<AllocateNode>();
      line(pad + "allocate " + bufferDecl(op->buffer) + " {");
      stmt(op->body, indent + 1);
      line(pad + "}");
      return;
    }
    case NodeKind::Seq:
      for (const Stmt &c : s.as<SeqNode>()->stmts)
        stmt(c, indent);
      return;
    case NodeKind::Evaluate:
      line(pad + expr(s.as<EvaluateNode>()->value));
      return;
    case NodeKind::AttrStmt: {
      const auto *op = s.as<AttrStmtNode>();
      line(pad + "attr " + op->key + " = " + expr(op->value) + " {");
      stmt(op->body, indent + 1);
      line(pad + "}");
      return;
    }
    case NodeKind::NpuOp: {
      const auto *op = s.as<NpuOpNode>();
      std::string t = pad + "npu." + op->mnemonic + "(";
      for (size_t i = 0; i < op->fields.size(); ++i)
        t += (i ? ", " : "") + op->fields[i].first + "=" + expr(op->fields[i].second);
      line(t + ")");
      return;
    }
    default:
      NPUC_ASSERT(false, std::string("printer: unhandled statement ") + kindName(s.kind()));
    }
  }

private:
  std::unordered_map<const void *, std::string> names_;
  std::set<std::string> used_;

  std::string uniqueName(const void *key, const std::string &base) {
    auto it = names_.find(key);
    if (it != names_.end())
      return it->second;
    std::string n = base.empty() ? "v" : base;
    for (int k = 1; used_.count(n); ++k)
      n = (base.empty() ? "v" : base) + "_" + std::to_string(k);
    used_.insert(n);
    names_.emplace(key, n);
    return n;
  }

  // Left operands need parentheses when they bind more loosely; right operands also when they
  // bind equally (a - (b - c)), so the text re-reads with left-to-right associativity.
  std::string operand(const Expr &e, int parentPrec, bool right) {
    std::string s = expr(e);
    int p = e.defined() ? precedence(e.kind()) : 100;
    if (p < parentPrec || (right && p == parentPrec))
      return "(" + s + ")";
    return s;
  }

  void line(const std::string &l) { out += l + "\n"; }
};

} // namespace

std::string toText(const Expr &e) {
  return Printer().expr(e);
}

std::string toText(const Stmt &s) {
  Printer p;
  if (s.defined())
    p.stmt(s, 0);
  return p.out;
}

std::string toText(const PrimFunc &f) {
  Printer p;
  std::string head = "func " + f.name + "(";
  for (size_t i = 0; i < f.params.size(); ++i)
    head += (i ? ", " : "") + p.bufferDecl(f.params[i]);
  p.out += head + ") {\n";
  if (f.body.defined())
    p.stmt(f.body, 1);
  p.out += "}\n";
  return p.out;
}

} // namespace npuc::tir
