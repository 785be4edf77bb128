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
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace npuc::isa {

/// One instruction. Values are stored flat, one slot per field of the description (the encoded
/// fields in order, then the fixed fields in name order; see slotOf), because a std::map of
/// names per instruction made walking a decoded program most of a short simulator run. A field
/// is "given" once set; a field not given reads 0 through get() (as before: presence matters to
/// the simulator, which reads a description's fixed value for a field an instruction leaves out).
/// Names the description lacks (tests and tools may set any name; encode() rejects them) are kept
/// by name in others(). `desc` must be set before the first set() and not changed after it.
struct Instr {
  const InstrDesc *desc = nullptr;

  int64_t get(const std::string &name) const;                 // 0 when absent
  std::optional<int64_t> find(const std::string &name) const; // nullopt when absent
  void set(const std::string &name, int64_t v);
  void erase(const std::string &name);
  /// Every given field by name, sorted (what the former field map held): tools and tests.
  std::map<std::string, int64_t> fields() const;

  /// Index-based access for hot loops: slot indices of a description are resolved once with
  /// slotOf. Slots >= kFlatSlots are stored by name (in others()), never in the flat storage.
  static constexpr int kFlatSlots = 64;
  /// The slot of `name` in `d`: its index in d.fields, else d.fields.size() + its rank in
  /// d.fixed; -1 when `d` has no such field.
  static int slotOf(const InstrDesc &d, std::string_view name);
  static int numSlots(const InstrDesc &d) { return int(d.fields.size() + d.fixed.size()); }
  bool given(int slot) const { return slot < kFlatSlots && (given_ >> slot & 1); }
  int64_t at(int slot) const { return given(slot) ? values_[size_t(slot)] : 0; }
  void setAt(int slot, int64_t v); // slot of desc (resolved with slotOf)
  /// The description the slots were laid out for (nullptr: none given yet).
  const InstrDesc *layout() const { return layout_; }
  /// Given fields without a flat slot (names `desc` lacks, or slots >= kFlatSlots).
  const std::map<std::string, int64_t> &others() const { return others_; }

private:
  const InstrDesc *layout_ = nullptr;
  uint64_t given_ = 0;          // bit s: slot s is given (values_[s])
  std::vector<int64_t> values_; // numSlots(*layout_) entries once a slot is given
  std::map<std::string, int64_t> others_;
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
