// Hw.h - the compiler's view of a target: which instruction implements each NPU primitive, which
// memory level plays which role, and the limits the instruction fields impose.
//
// Everything here is derived from the loaded isa::Target; nothing is typed in. A target that
// lacks a role (no DRAM->on-chip DMA, no matmul, ...) cannot run NPU groups at all, and
// Hw::derive says why.
#pragma once

#include "isa/Target.h"

#include <cstdint>
#include <string>

namespace npuc::npu {

struct Hw {
  const isa::Target *t = nullptr;
  const isa::InstrDesc *ld = nullptr;  // Dma with source fixed to DRAM
  const isa::InstrDesc *st = nullptr;  // Dma with destination fixed to DRAM
  const isa::InstrDesc *mov = nullptr; // Dma between on-chip levels
  const isa::InstrDesc *mm = nullptr;  // Matmul
  const isa::InstrDesc *vop = nullptr; // Vector
  int dram = -1, l1 = -1, l0a = -1, l0b = -1, acc = -1;
  int tensorRows = 16, tensorCols = 16;
  /// Element type of activations and weights in DRAM, L1 and L0: the tensor unit's operand dtype
  /// (fp16, or int8 on quantised targets, whose tensors carry scales: npu/hw/Quant.h).
  isa::ElemType act = isa::ElemType::F16;
  bool quantised() const { return act == isa::ElemType::I8; }
  int64_t actBytes() const { return isa::elemBytes(act); }

  /// Largest value an instruction's field can take (fixed fields: their value).
  static int64_t fieldMax(const isa::InstrDesc *d, const std::string &field);
  int64_t maxDim() const; // the smallest n0/n1/n2/m/k/n limit over the DMA, matmul and vector ops
  /// The largest on-chip element stride of a tile view: the on-chip sides of `ld` and `mov`
  /// (dst_s1/s2, and mov's src_s1/s2). A tile whose stride exceeds it cannot be encoded (e.g. a
  /// 2048 x 1000 weight block on npu-large's 8 MiB L1 with 20-bit strides), so kernels skip it.
  int64_t onChipStrideMax() const;
  int64_t alignment(int level) const { return t->levels.at(static_cast<size_t>(level)).alignment; }
  int64_t capacity(int level) const { return t->levels.at(static_cast<size_t>(level)).size; }
  bool vectorHas(isa::VecOp op) const { return t->vector.supports(op); }
  bool vectorReaches(int level) const;

  /// Derives the roles from a target. Returns an empty string on success, else the reason the
  /// target's NPU cannot run compiled groups.
  static std::string derive(const isa::Target &t, Hw &out);
};

/// fp32 bit pattern of a float, for imm0/imm1 fields.
int64_t floatBits(float f);

} // namespace npuc::npu
