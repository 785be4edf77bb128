// Program.h - decoded NPU instructions, binary encoding and assembly text.
//
// An Instr holds one value per field name the primitive reads (fixed fields included), so code
// that builds or executes instructions never depends on bit positions. encode()/decode() use
// the Target's field layout; assemble()/disassemble() use its mnemonics and field names:
//     ld pop=0 push=4 src_addr=0x1000 dst_addr=0 n0=64 ...   # one instruction per line
// Fields left out in assembly are 0; '#' starts a comment.
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

struct Program {
  std::vector<Instr> instrs;
};

/// Encodes into instructionBytes() per instruction, little-endian bit order (bit 0 = byte 0 lsb).
/// Throws npuc::Error naming the instruction index, mnemonic and field when a value does not fit.
std::vector<uint8_t> encode(const Target &t, const Program &p);
/// Decodes a binary; throws npuc::Error naming the byte offset on an unknown opcode or bad size.
Program decode(const Target &t, const std::vector<uint8_t> &bytes);

std::string disassemble(const Target &t, const Program &p);
/// Parses assembly text; errors name `origin`, the line number and the offending token.
Program assemble(const Target &t, const std::string &text, const std::string &origin);

} // namespace npuc::isa
