// Encoding.cpp - binary encoding and decoding of NPU programs (isa/Program.h), driven entirely
// by the Target's field layout. Each instruction is instructionBytes() long; bit b of the word
// is bit (b % 8) of byte (b / 8), so a field may straddle bytes freely. Signed fields are two's
// complement. Fixed fields are not stored; decode() fills them in from the description so that
// a decoded Instr carries every field its primitive reads.
#include "isa/Program.h"

#include "support/Error.h"

#include <iterator>

namespace npuc::isa {

namespace {

/// The name of slot `s` of `d` (Instr::slotOf's inverse).
const std::string &slotName(const InstrDesc &d, int s) {
  if (size_t(s) < d.fields.size())
    return d.fields[size_t(s)].name;
  auto it = d.fixed.begin();
  std::advance(it, s - int(d.fields.size()));
  return it->first;
}

} // namespace

int Instr::slotOf(const InstrDesc &d, std::string_view name) {
  for (size_t i = 0; i < d.fields.size(); ++i)
    if (d.fields[i].name == name)
      return int(i);
  int s = int(d.fields.size());
  for (const auto &[n, v] : d.fixed) {
    if (n == name)
      return s;
    ++s;
  }
  return -1;
}

std::optional<int64_t> Instr::find(const std::string &name) const {
  if (layout_)
    if (int s = slotOf(*layout_, name); s >= 0 && s < kFlatSlots) {
      if (given(s))
        return values_[size_t(s)];
      return std::nullopt;
    }
  if (auto it = others_.find(name); it != others_.end())
    return it->second;
  return std::nullopt;
}

int64_t Instr::get(const std::string &name) const {
  return find(name).value_or(0);
}

void Instr::set(const std::string &name, int64_t v) {
  if (desc)
    if (int s = slotOf(*desc, name); s >= 0 && s < kFlatSlots) {
      setAt(s, v);
      return;
    }
  others_[name] = v;
}

void Instr::setAt(int slot, int64_t v) {
  NPUC_ASSERT(desc && slot >= 0 && slot < numSlots(*desc),
              "setAt takes a slot of the instruction's description (Instr::slotOf)");
  if (layout_ != desc) {
    // The first given field lays the values out for desc; names given before desc was set
    // (kept in others_) move into their slots.
    NPUC_ASSERT(!layout_, "an instruction's description is not changed once a field is given");
    layout_ = desc;
    values_.assign(size_t(numSlots(*desc)), 0);
    for (auto it = others_.begin(); it != others_.end();) {
      int s = slotOf(*desc, it->first);
      if (s < 0 || s >= kFlatSlots) {
        ++it;
        continue;
      }
      values_[size_t(s)] = it->second;
      given_ |= uint64_t(1) << s;
      it = others_.erase(it);
    }
  }
  if (slot >= kFlatSlots) {
    others_[slotName(*desc, slot)] = v;
    return;
  }
  if (size_t(slot) >= values_.size()) // the description grew after the layout (tests do)
    values_.resize(size_t(slot) + 1, 0);
  values_[size_t(slot)] = v;
  given_ |= uint64_t(1) << slot;
}

void Instr::erase(const std::string &name) {
  if (layout_)
    if (int s = slotOf(*layout_, name); s >= 0 && s < kFlatSlots) {
      given_ &= ~(uint64_t(1) << s);
      return;
    }
  others_.erase(name);
}

std::map<std::string, int64_t> Instr::fields() const {
  std::map<std::string, int64_t> m = others_;
  for (int s = 0; s < kFlatSlots && size_t(s) < values_.size(); ++s)
    if (given(s))
      m[slotName(*layout_, s)] = values_[size_t(s)];
  return m;
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
    // Only fixed fields given another value and names the description lacks can fail the
    // check; they are rare, so the sorted (reported) order is built only when one is there.
    bool suspect = !in.others().empty();
    for (auto it = d.fixed.begin(); it != d.fixed.end() && !suspect; ++it)
      if (int s = Instr::slotOf(d, it->first); in.given(s) && in.at(s) != it->second)
        suspect = true;
    for (const auto &[name, value] : suspect ? in.fields() : std::map<std::string, int64_t>()) {
      if (auto it = d.fixed.find(name); it != d.fixed.end()) {
        if (value != it->second)
          fail("instruction {} ({}): field '{}' is fixed to {} by the target, got {}", i,
               d.mnemonic, name, it->second, value);
      } else if (!d.field(name)) {
        fail("instruction {} ({}): '{}' is not a field of '{}' in target '{}'", i, d.mnemonic, name,
             d.mnemonic, t.name);
      }
    }
    for (size_t fi = 0; fi < d.fields.size(); ++fi) {
      const Field &f = d.fields[fi];
      // Field fi's slot is fi (names are unique); slots past the flat ones are kept by name.
      int64_t v = fi < size_t(Instr::kFlatSlots) ? in.at(int(fi)) : in.get(f.name);
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
    for (size_t fi = 0; fi < d->fields.size(); ++fi) {
      const Field &f = d->fields[fi];
      uint64_t raw = getBits(word, f.lsb, f.width);
      int64_t v = static_cast<int64_t>(raw);
      if (f.isSigned && f.width < 64 && ((raw >> (f.width - 1)) & 1))
        v = static_cast<int64_t>(raw | (~uint64_t(0) << f.width)); // sign-extend
      in.setAt(int(fi), v);
    }
    for (const auto &[name, value] : d->fixed) // a fixed name also encoded: the fixed value wins
      in.setAt(Instr::slotOf(*d, name), value);
    p.instrs.push_back(std::move(in));
  }
  return p;
}

} // namespace npuc::isa
