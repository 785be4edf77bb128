// Hw.cpp - deriving the compiler's roles (L1, L0A/B, accumulator, DMA kinds) from the target.
#include "npu/hw/Hw.h"

#include <algorithm>
#include <cstring>

namespace npuc::npu {

int64_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<int64_t>(u);
}

int64_t Hw::fieldMax(const isa::InstrDesc *d, const std::string &field) {
  if (auto it = d->fixed.find(field); it != d->fixed.end())
    return it->second;
  if (const isa::Field *f = d->field(field))
    return f->maxValue();
  return 0;
}

int64_t Hw::onChipStrideMax() const {
  int64_t m = INT64_MAX;
  for (const isa::InstrDesc *d : {ld, mov})
    for (const char *f : {"dst_s1", "dst_s2"})
      m = std::min(m, fieldMax(d, f));
  for (const char *f : {"src_s1", "src_s2"})
    m = std::min(m, fieldMax(mov, f));
  return m;
}

int64_t Hw::maxDim() const {
  int64_t m = INT64_MAX;
  for (const isa::InstrDesc *d : {ld, st, mov, vop})
    for (const char *f : {"n0", "n1", "n2"})
      m = std::min(m, fieldMax(d, f));
  for (const char *f : {"m", "k", "n"})
    m = std::min(m, fieldMax(mm, f));
  return m;
}

bool Hw::vectorReaches(int level) const {
  const auto &lv = t->vector.levels;
  return std::find(lv.begin(), lv.end(), level) != lv.end();
}

namespace {

bool fixedTo(const isa::InstrDesc *d, const char *field, int64_t v) {
  auto it = d->fixed.find(field);
  return it != d->fixed.end() && it->second == v;
}

} // namespace

std::string Hw::derive(const isa::Target &t, Hw &h) {
  h = Hw{};
  h.t = &t;
  h.dram = t.dramLevel();
  for (const isa::InstrDesc *d : t.instrsWith(isa::Semantics::Dma)) {
    bool srcDram = fixedTo(d, "src_space", h.dram);
    bool dstDram = fixedTo(d, "dst_space", h.dram);
    if (srcDram && !dstDram && !h.ld)
      h.ld = d;
    else if (dstDram && !srcDram && !h.st)
      h.st = d;
    else if (!srcDram && !dstDram && !h.mov && d->field("src_space") && d->field("dst_space"))
      h.mov = d;
  }
  auto mms = t.instrsWith(isa::Semantics::Matmul);
  auto vops = t.instrsWith(isa::Semantics::Vector);
  if (!h.ld)
    return "the target has no DMA instruction with src_space fixed to DRAM";
  if (!h.st)
    return "the target has no DMA instruction with dst_space fixed to DRAM";
  if (!h.mov)
    return "the target has no on-chip DMA instruction (src_space and dst_space both encoded)";
  if (mms.empty())
    return "the target has no matmul instruction";
  if (vops.empty())
    return "the target has no vector instruction";
  const bool fp16 =
      t.tensor.operandType == isa::ElemType::F16 && t.tensor.accType == isa::ElemType::F32;
  const bool int8 =
      t.tensor.operandType == isa::ElemType::I8 && t.tensor.accType == isa::ElemType::I32;
  if (!fp16 && !int8)
    return std::string("the NPU backend compiles for fp16 operands with fp32 accumulation or int8 "
                       "operands with int32 accumulation; this target's tensor unit uses ") +
           isa::elemTypeName(t.tensor.operandType) + "/" + isa::elemTypeName(t.tensor.accType);
  h.act = t.tensor.operandType;
  h.mm = mms.front();
  h.vop = vops.front();
  h.l0a = t.tensor.aLevel;
  h.l0b = t.tensor.bLevel;
  h.acc = t.tensor.accLevel;
  h.tensorRows = t.tensor.rows;
  h.tensorCols = t.tensor.cols;
  // L1: the largest on-chip level that is not one of the tensor unit's operand levels and that
  // the vector unit reaches (it stages tiles for both the tensor feed and the vector unit).
  int64_t best = -1;
  for (const auto &lv : t.levels) {
    if (lv.isDram || lv.index == h.l0a || lv.index == h.l0b || lv.index == h.acc)
      continue;
    if (!h.vectorReaches(lv.index))
      continue;
    if (lv.size > best) {
      best = lv.size;
      h.l1 = lv.index;
    }
  }
  if (h.l1 < 0)
    return "the target has no on-chip staging level (L1) that the vector unit can access";
  if (!h.vectorReaches(h.acc))
    return "the vector unit cannot access the accumulator level '" +
           t.levels.at(static_cast<size_t>(h.acc)).name + "'";
  if (!h.vectorHas(isa::VecOp::Copy))
    return "the vector unit has no 'copy' op";
  // int8: the epilogue dequantises the int32 accumulator with `mul` (per-channel scales) and
  // requantises with `muladd` into int8 (npu/kernels/Epilogue.cpp).
  for (isa::VecOp op : {isa::VecOp::Mul, isa::VecOp::MulAdd})
    if (int8 && !h.vectorHas(op))
      return std::string("int8 target: the vector unit has no '") + isa::vecOpName(op) +
             "' op to dequantise and requantise with";
  return "";
}

} // namespace npuc::npu
