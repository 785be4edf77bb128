// Target.cpp - the small query helpers of the hardware description (isa/Target.h): names of
// enums, field ranges, look-ups by name/opcode, and the table of fields each semantics primitive
// reads. The table lives here (not in the loader) because the loader, the assembler and the
// compiler all need the same answer to "which fields does a Dma instruction have".
#include "isa/Target.h"

#include "support/Error.h"

namespace npuc::isa {

const char *semanticsName(Semantics s) {
  switch (s) {
  case Semantics::Dma:
    return "dma";
  case Semantics::Matmul:
    return "matmul";
  case Semantics::Vector:
    return "vector";
  case Semantics::Finish:
    return "finish";
  }
  NPUC_ASSERT(false, "Semantics enum value out of range");
  return "";
}

int elemBytes(ElemType t) {
  switch (t) {
  case ElemType::F16:
    return 2;
  case ElemType::I8:
    return 1;
  case ElemType::F32:
  case ElemType::I32:
    return 4;
  }
  NPUC_ASSERT(false, "ElemType value out of range");
  return 0;
}

const char *elemTypeName(ElemType t) {
  int i = static_cast<int>(t);
  NPUC_ASSERT(i >= 0 && i < kNumDtypes, "ElemType value out of range");
  return kDtypeNames[i];
}

const std::vector<std::string> &primitiveFields(Semantics s) {
  // Mirrors the comment at the top of Target.h; keep the two in sync.
  static const std::vector<std::string> dma = {
      "pop",        "push",    "src_space", "src_addr", "dst_space", "dst_addr",
      "elem_bytes", "n0",      "n1",        "n2",       "src_s0",    "src_s1",
      "src_s2",     "dst_s0",  "dst_s1",    "dst_s2",   "pad0_lo",   "pad0_hi",
      "pad1_lo",    "pad1_hi", "pad2_lo",   "pad2_hi",  "pad_value"};
  static const std::vector<std::string> matmul = {"pop", "push", "a_addr", "b_addr",    "c_addr",
                                                  "m",   "k",    "n",      "accumulate"};
  static const std::vector<std::string> vector = {
      "pop",       "push",       "op",         "dst_space", "dst_addr",   "dst_dtype", "src1_space",
      "src1_addr", "src1_dtype", "src2_space", "src2_addr", "src2_dtype", "n0",        "n1",
      "n2",        "dst_s0",     "dst_s1",     "dst_s2",    "src1_s0",    "src1_s1",   "src1_s2",
      "src2_s0",   "src2_s1",    "src2_s2",    "imm0",      "imm1"};
  static const std::vector<std::string> finish = {"pop", "push"};
  switch (s) {
  case Semantics::Dma:
    return dma;
  case Semantics::Matmul:
    return matmul;
  case Semantics::Vector:
    return vector;
  case Semantics::Finish:
    return finish;
  }
  NPUC_ASSERT(false, "Semantics enum value out of range");
  return finish;
}

int VectorUnit::opCode(VecOp op) const {
  for (size_t i = 0; i < ops.size(); ++i)
    if (ops[i] == op)
      return static_cast<int>(i);
  return -1;
}

int64_t Field::maxValue() const {
  NPUC_ASSERT(width >= 1 && width <= 64, "field widths are validated to 1..64 bits");
  if (isSigned)
    return width == 64 ? INT64_MAX : (int64_t(1) << (width - 1)) - 1;
  // Unsigned 64-bit fields cannot hold values above INT64_MAX in an int64_t; cap there.
  return width >= 63 ? INT64_MAX : (int64_t(1) << width) - 1;
}

int64_t Field::minValue() const {
  NPUC_ASSERT(width >= 1 && width <= 64, "field widths are validated to 1..64 bits");
  if (!isSigned)
    return 0;
  return width == 64 ? INT64_MIN : -(int64_t(1) << (width - 1));
}

const Field *InstrDesc::field(const std::string &name) const {
  for (const Field &f : fields)
    if (f.name == name)
      return &f;
  return nullptr;
}

const MemoryLevel &Target::level(const std::string &name) const {
  std::optional<int> i = findLevel(name);
  NPUC_ASSERT(i.has_value(), "memory level '" + name + "' is not in target '" + this->name + "'");
  return levels[static_cast<size_t>(*i)];
}

std::optional<int> Target::findLevel(const std::string &n) const {
  for (const MemoryLevel &l : levels)
    if (l.name == n)
      return l.index;
  return std::nullopt;
}

std::optional<int> Target::findEngine(const std::string &n) const {
  for (const Engine &e : engines)
    if (e.name == n)
      return e.index;
  return std::nullopt;
}

const InstrDesc *Target::findInstr(const std::string &mnemonic) const {
  for (const InstrDesc &d : instrs)
    if (d.mnemonic == mnemonic)
      return &d;
  return nullptr;
}

const InstrDesc *Target::findByOpcode(uint64_t opcode) const {
  for (const InstrDesc &d : instrs)
    if (d.opcode == opcode)
      return &d;
  return nullptr;
}

std::vector<const InstrDesc *> Target::instrsWith(Semantics s) const {
  std::vector<const InstrDesc *> out;
  for (const InstrDesc &d : instrs)
    if (d.semantics == s)
      out.push_back(&d);
  return out;
}

int Target::dramLevel() const {
  for (const MemoryLevel &l : levels)
    if (l.isDram)
      return l.index;
  NPUC_ASSERT(false, "a validated target has exactly one dram level");
  return -1;
}

} // namespace npuc::isa
