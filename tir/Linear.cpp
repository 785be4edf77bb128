// Linear.cpp - the recursive decomposition of Linear.h.
#include "tir/Linear.h"

#include "tir/Simplify.h"
#include "tir/Substitute.h"

namespace npuc::tir {
namespace {

bool split(const Expr &e, const VarNode *v, int64_t &coeff, Expr &rest) {
  if (!usesVar(e, v)) {
    coeff = 0;
    rest = e;
    return true;
  }
  if (e.get() == v) {
    coeff = 1;
    rest = IntImmNode::make(0, e.type());
    return true;
  }
  int64_t ca = 0, cb = 0;
  Expr ra, rb;
  if (const auto *op = e.as<AddNode>()) {
    if (!split(op->a, v, ca, ra) || !split(op->b, v, cb, rb))
      return false;
    if (__builtin_add_overflow(ca, cb, &coeff))
      return false;
    rest = ra + rb;
    return true;
  }
  if (const auto *op = e.as<SubNode>()) {
    if (!split(op->a, v, ca, ra) || !split(op->b, v, cb, rb))
      return false;
    if (__builtin_sub_overflow(ca, cb, &coeff))
      return false;
    rest = ra - rb;
    return true;
  }
  if (const auto *op = e.as<MulNode>()) {
    const auto *k = op->b.as<IntImmNode>();
    Expr x = op->a;
    if (!k) {
      k = op->a.as<IntImmNode>();
      x = op->b;
    }
    if (!k || !split(x, v, ca, ra))
      return false;
    if (__builtin_mul_overflow(ca, k->value, &coeff))
      return false;
    rest = ra * IntImmNode::make(k->value, e.type());
    return true;
  }
  return false;
}

} // namespace

bool linearIn(const Expr &e, const VarNode *v, int64_t &coeff, Expr &rest) {
  if (!e.type().isInt() || !split(e, v, coeff, rest))
    return false;
  rest = simplify(rest);
  return true;
}

} // namespace npuc::tir
