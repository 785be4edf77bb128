// Assembly.cpp - the textual form of NPU programs (isa/Program.h): one instruction per line,
// `mnemonic field=value ...`, '#' comments. Values are decimal (optionally negative) or 0x hex;
// *_space fields also accept level names, *_dtype fields dtype names and the vector `op` field
// op names, and the disassembler prints those symbolically so listings are readable. Fixed
// fields are omitted on output and accepted on input only with their fixed value; encoded
// fields equal to zero are omitted on output (assembly defaults missing fields to 0), so
// assemble(disassemble(p)) reproduces p exactly.
#include "isa/Program.h"

#include "support/Error.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <optional>
#include <set>
#include <sstream>

namespace npuc::isa {
namespace {

bool endsWith(const std::string &s, const char *suffix) {
  std::string suf(suffix);
  return s.size() >= suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0;
}

/// Symbolic spelling of a value when the field has one, else empty.
std::string symbolic(const Target &t, const InstrDesc &d, const std::string &field, int64_t v) {
  if (endsWith(field, "_space") && v >= 0 && v < int64_t(t.levels.size()))
    return t.levels[static_cast<size_t>(v)].name;
  if (endsWith(field, "_dtype") && v >= 0 && v < kNumDtypes)
    return kDtypeNames[v];
  if (field == "op" && d.semantics == Semantics::Vector && v >= 0 &&
      v < int64_t(t.vector.ops.size()))
    return t.vector.ops[static_cast<size_t>(v)];
  return "";
}

std::optional<int64_t> parseNumber(const std::string &s) {
  bool neg = !s.empty() && s[0] == '-';
  std::string digits = neg ? s.substr(1) : s;
  int base = 10;
  if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) {
    base = 16;
    digits = digits.substr(2);
  }
  if (digits.empty())
    return std::nullopt;
  for (char c : digits)
    if (base == 16 ? !std::isxdigit(static_cast<unsigned char>(c)) : !std::isdigit(c))
      return std::nullopt;
  errno = 0;
  unsigned long long u = std::strtoull(digits.c_str(), nullptr, base);
  // Hex may spell a full 64-bit pattern (two's complement); decimal must fit int64.
  if (errno == ERANGE || (base == 10 && u > uint64_t(INT64_MAX)) ||
      (neg && u > uint64_t(INT64_MAX)))
    return std::nullopt;
  int64_t v = static_cast<int64_t>(u);
  return neg ? -v : v;
}

std::optional<int64_t> parseValue(const Target &t, const InstrDesc &d, const std::string &field,
                                  const std::string &text) {
  if (std::optional<int64_t> v = parseNumber(text))
    return v;
  if (endsWith(field, "_space"))
    return t.findLevel(text);
  if (endsWith(field, "_dtype")) {
    for (int i = 0; i < kNumDtypes; ++i)
      if (text == kDtypeNames[i])
        return i;
  }
  if (field == "op" && d.semantics == Semantics::Vector && t.vector.supports(text))
    return t.vector.opCode(text);
  return std::nullopt;
}

} // namespace

std::string disassemble(const Target &t, const Program &p) {
  std::string out;
  for (const Instr &in : p.instrs) {
    NPUC_ASSERT(in.desc, "every instruction of a program names its description");
    const InstrDesc &d = *in.desc;
    out += d.mnemonic;
    for (const Field &f : d.fields) {
      int64_t v = in.get(f.name);
      if (v == 0)
        continue;
      std::string sym = symbolic(t, d, f.name, v);
      if (!sym.empty())
        out += fmt::format(" {}={}", f.name, sym);
      else if (f.name == "imm0" || f.name == "imm1" || f.name == "pop" || f.name == "push")
        out += fmt::format(" {}=0x{:x}", f.name, v); // bit patterns / bit masks read best in hex
      else
        out += fmt::format(" {}={}", f.name, v);
    }
    out += '\n';
  }
  return out;
}

Program assemble(const Target &t, const std::string &text, const std::string &origin) {
  Program p;
  std::istringstream lines(text);
  std::string line;
  int lineNo = 0;
  while (std::getline(lines, line)) {
    ++lineNo;
    if (size_t hash = line.find('#'); hash != std::string::npos)
      line.resize(hash);
    std::istringstream toks(line);
    std::string mnemonic;
    if (!(toks >> mnemonic))
      continue; // blank or comment-only line
    const InstrDesc *d = t.findInstr(mnemonic);
    if (!d)
      fail("{}:{}: unknown mnemonic '{}' for target '{}'", origin, lineNo, mnemonic, t.name);
    Instr in;
    in.desc = d;
    for (const Field &f : d->fields)
      in.fields[f.name] = 0;
    for (const auto &[name, value] : d->fixed)
      in.fields[name] = value;
    std::set<std::string> seen;
    std::string tok;
    while (toks >> tok) {
      size_t eq = tok.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == tok.size())
        fail("{}:{}: expected field=value, found '{}'", origin, lineNo, tok);
      std::string name = tok.substr(0, eq), valueText = tok.substr(eq + 1);
      const Field *f = d->field(name);
      auto fixedIt = d->fixed.find(name);
      if (!f && fixedIt == d->fixed.end())
        fail("{}:{}: unknown field '{}' for '{}'", origin, lineNo, name, mnemonic);
      if (!seen.insert(name).second)
        fail("{}:{}: field '{}' given twice", origin, lineNo, name);
      std::optional<int64_t> v = parseValue(t, *d, name, valueText);
      if (!v)
        fail("{}:{}: bad value '{}' for field '{}' of '{}'", origin, lineNo, valueText, name,
             mnemonic);
      if (fixedIt != d->fixed.end()) {
        if (*v != fixedIt->second)
          fail("{}:{}: field '{}' of '{}' is fixed to {} by the target, got {}", origin, lineNo,
               name, mnemonic, fixedIt->second, *v);
        continue;
      }
      if (*v < f->minValue() || *v > f->maxValue())
        fail("{}:{}: value {} does not fit field '{}' of '{}' ({}-bit {}, range [{}, {}])", origin,
             lineNo, *v, name, mnemonic, f->width, f->isSigned ? "signed" : "unsigned",
             f->minValue(), f->maxValue());
      in.fields[name] = *v;
    }
    p.instrs.push_back(std::move(in));
  }
  return p;
}

} // namespace npuc::isa
