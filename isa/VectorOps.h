// VectorOps.h - the vector unit's operations as an enum with their properties and scalar
// semantics, all generated from the one table isa/VectorOps.def.
//
// Targets name ops by string only in their YAML (and assembly): the loader maps each name to a
// VecOp through vecOpFromName and rejects unknown ones, so that everything past loading (the
// simulator, instruction selection, the compiler's epilogues, the RTL generator) works with the
// enum and asks the table, not a list of names of its own, what an op reads.
#pragma once

#include "isa/VectorMath.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>

namespace npuc::isa {

enum class VecOp {
#define NPUC_VEC_OP(E, NAME, SRCS, IMMS, READS_DST, RTL, RESULT) E,
#include "isa/VectorOps.def"
};

/// Every op, in table order (for enumerating the table, e.g. in messages and generators).
inline constexpr VecOp kAllVecOps[] = {
#define NPUC_VEC_OP(E, NAME, SRCS, IMMS, READS_DST, RTL, RESULT) VecOp::E,
#include "isa/VectorOps.def"
};

/// How targets and assembly spell the op ("muladd").
const char *vecOpName(VecOp op);
/// The op a name spells; nullopt for a name that is no vector op.
std::optional<VecOp> vecOpFromName(std::string_view name);
/// Every op name in table order, joined by ", " (for messages listing the known ops).
std::string vecOpNameList();

namespace detail {
struct VecOpInfo {
  int srcs;      // source operands read: 1 or 2
  int imms;      // immediates read (imm0, imm1 in order)
  bool readsDst; // reads the destination element before writing it
  bool rtl;      // implemented by the RTL core's vector unit
};
inline constexpr VecOpInfo kVecOpInfo[] = {
#define NPUC_VEC_OP(E, NAME, SRCS, IMMS, READS_DST, RTL, RESULT) {SRCS, IMMS, READS_DST, RTL},
#include "isa/VectorOps.def"
};
constexpr const VecOpInfo &info(VecOp op) {
  return kVecOpInfo[static_cast<int>(op)];
}
} // namespace detail

/// Source operands the op reads: 1 (src1) or 2 (src1 and src2).
constexpr int vecOpSources(VecOp op) {
  return detail::info(op).srcs;
}
/// Whether the op reads its second source operand.
constexpr bool vecOpReadsSrc2(VecOp op) {
  return vecOpSources(op) == 2;
}
/// How many immediates (imm0, imm1) the op reads; 0 when they are ignored.
constexpr int vecOpImmediates(VecOp op) {
  return detail::info(op).imms;
}
/// Whether the op reads its destination before writing it (accumulating ops: `mac`).
constexpr bool vecOpReadsDst(VecOp op) {
  return detail::info(op).readsDst;
}
/// Whether the RTL core's vector unit implements the op (docs/RTL.md).
constexpr bool vecOpInRtl(VecOp op) {
  return detail::info(op).rtl;
}

namespace detail {
/// x * y, rounded to fp32 before anything is added to it: the vector unit has no fused
/// multiply-add (muladd and mac round twice).
inline float product(float x, float y) {
  return x * y;
}
} // namespace detail

/// One element of OP in fp32 (docs/ISA.md "vector"): a = src1, b = src2, c = the destination's
/// old value. `b` is ignored by ops that read one source, `c` by ops that do not read their
/// destination, the immediates by ops that take none.
template <VecOp OP> inline float vecOpApply(float a, float b, float c, float imm0, float imm1) {
  using detail::product;
#define NPUC_VEC_OP(E, NAME, SRCS, IMMS, READS_DST, RTL, RESULT)                                   \
  if constexpr (OP == VecOp::E)                                                                    \
    return RESULT;                                                                                 \
  else
#include "isa/VectorOps.def"
  static_assert(static_cast<int>(OP) < 0, "every VecOp has a row in VectorOps.def");
}

} // namespace npuc::isa
