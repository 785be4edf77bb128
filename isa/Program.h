// Program.h - decoded NPU instructions, binary encoding and assembly text.
//
// An Instr holds one value per field name the primitive reads (fixed fields included), so code
// that builds or executes instructions never depends on bit positions. encode()/decode() use
// the Target's field layout; assemble()/disassemble() use its mnemonics and field names:
//     ld pop=0 push=4 src_addr=0x1000 dst_addr=0 n0=64 ...   # one instruction per line
// Fields left out in assembly are 0; '#' starts a comment. Labels (`loop:`), named regions
// (`.region`), engine names in pop/push (`pop=load push=tensor|vector`): docs/ASSEMBLY.md.
#pragma once

#include "isa/Target.h"

#include <cstdint>
#include <string>
#include <vector>

namespace npuc::isa {

struct Instr {
  const InstrDesc *desc = nullptr;
  std::map<std::string, int64_t> fields; // named field values (encoded and fixed)
  int64_t get(const std::string &name) const; // 0 when absent
  void set(const std::string &name, int64_t v) { fields[name] = v; }
};

/// A named memory region declared in assembly (`.region NAME LEVEL ADDR BYTES [DTYPE [SHAPE]]`):
/// address fields may say `NAME` or `NAME+OFFSET`, and `npuc sim --dump NAME=FILE.npy` writes it.
struct Region {
  std::string name;
  int level = 0; // memory level index
  int64_t addr = 0, bytes = 0;
  std::string dtype = "u8";   // npy element type: u8, i8, i32, fp16, fp32
  std::vector<int64_t> shape; // empty: 1-D, bytes / element size
};

struct Program {
  std::vector<Instr> instrs;
};

/// What assembly declares besides instructions (binaries carry none of it).
struct AsmSymbols {
  std::vector<Region> regions;
  std::map<std::string, int64_t> labels; // label -> index of the instruction that follows it
};

/// Encodes into instructionBytes() per instruction, little-endian bit order (bit 0 = byte 0 lsb).
/// Throws npuc::Error naming the instruction index, mnemonic and field when a value does not fit.
std::vector<uint8_t> encode(const Target &t, const Program &p);
/// Decodes a binary; throws npuc::Error naming the byte offset on an unknown opcode or bad size.
Program decode(const Target &t, const std::vector<uint8_t> &bytes);

std::string disassemble(const Target &t, const Program &p);
/// Parses assembly text; errors name `origin`, the line number and the offending token.
Program assemble(const Target &t, const std::string &text, const std::string &origin,
                 AsmSymbols *symbols = nullptr);

} // namespace npuc::isa
