// Prover.cpp - rules first, then a Z3 query with the variables' ranges as assumptions.
#include "tir/Prover.h"

#include "tir/IRVisitor.h"
#include "tir/Printer.h"

#include <fmt/format.h>
#include <z3++.h>

#include <optional>
#include <string>
#include <unordered_map>

namespace npuc::tir {
namespace {

class VarCollector : public IRVisitor {
public:
  std::vector<const VarNode *> vars;
  void visitVar(const VarNode *op) override {
    for (const VarNode *v : vars)
      if (v == op)
        return;
    vars.push_back(op);
  }
};

// TIR integer expression -> Z3 integer term (bool expressions -> Z3 bool terms).
class ToZ3 {
public:
  explicit ToZ3(z3::context &ctx) : ctx_(ctx) {}
  std::unordered_map<const VarNode *, z3::expr> vars;

  std::optional<z3::expr> conv(const Expr &e) {
    if (!e.type().isIntegral())
      return std::nullopt;
    switch (e.kind()) {
    case NodeKind::IntImm: {
      int64_t v = e.as<IntImmNode>()->value;
      if (e.type().isBool())
        return ctx_.bool_val(v != 0);
      return ctx_.int_val(v);
    }
    case NodeKind::Var: {
      const auto *v = e.as<VarNode>();
      if (e.type().isBool())
        return std::nullopt;
      auto it = vars.find(v);
      if (it == vars.end())
        it = vars.emplace(v, ctx_.int_const(fmt::format("v{}", vars.size()).c_str())).first;
      return it->second;
    }
    case NodeKind::Not: {
      auto a = conv(e.as<NotNode>()->a);
      return a ? std::optional<z3::expr>(!*a) : std::nullopt;
    }
    case NodeKind::Select: {
      const auto *op = e.as<SelectNode>();
      auto c = conv(op->cond), t = conv(op->trueValue), f = conv(op->falseValue);
      if (!c || !t || !f)
        return std::nullopt;
      return z3::ite(*c, *t, *f);
    }
    case NodeKind::Cast: {
      const auto *op = e.as<CastNode>();
      auto v = conv(op->value);
      if (!v)
        return std::nullopt;
      // Only value-preserving integer casts: widening to int64, or bool to an integer.
      if (op->value.type().isBool() && !e.type().isBool())
        return z3::ite(*v, ctx_.int_val(1), ctx_.int_val(0));
      if (e.type().isInt() && e.type().bits == 64 && !op->value.type().isBool())
        return v;
      return std::nullopt;
    }
    default:
      break;
    }
    if (!isBinary(e.kind()))
      return std::nullopt;
    const auto *op = static_cast<const BinaryNode *>(e.get());
    auto a = conv(op->a), b = conv(op->b);
    if (!a || !b)
      return std::nullopt;
    z3::expr x = *a, y = *b;
    switch (e.kind()) {
    case NodeKind::Add:
      return x + y;
    case NodeKind::Sub:
      return x - y;
    case NodeKind::Mul:
      return x * y;
    case NodeKind::FloorDiv:
      return floorDiv(x, y);
    case NodeKind::FloorMod:
      return x - y * floorDiv(x, y);
    case NodeKind::Div:
      return truncDiv(x, y);
    case NodeKind::Mod:
      return x - y * truncDiv(x, y);
    case NodeKind::Min:
      return z3::ite(x <= y, x, y);
    case NodeKind::Max:
      return z3::ite(x >= y, x, y);
    case NodeKind::EQ:
      return x == y;
    case NodeKind::NE:
      return x != y;
    case NodeKind::LT:
      return x < y;
    case NodeKind::LE:
      return x <= y;
    case NodeKind::GT:
      return x > y;
    case NodeKind::GE:
      return x >= y;
    case NodeKind::And:
      return x && y;
    case NodeKind::Or:
      return x || y;
    default:
      return std::nullopt;
    }
  }

private:
  z3::context &ctx_;

  // Z3's integer division is Euclidean (remainder >= 0); floor(x/y) == floor(-x/-y), and for a
  // positive divisor the Euclidean quotient is the floor.
  z3::expr floorDiv(const z3::expr &x, const z3::expr &y) {
    return z3::ite(y > 0, x / y, (-x) / (-y));
  }
  z3::expr truncDiv(const z3::expr &x, const z3::expr &y) {
    z3::expr ax = z3::ite(x >= 0, x, -x), ay = z3::ite(y >= 0, y, -y);
    z3::expr q = ax / ay; // |x| / |y| rounds toward zero
    return z3::ite((x >= 0) == (y >= 0), q, -q);
  }
};

} // namespace

std::optional<Truth> ProverCache::find(const std::string &key) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = answers_.find(key);
  if (it == answers_.end())
    return std::nullopt;
  return it->second;
}

void ProverCache::insert(const std::string &key, Truth t) {
  std::lock_guard<std::mutex> lock(mutex_);
  answers_[key] = t;
}

size_t ProverCache::size() {
  std::lock_guard<std::mutex> lock(mutex_);
  return answers_.size();
}

Truth Prover::decide(const Expr &cond) {
  if (!cond.defined() || !cond.type().isBool())
    return Truth::Unknown;
  if (opts_.useRules) {
    Truth t = bounds_.decide(cond);
    if (t != Truth::Unknown) {
      ++stats_.byRules;
      return t;
    }
  }
  if (!opts_.useZ3) {
    ++stats_.unknown;
    return Truth::Unknown;
  }
  Truth t = z3Decide(cond);
  if (t == Truth::Unknown)
    ++stats_.unknown;
  return t;
}

Truth Prover::z3Decide(const Expr &cond) {
  VarCollector vc;
  vc.visit(cond);
  std::string key = toText(cond) + " |";
  for (const VarNode *v : vc.vars) {
    auto it = bounds_.ranges().find(v);
    if (it == bounds_.ranges().end())
      key += " *";
    else
      key += fmt::format(" {}..{}", it->second.lo, it->second.hi);
  }
  key += fmt::format(" |{}", opts_.timeoutMs);
  if (opts_.cache) {
    if (std::optional<Truth> known = opts_.cache->find(key)) {
      ++stats_.cacheHits;
      return *known;
    }
  }

  z3::context ctx;
  ToZ3 conv(ctx);
  std::optional<z3::expr> f = conv.conv(cond);
  Truth result = Truth::Unknown;
  if (f) {
    z3::solver s(ctx);
    z3::params p(ctx);
    p.set("timeout", opts_.timeoutMs);
    s.set(p);
    for (const auto &[v, z] : conv.vars) {
      auto it = bounds_.ranges().find(v);
      if (it == bounds_.ranges().end())
        continue;
      if (it->second.lo != Interval::kNegInf)
        s.add(z >= ctx.int_val(it->second.lo));
      if (it->second.hi != Interval::kPosInf)
        s.add(z <= ctx.int_val(it->second.hi));
    }
    // Always true when its negation has no model; always false when it has none itself.
    s.push();
    s.add(!*f);
    z3::check_result notCond = s.check();
    s.pop();
    if (notCond == z3::unsat) {
      result = Truth::True;
    } else {
      s.add(*f);
      if (s.check() == z3::unsat)
        result = Truth::False;
    }
  }
  if (result != Truth::Unknown)
    ++stats_.byZ3;
  if (opts_.cache)
    opts_.cache->insert(key, result);
  return result;
}

} // namespace npuc::tir
