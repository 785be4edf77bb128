// Encoding.cpp - binary encoding and decoding of NPU programs (isa/Program.h), driven entirely
// by the Target's field layout. Each instruction is instructionBytes() long; bit b of the word
// is bit (b % 8) of byte (b / 8), so a field may straddle bytes freely. Signed fields are two's
// complement. Fixed fields are not stored; decode() fills them in from the description so that
// a decoded Instr carries every field its primitive reads.
#include "isa/Program.h"

#include "support/Error.h"

namespace npuc::isa {

int64_t Instr::get(const std::string &name) const {
  auto it = fields.find(name);
  return it == fields.end() ? 0 : it->second;
}

namespace {

void putBits(uint8_t *word, int lsb, int width, uint64_t v) {
  for (int i = 0; i < width; ++i) {
    int b = lsb + i;
    uint8_t mask = static_cast<uint8_t>(1u << (b % 8));
    if ((v >> i) & 1)
      word[b / 8] |= mask;
    else
      word[b / 8] &= static_cast<uint8_t>(~mask);
  }
}

uint64_t getBits(const uint8_t *word, int lsb, int width) {
  uint64_t v = 0;
  for (int i = 0; i < width; ++i) {
    int b = lsb + i;
    if ((word[b / 8] >> (b % 8)) & 1)
      v |= uint64_t(1) << i;
  }
  return v;
}

std::string rangeText(const Field &f) {
  return fmt::format("[{}, {}]", f.minValue(), f.maxValue());
}

} // namespace

std::vector<uint8_t> encode(const Target &t, const Program &p) {
  size_t bytes = static_cast<size_t>(t.instructionBytes());
  std::vector<uint8_t> out(p.instrs.size() * bytes, 0);
  for (size_t i = 0; i < p.instrs.size(); ++i) {
    const Instr &in = p.instrs[i];
    NPUC_ASSERT(in.desc, "every instruction of a program names its description");
    const InstrDesc &d = *in.desc;
    uint8_t *word = out.data() + i * bytes;
    putBits(word, t.opcodeField.lsb, t.opcodeField.width, d.opcode);
    for (const auto &[name, value] : in.fields) {
      if (auto it = d.fixed.find(name); it != d.fixed.end()) {
        if (value != it->second)
          fail("instruction {} ({}): field '{}' is fixed to {} by the target, got {}", i,
               d.mnemonic, name, it->second, value);
      } else if (!d.field(name)) {
        fail("instruction {} ({}): '{}' is not a field of '{}' in target '{}'", i, d.mnemonic, name,
             d.mnemonic, t.name);
      }
    }
    for (const Field &f : d.fields) {
      int64_t v = in.get(f.name);
      if (v < f.minValue() || v > f.maxValue())
        fail("instruction {} ({}): value {} of field '{}' does not fit its {}-bit {} range {}", i,
             d.mnemonic, v, f.name, f.width, f.isSigned ? "signed" : "unsigned", rangeText(f));
      putBits(word, f.lsb, f.width, static_cast<uint64_t>(v));
    }
  }
  return out;
}

Program decode(const Target &t, const std::vector<uint8_t> &bytes) {
  size_t n = static_cast<size_t>(t.instructionBytes());
  if (bytes.size() % n != 0)
    fail("program of {} bytes is not a whole number of {}-byte instructions (target '{}')",
         bytes.size(), n, t.name);
  Program p;
  p.instrs.reserve(bytes.size() / n);
  for (size_t off = 0; off < bytes.size(); off += n) {
    const uint8_t *word = bytes.data() + off;
    uint64_t opcode = getBits(word, t.opcodeField.lsb, t.opcodeField.width);
    const InstrDesc *d = t.findByOpcode(opcode);
    if (!d)
      fail("byte offset {} (instruction {}): unknown opcode {} (0x{:x}) for target '{}'", off,
           off / n, opcode, opcode, t.name);
    Instr in;
    in.desc = d;
    for (const Field &f : d->fields) {
      uint64_t raw = getBits(word, f.lsb, f.width);
      int64_t v = static_cast<int64_t>(raw);
      if (f.isSigned && f.width < 64 && ((raw >> (f.width - 1)) & 1))
        v = static_cast<int64_t>(raw | (~uint64_t(0) << f.width)); // sign-extend
      in.fields[f.name] = v;
    }
    for (const auto &[name, value] : d->fixed)
      in.fields[name] = value;
    p.instrs.push_back(std::move(in));
  }
  return p;
}

} // namespace npuc::isa
