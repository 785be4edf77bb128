// Assembly.cpp - the textual form of NPU programs (isa/Program.h): one instruction per line,
// `mnemonic field=value ...`, '#' comments. Values are decimal (optionally negative) or 0x hex;
// *_space fields also accept level names, *_dtype fields dtype names and the vector `op` field
// op names, and the disassembler prints those symbolically so listings are readable. Fixed
// fields are omitted on output and accepted on input only with their fixed value; encoded
// fields equal to zero are omitted on output (assembly defaults missing fields to 0), so
// assemble(disassemble(p)) reproduces p exactly. `pop`/`push` print as engine names joined by
// '|'. Hand-written programs may also use labels, `.region` names in *_addr fields and numbers
// in hex or decimal everywhere (docs/ASSEMBLY.md).
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
  if ((field == "pop" || field == "push") && v > 0 && t.engines.size() < 63 &&
      v < (int64_t(1) << t.engines.size())) {
    std::string out;
    for (size_t e = 0; e < t.engines.size(); ++e)
      if (v >> e & 1)
        out += (out.empty() ? "" : "|") + t.engines[e].name;
    return out;
  }
  if (endsWith(field, "_space") && v >= 0 && v < int64_t(t.levels.size()))
    return t.levels[static_cast<size_t>(v)].name;
  if (endsWith(field, "_dtype") && v >= 0 && v < kNumDtypes)
    return kDtypeNames[v];
  if (field == "op" && d.semantics == Semantics::Vector) {
    if (std::optional<VecOp> op = t.vector.opOf(v))
      return vecOpName(*op);
  }
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
                                  const std::string &text, const AsmSymbols &p) {
  if (std::optional<int64_t> v = parseNumber(text))
    return v;
  if (field == "pop" || field == "push") {
    // engine names and/or numbers joined by '|': the union of their bits
    int64_t bits = 0;
    size_t begin = 0;
    while (begin <= text.size()) {
      size_t bar = text.find('|', begin);
      std::string part =
          text.substr(begin, bar == std::string::npos ? std::string::npos : bar - begin);
      if (std::optional<int> e = t.findEngine(part))
        bits |= int64_t(1) << *e;
      else if (std::optional<int64_t> n = parseNumber(part))
        bits |= *n;
      else
        return std::nullopt;
      if (bar == std::string::npos)
        break;
      begin = bar + 1;
    }
    return bits;
  }
  if (endsWith(field, "_addr")) {
    // REGION, REGION+OFFSET or REGION-OFFSET
    size_t op = text.find_first_of("+-");
    std::string name = text.substr(0, op);
    for (const Region &r : p.regions)
      if (r.name == name) {
        if (op == std::string::npos)
          return r.addr;
        std::optional<int64_t> off = parseNumber(text.substr(op + 1));
        if (!off)
          return std::nullopt;
        return text[op] == '+' ? r.addr + *off : r.addr - *off;
      }
  }
  if (endsWith(field, "_space"))
    return t.findLevel(text);
  if (endsWith(field, "_dtype")) {
    for (int i = 0; i < kNumDtypes; ++i)
      if (text == kDtypeNames[i])
        return i;
  }
  if (field == "op" && d.semantics == Semantics::Vector) {
    if (std::optional<VecOp> op = vecOpFromName(text); op && t.vector.supports(*op))
      return t.vector.opCode(*op);
  }
  return std::nullopt;
}

bool isIdentifier(const std::string &s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0])))
    return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.')
      return false;
  return true;
}

int64_t dtypeSize(const std::string &dtype) {
  if (dtype == "u8" || dtype == "i8")
    return 1;
  if (dtype == "fp16")
    return 2;
  if (dtype == "fp32" || dtype == "i32")
    return 4;
  return 0;
}

/// `.region NAME LEVEL ADDR BYTES [DTYPE [SHAPE]]`, SHAPE like 16x16.
void directive(const Target &t, AsmSymbols &p, const std::string &dir, std::istringstream &toks,
               const std::string &origin, int lineNo) {
  if (dir != ".region")
    fail("{}:{}: unknown directive '{}' (known: .region)", origin, lineNo, dir);
  std::string name, level, addr, bytes, dtype, shape, extra;
  if (!(toks >> name >> level >> addr >> bytes))
    fail("{}:{}: expected .region NAME LEVEL ADDR BYTES [DTYPE [SHAPE]]", origin, lineNo);
  toks >> dtype >> shape;
  if (toks >> extra)
    fail("{}:{}: unexpected '{}' after .region {}", origin, lineNo, extra, name);
  if (!isIdentifier(name))
    fail("{}:{}: bad region name '{}'", origin, lineNo, name);
  for (const Region &r : p.regions)
    if (r.name == name)
      fail("{}:{}: region '{}' defined twice", origin, lineNo, name);
  Region r;
  r.name = name;
  std::optional<int> lvl = t.findLevel(level);
  if (!lvl)
    fail("{}:{}: region '{}': unknown memory level '{}' of target '{}'", origin, lineNo, name,
         level, t.name);
  r.level = *lvl;
  std::optional<int64_t> a = parseNumber(addr), n = parseNumber(bytes);
  if (!a || *a < 0 || !n || *n <= 0)
    fail("{}:{}: region '{}': address '{}' and size '{}' must be numbers (size > 0)", origin,
         lineNo, name, addr, bytes);
  r.addr = *a;
  r.bytes = *n;
  int64_t levelSize = 0;
  for (const MemoryLevel &l : t.levels)
    if (l.index == r.level)
      levelSize = l.size;
  if (r.addr + r.bytes > levelSize)
    fail("{}:{}: region '{}' [{:#x}, {:#x}) lies outside level '{}' ({} bytes)", origin, lineNo,
         name, r.addr, r.addr + r.bytes, level, levelSize);
  if (!dtype.empty()) {
    if (dtypeSize(dtype) == 0)
      fail("{}:{}: region '{}': unknown dtype '{}' (u8, i8, i32, fp16, fp32)", origin, lineNo, name,
           dtype);
    r.dtype = dtype;
  }
  int64_t elems = 1;
  if (!shape.empty()) {
    size_t begin = 0;
    while (begin <= shape.size()) {
      size_t x = shape.find('x', begin);
      std::optional<int64_t> d =
          parseNumber(shape.substr(begin, x == std::string::npos ? std::string::npos : x - begin));
      if (!d || *d <= 0)
        fail("{}:{}: region '{}': bad shape '{}' (e.g. 16x16)", origin, lineNo, name, shape);
      r.shape.push_back(*d);
      elems *= *d;
      if (x == std::string::npos)
        break;
      begin = x + 1;
    }
  } else {
    elems = r.bytes / dtypeSize(r.dtype);
  }
  if (elems * dtypeSize(r.dtype) != r.bytes)
    fail("{}:{}: region '{}': {} bytes is not {} {} elements", origin, lineNo, name, r.bytes, elems,
         r.dtype);
  p.regions.push_back(std::move(r));
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

Program assemble(const Target &t, const std::string &text, const std::string &origin,
                 AsmSymbols *symbols) {
  Program p;
  AsmSymbols local;
  AsmSymbols &sym = symbols ? *symbols : local;
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
    while (mnemonic.size() > 1 && mnemonic.back() == ':') {
      std::string label = mnemonic.substr(0, mnemonic.size() - 1);
      if (!isIdentifier(label))
        fail("{}:{}: bad label '{}' (letters, digits, '_' and '.'; not starting with a digit)",
             origin, lineNo, label);
      if (!sym.labels.emplace(label, int64_t(p.instrs.size())).second)
        fail("{}:{}: label '{}' defined twice", origin, lineNo, label);
      if (!(toks >> mnemonic))
        break;
    }
    if (mnemonic.back() == ':')
      continue; // a label on its own line
    if (mnemonic[0] == '.') {
      directive(t, sym, mnemonic, toks, origin, lineNo);
      continue;
    }
    const InstrDesc *d = t.findInstr(mnemonic);
    if (!d)
      fail("{}:{}: unknown mnemonic '{}' for target '{}'", origin, lineNo, mnemonic, t.name);
    Instr in;
    in.desc = d;
    for (const Field &f : d->fields)
      in.set(f.name, 0);
    for (const auto &[name, value] : d->fixed)
      in.set(name, value);
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
      std::optional<int64_t> v = parseValue(t, *d, name, valueText, sym);
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
      in.set(name, *v);
    }
    p.instrs.push_back(std::move(in));
  }
  return p;
}

} // namespace npuc::isa
