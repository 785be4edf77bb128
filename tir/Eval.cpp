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

int64_t wrapInt(int64_t v, DataType t) {
  if (t.isBool())
    return v != 0;
  if (t.bits >= 64)
    return v;
  uint64_t mask = (uint64_t{1} << t.bits) - 1, u = static_cast<uint64_t>(v) & mask;
  if (t.isInt() && ((u >> (t.bits - 1)) & 1))
    u |= ~mask; // sign-extend
  return static_cast<int64_t>(u);
}

namespace {

// Signed types of 32 bits and more have no defined overflow (see Eval.h).
bool overflowUndefined(DataType t) {
  return t.isInt() && t.bits >= 32;
}

// +, - or * in type t: wrapped where t wraps, refused where its overflow is undefined.
bool arith(NodeKind k, int64_t a, int64_t b, DataType t, int64_t &out) {
  if (!overflowUndefined(t)) { // the low bits of the two's-complement result
    uint64_t ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
    uint64_t r = k == NodeKind::Add ? ua + ub : k == NodeKind::Sub ? ua - ub : ua * ub;
    out = wrapInt(static_cast<int64_t>(r), t);
    return true;
  }
  // Exact: the operands are at most 2^63 in magnitude, so even their product fits 128 bits.
  __int128 x = a, y = b;
  __int128 r = k == NodeKind::Add ? x + y : k == NodeKind::Sub ? x - y : x * y;
  __int128 hi = (static_cast<__int128>(1) << (t.bits - 1)) - 1;
  if (r < -hi - 1 || r > hi)
    return false;
  out = static_cast<int64_t>(r);
  return true;
}

} // namespace

bool foldIntBinary(NodeKind k, int64_t a, int64_t b, DataType t, int64_t &out) {
  const bool u64 = t.isUInt() && t.bits >= 64;
  switch (k) {
  case NodeKind::Add:
  case NodeKind::Sub:
  case NodeKind::Mul:
    return arith(k, a, b, t, out);
  case NodeKind::Div:
  case NodeKind::Mod:
  case NodeKind::FloorDiv:
  case NodeKind::FloorMod:
    if (b == 0)
      return false;
    if (u64) { // unsigned: truncation and floor agree
      uint64_t ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
      out = static_cast<int64_t>(k == NodeKind::Div || k == NodeKind::FloorDiv ? ua / ub : ua % ub);
      return true;
    }
    if (a == INT64_MIN && b == -1) // the quotient 2^63 exists in no 64-bit signed type
      return false;
    out = k == NodeKind::Div        ? a / b
          : k == NodeKind::Mod      ? a % b
          : k == NodeKind::FloorDiv ? floorDivInt(a, b)
                                    : floorModInt(a, b);
    // The quotient of int32(-2^31) by -1 leaves int32; int8/int16 wrap it back.
    if (overflowUndefined(t) && wrapInt(out, t) != out)
      return false;
    out = wrapInt(out, t);
    return true;
  case NodeKind::Min:
  case NodeKind::Max: {
    bool less = u64 ? static_cast<uint64_t>(a) < static_cast<uint64_t>(b) : a < b;
    out = (k == NodeKind::Min) == less ? a : b;
    return true;
  }
  case NodeKind::EQ:
    out = a == b;
    return true;
  case NodeKind::NE:
    out = a != b;
    return true;
  case NodeKind::LT:
  case NodeKind::LE:
  case NodeKind::GT:
  case NodeKind::GE: {
    // a < b, a <= b, ... as a three-way comparison in the operands' signedness.
    int cmp = u64 ? (static_cast<uint64_t>(a) < static_cast<uint64_t>(b)   ? -1
                     : static_cast<uint64_t>(a) > static_cast<uint64_t>(b) ? 1
                                                                           : 0)
                  : (a < b   ? -1
                     : a > b ? 1
                             : 0);
    out = k == NodeKind::LT   ? cmp < 0
          : k == NodeKind::LE ? cmp <= 0
          : k == NodeKind::GT ? cmp > 0
                              : cmp >= 0;
    return true;
  }
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
    return wrapInt(evalInt(op->value, env), op->type);
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
  bool ok = foldIntBinary(e.kind(), evalInt(op->a, env), evalInt(op->b, env), op->a.type(), out);
  NPUC_ASSERT(ok, "evalInt: division by zero or signed overflow in " + toText(e));
  return out;
}

} // namespace npuc::tir
