// Target.h - the hardware/ISA description, loaded from a target YAML (configs/*.yaml).
//
// This is the single source of truth: the encoder/decoder, assembler/disassembler, the simulator's
// dispatch and timing, and the compiler's knowledge of the target all read it. Nothing else in
// npuc may hard-code an opcode, a field position, a memory size or a unit shape.
//
// Semantics primitives (the fixed set the simulator implements) and the named fields each reads:
//   every instruction: opcode, pop (bit e = wait for a token from engine e before starting),
//                      push (bit e = send a token to engine e when done)
//   Dma     : src_space src_addr dst_space dst_addr elem_bytes n0 n1 n2
//             src_s0 src_s1 src_s2 dst_s0 dst_s1 dst_s2
//             pad0_lo pad0_hi pad1_lo pad1_hi pad2_lo pad2_hi pad_value
//             Copies an n2 x n1 x n0 box of elements (n0 innermost) of elem_bytes each.
//             Box index (i0,i1,i2) goes to dst_addr + elem_bytes*sum(i_d*dst_s_d). If any
//             i_d < pad_d_lo or i_d >= n_d - pad_d_hi the element is pad_value (the raw
//             elem_bytes-wide bit pattern, e.g. fp16 bits) and nothing is read; otherwise it is
//             read from src_addr + elem_bytes*sum((i_d - pad_d_lo)*src_s_d). Addresses are bytes.
//   Matmul  : a_addr b_addr c_addr m k n accumulate
//             C[m][n] (fp32 in the tensor unit's acc level, row-major, row stride n)
//               = (accumulate ? C : 0) + A[m][k] * B[k][n]
//             A (operand dtype, row-major, row stride k) in the a level, B (row-major, row stride
//             n) in the b level. Products are exact, sums are rounded to fp32 in k order.
//   Vector  : op dst_space dst_addr dst_dtype src1_space src1_addr src1_dtype
//             src2_space src2_addr src2_dtype n0 n1 n2 dst_s0 dst_s1 dst_s2
//             src1_s0 src1_s1 src1_s2 src2_s0 src2_s1 src2_s2 imm0 imm1
//             For i2, i1, i0 in order (sequential semantics: a destination stride of 0 reduces):
//               dst[i] = OP(src1[i], src2[i], imm0, imm1) computed in fp32, rounded to dst_dtype.
//             op indexes VectorUnit::ops (isa/VectorOps.def); dtypes index kDtypeNames; imm0/imm1
//             are fp32 bit patterns; strides are in elements of the operand's dtype.
//   Finish  : no fields; the program ends when every engine has drained its queue.
// Fields an instruction fixes in the YAML ("fixed:") are not encoded and read as that constant.
#pragma once

#include "isa/VectorOps.h"

#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace npuc::isa {

enum class Semantics { Dma, Matmul, Vector, Finish };
const char *semanticsName(Semantics s);

/// Element dtypes an instruction's dtype field can name, by code.
/// Integer types (int8 operands, int32 accumulators) are for quantised targets
/// (configs/npu-int8.yaml, configs/vta-like.yaml); docs/ISA.md gives their rounding/saturation.
enum class ElemType : int { F16 = 0, F32 = 1, I8 = 2, I32 = 3 };
int elemBytes(ElemType t);
const char *elemTypeName(ElemType t);
/// Names of the dtype codes, index = ElemType value (the YAML and assembly spell dtypes so).
inline constexpr const char *kDtypeNames[] = {"fp16", "fp32", "int8", "int32"};
inline constexpr int kNumDtypes = 4;
/// Whether a dtype is one of the integer types.
inline bool isIntegerType(ElemType t) { return t == ElemType::I8 || t == ElemType::I32; }

/// The named fields a primitive reads, in the order of the comment above (opcode excluded;
/// pop and push first). The loader requires each to be encoded or fixed by every instruction.
const std::vector<std::string> &primitiveFields(Semantics s);

/// A memory level's energy and area overrides (docs/ENERGY.md); unset fields follow the
/// target's `energy:`/`area:` scaling rules.
struct LevelCostOverride {
  std::optional<double> readPjPerByte, writePjPerByte, areaMm2;
};

struct MemoryLevel {
  std::string name; // "dram", "l1", "l0a", ...
  int index = 0;    // the value a *_space field holds for this level
  bool isDram = false;
  int64_t size = 0;       // bytes
  int banks = 1;
  int bankWidth = 64;     // bytes per bank row; the address interleaving unit
  int alignment = 1;      // bytes; every buffer the compiler places starts on a multiple
  int ports = 1;
  LevelCostOverride cost;
};

struct Engine {
  std::string name; // "load", "feed", "tensor", "vector", "store"
  int index = 0;
  int queueDepth = 16; // instructions the engine's queue holds
  double bytesPerCycle = 0; // on-chip transfer rate for Dma instructions it runs (0: not a DMA)
};

struct TensorUnit {
  int rows = 16; // K values consumed per cycle
  int cols = 16; // N outputs produced per cycle
  ElemType operandType = ElemType::F16;
  ElemType accType = ElemType::F32;
  std::string dataflow = "weight-stationary";
  int aLevel = -1, bLevel = -1, accLevel = -1; // memory level indices
  int fillLatency = 0; // cycles to fill/drain the array once per instruction
  int64_t peakMacsPerCycle() const { return int64_t(rows) * cols; }
};

struct VectorUnit {
  int lanes = 16;                // fp32 elements per cycle
  std::vector<VecOp> ops;        // supported ops, index = op field value
  int maxDims = 3;
  std::vector<int> levels;       // memory levels the vector unit may read and write
  /// Extra cycles a vop of each op takes (vector_unit.op_latency: the pipeline depth of its
  /// function unit beyond the vop's timing.latency), indexed by VecOp; 0 when not given. It may
  /// name ops outside `ops`, for sweeps that add optional ops (explore/Sweep.cpp).
  std::vector<int> opLatency = std::vector<int>(std::size(kAllVecOps), 0);
  bool supports(VecOp op) const { return opCode(op) >= 0; }
  int opCode(VecOp op) const; // the op field's value for `op`; -1 when unsupported
  int latencyOf(VecOp op) const { return opLatency[static_cast<size_t>(op)]; }
  /// The op an op field's value names; nullopt when the value names none of `ops`.
  std::optional<VecOp> opOf(int64_t code) const {
    if (code < 0 || code >= static_cast<int64_t>(ops.size()))
      return std::nullopt;
    return ops[static_cast<size_t>(code)];
  }
};

struct Dram {
  double bytesPerCycle = 16;
  int latency = 100;
  int channels = 1;
  int burstBytes = 64;
};

/// Per-action energy in pJ, in the manner of Accelergy's tables (docs/ENERGY.md gives the
/// defaults' sources: Horowitz, ISSCC 2014, 45 nm). The simulator counts the actions
/// (sim::SimStats); sim::energyOf multiplies. A target's `energy:` map overrides any field.
struct EnergyTable {
  double macPj[kNumDtypes] = {2.0, 4.6, 0.3,
                              3.2}; // per MAC by operand dtype (fp16 fp32 int8 int32)
  double vectorAluPj = 0.9;         // per element: add, sub, max, min, relu, clip (an fp32 add)
  double vectorMulPj = 3.7;         // per element: mul (an fp32 multiply)
  double vectorSpecialPj = 18.5; // per element: exp, tanh, sigmoid, div, sqrt, erf (5 multiplies)
  /// SRAM per byte at a bank of sramRefKib KiB; a bank of B KiB costs (B / ref)^exponent times
  /// as much (longer bit- and word-lines), so more, smaller banks cost less per access.
  double sramReadPjPerByte = 1.25, sramWritePjPerByte = 1.25;
  double sramRefKib = 8, sramExponent = 0.5;
  double dramPjPerByte = 160; // DRAM access, per byte read or written
  double leakageMwPerMm2 = 0; // static power per mm^2 of the area model; 0: not modelled
};

/// Per-component area in mm^2 (docs/ENERGY.md); a target's `area:` map overrides any field.
struct AreaTable {
  double macMm2[kNumDtypes] = {0.005824, 0.011884, 0.000419, 0.003632}; // per MAC unit
  double vectorLaneMm2 = 0.011884;        // per lane: an fp32 multiplier and adder
  double vectorSpecialLaneMm2 = 0.011884; // per lane, for each exp/tanh/sigmoid/div/sqrt/erf op
  double sramMm2PerKib = 0.0057;          // cells with their array overhead
  double sramBankMm2 = 0.004;             // per bank: decoders, sense amplifiers
  double sramExtraPortFraction = 0.5;     // each port beyond the first adds this much cell area
};

struct Field {
  std::string name;
  int lsb = 0;   // bit offset in the instruction word
  int width = 0; // bits
  bool isSigned = false;
  int64_t maxValue() const; // largest encodable value
  int64_t minValue() const;
};

struct Timing {
  int latency = 0;          // fixed cycles per instruction
  double perElement = 0;    // cycles per element moved/computed (after lanes/bandwidth)
};

struct InstrDesc {
  std::string mnemonic;
  uint64_t opcode = 0;
  int engine = -1;
  Semantics semantics = Semantics::Finish;
  std::vector<Field> fields;             // encoded fields (excluding opcode)
  std::map<std::string, int64_t> fixed;  // fields fixed by the description
  Timing timing;
  const Field *field(const std::string &name) const;
  bool hasField(const std::string &name) const { return field(name) || fixed.count(name); }
};

struct Target {
  std::string name;
  std::string path;        // where it was loaded from
  std::string sourceText;  // the YAML text, embedded into compiled packages
  int instructionBits = 512;
  Field opcodeField;       // position of the opcode, identical for all instructions
  double clockGhz = 1.0;
  std::vector<MemoryLevel> levels;
  std::vector<Engine> engines;
  TensorUnit tensor;
  VectorUnit vector;
  Dram dram;
  int tokenQueueDepth = 32; // per (producer, consumer) engine pair
  std::vector<InstrDesc> instrs;
  EnergyTable energy;
  AreaTable area;

  int instructionBytes() const { return instructionBits / 8; }
  const MemoryLevel &level(const std::string &name) const; // asserts presence
  std::optional<int> findLevel(const std::string &name) const;
  std::optional<int> findEngine(const std::string &name) const;
  const InstrDesc *findInstr(const std::string &mnemonic) const;
  const InstrDesc *findByOpcode(uint64_t opcode) const;
  /// The instructions implementing a primitive (e.g. every Dma instruction).
  std::vector<const InstrDesc *> instrsWith(Semantics s) const;
  int dramLevel() const;
};

/// Loads and validates a target description. Throws npuc::Error naming the file and the field
/// (e.g. "configs/x.yaml: instructions[3].fields.n0: width 70 does not fit ...").
Target loadTarget(const std::string &path);
/// Same, from YAML text; `origin` is used in messages in place of a path.
Target parseTarget(const std::string &yamlText, const std::string &origin);

} // namespace npuc::isa
