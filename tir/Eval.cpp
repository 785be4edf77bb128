// Eval.cpp - integer evaluation of TIR expressions.
#include "tir/Eval.h"

#include "support/Error.h"
#include "tir/Printer.h"

namespace npuc::tir {

int64_t floorDivInt(int64_t a, int64_t b) {
  int64_t q = a / b, r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? q - 1 : q;
}

int64_t floorModInt(int64_t a, int64_t b) {
  int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

bool foldIntBinary(NodeKind k, int64_t a, int64_t b, int64_t &out) {
  switch (k) {
  case NodeKind::Add:
    out = static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
    return true;
  case NodeKind::Sub:
    out = static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
    return true;
  case NodeKind::Mul:
    out = static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
    return true;
  case NodeKind::Div:
  case NodeKind::Mod:
  case NodeKind::FloorDiv:
  case NodeKind::FloorMod:
    if (b == 0 || (a == INT64_MIN && b == -1))
      return false;
    out = k == NodeKind::Div        ? a / b
          : k == NodeKind::Mod      ? a % b
          : k == NodeKind::FloorDiv ? floorDivInt(a, b)
                                    : floorModInt(a, b);
    return true;
  case NodeKind::Min:
    out = a < b ? a : b;
    return true;
  case NodeKind::Max:
    out = a > b ? a : b;
    return true;
  case NodeKind::EQ:
    out = a == b;
    return true;
  case NodeKind::NE:
    out = a != b;
    return true;
  case NodeKind::LT:
    out = a < b;
    return true;
  case NodeKind::LE:
    out = a <= b;
    return true;
  case NodeKind::GT:
    out = a > b;
    return true;
  case NodeKind::GE:
    out = a >= b;
    return true;
  case NodeKind::And:
    out = (a != 0) && (b != 0);
    return true;
  case NodeKind::Or:
    out = (a != 0) || (b != 0);
    return true;
  default:
    return false;
  }
}

int64_t evalInt(const Expr &e, const std::unordered_map<const void *, int64_t> &env) {
  NPUC_ASSERT(e.defined(), "evalInt of a null expression");
  NPUC_ASSERT(e.type().isIntegral(), "evalInt of a non-integer expression: " + toText(e));
  switch (e.kind()) {
  case NodeKind::IntImm:
    return e.as<IntImmNode>()->value;
  case NodeKind::Var: {
    auto it = env.find(e.get());
    NPUC_ASSERT(it != env.end(), "evalInt: unbound variable " + e.as<VarNode>()->name);
    return it->second;
  }
  case NodeKind::Not:
    return evalInt(e.as<NotNode>()->a, env) == 0;
  case NodeKind::Select: {
    const auto *op = e.as<SelectNode>();
    return evalInt(op->cond, env) ? evalInt(op->trueValue, env) : evalInt(op->falseValue, env);
  }
  case NodeKind::Cast: {
    const auto *op = e.as<CastNode>();
    int64_t v = evalInt(op->value, env);
    if (op->type.isBool())
      return v != 0;
    if (op->type.bits < 64) {
      uint64_t mask = (uint64_t{1} << op->type.bits) - 1;
      uint64_t u = static_cast<uint64_t>(v) & mask;
      if (op->type.isInt() && (u >> (op->type.bits - 1)) & 1)
        u |= ~mask; // sign-extend
      return static_cast<int64_t>(u);
    }
    return v;
  }
  default:
    break;
  }
  NPUC_ASSERT(isBinary(e.kind()),
              std::string("evalInt: cannot evaluate ") + kindName(e.kind()) + " in " + toText(e));
  const auto *op = static_cast<const BinaryNode *>(e.get());
  // Short-circuit so that guards like `b != 0 && a / b > 1` evaluate as in C.
  if (e.kind() == NodeKind::And && evalInt(op->a, env) == 0)
    return 0;
  if (e.kind() == NodeKind::Or && evalInt(op->a, env) != 0)
    return 1;
  int64_t out = 0;
  bool ok = foldIntBinary(e.kind(), evalInt(op->a, env), evalInt(op->b, env), out);
  NPUC_ASSERT(ok, "evalInt: division by zero in " + toText(e));
  return out;
}

} // namespace npuc::tir
