// VectorOps.cpp - names of the vector ops (isa/VectorOps.h, isa/VectorOps.def).
#include "isa/VectorOps.h"

#include <iterator>

namespace npuc::isa {

namespace {

constexpr const char *kNames[] = {
#define NPUC_VEC_OP(E, NAME, SRCS, IMMS, READS_DST, RTL, RESULT) NAME,
#include "isa/VectorOps.def"
};
static_assert(std::size(kNames) == std::size(kAllVecOps), "one name per op");

} // namespace

const char *vecOpName(VecOp op) {
  return kNames[static_cast<int>(op)];
}

std::optional<VecOp> vecOpFromName(std::string_view name) {
  for (VecOp op : kAllVecOps)
    if (name == vecOpName(op))
      return op;
  return std::nullopt;
}

std::string vecOpNameList() {
  std::string out;
  for (VecOp op : kAllVecOps)
    out += (out.empty() ? "" : ", ") + std::string(vecOpName(op));
  return out;
}

} // namespace npuc::isa
