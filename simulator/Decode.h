// Decode.h - the simulator's pre-decoded, validated form of a Program.
//
// isa::Instr stores fields by description slot and by name, which suits tools but is too slow to
// consult in the simulator's inner loops. Each instruction is therefore decoded once into a compact
// struct for its primitive (Dma / Matmul / Vector / Finish), with every operand validated (memory
// space exists, dtype code known, op code names one of the target's vector ops, token bits name
// real engines, every access inside its level). Errors are npuc::Error "instruction #I
// (mnemonic): ..." so that a malformed program never reaches the functional or timing model.
#pragma once

#include "isa/Program.h"
#include "isa/Target.h"
#include "support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace npuc::sim {

class Memory;

/// A strided 3-D operand: element (i0,i1,i2) lives at addr + elemBytes*sum(i_d*stride_d).
struct Operand {
  int level = -1;
  int64_t addr = 0;
  int elemBytes = 0;
  isa::ElemType type = isa::ElemType::F16; // meaningful for matmul/vector operands
  int64_t stride[3] = {0, 0, 0};
};

/// Byte range [lo, hi) an operand touches inside one level (empty when hi <= lo).
struct AccessRange {
  int level = -1;
  int64_t lo = 0, hi = 0;
};

/// The ranges of one instruction, stored inline (decoding allocates nothing per instruction):
/// at most three, one per operand (DMA source and destination; matmul A, B, C; vector src1, src2,
/// dst).
class AccessRanges {
public:
  static constexpr int kMax = 3;
  void push_back(const AccessRange &r) {
    NPUC_ASSERT(n_ < kMax, "an instruction has at most three operands");
    r_[n_++] = r;
  }
  const AccessRange *begin() const { return r_; }
  const AccessRange *end() const { return r_ + n_; }
  size_t size() const { return static_cast<size_t>(n_); }

private:
  AccessRange r_[kMax];
  int n_ = 0;
};

struct DmaOp {
  Operand src, dst;
  int64_t n[3] = {0, 0, 0};
  int64_t padLo[3] = {0, 0, 0}, padHi[3] = {0, 0, 0};
  uint64_t padValue = 0; // raw bit pattern, low elemBytes bytes used
  int64_t readElems = 0; // elements actually read from src (box minus padding)
};

struct MatmulOp {
  int64_t aAddr = 0, bAddr = 0, cAddr = 0;
  int64_t m = 0, k = 0, n = 0;
  bool accumulate = false;
};

struct VectorOp {
  isa::VecOp op = isa::VecOp::Copy; // the operands it reads: isa/VectorOps.def
  Operand dst, src1, src2;
  int64_t n[3] = {0, 0, 0};
  float imm0 = 0, imm1 = 0;
};

/// One decoded instruction.
struct Decoded {
  Decoded() : dma() {}
  isa::Semantics sem = isa::Semantics::Finish;
  int engine = -1; // -1 only for a Finish not bound to an engine
  uint32_t pop = 0, push = 0;
  int64_t index = 0; // program index
  const isa::InstrDesc *desc = nullptr;
  /// The operation: the member `sem` names (none for Finish). They share storage: a run decodes
  /// its whole program first, and a smaller Decoded is less memory to fill (and fault in).
  union {
    DmaOp dma;
    MatmulOp mm;
    VectorOp vec;
  };
  AccessRanges ranges;  // every on-chip or DRAM byte range read or written
  int64_t elements = 0; // elements moved (Dma) or computed (Vector)
  int64_t bytes = 0;    // bytes a Dma writes
  int64_t dramRead = 0, dramWritten = 0;
};

/// Decodes and validates every instruction of `p` against `t` and the sizes in `mem`.
/// Decoding stops after the first Finish; instructions after it are an error.
std::vector<Decoded> decodeProgram(const isa::Target &t, const isa::Program &p, const Memory &mem);

/// "instruction #I (mnemonic)", the prefix of every per-instruction diagnostic.
std::string instrName(const isa::Program &p, int64_t index);

} // namespace npuc::sim
