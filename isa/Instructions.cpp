// Instructions.cpp - reads the `instructions:` list of a target description and checks that
// the instruction set is encodable and complete: opcodes unique and within the opcode field,
// field bit ranges inside the word and disjoint, every field a semantics primitive reads either
// encoded or fixed, pop/push wide enough for a token bit per engine, and names that refer to
// real engines and memory levels. Layout rule: fields without an explicit `lsb` follow the
// previous field (the first one follows the opcode), in the listed order.
#include "isa/LoaderInternal.h"

#include "support/Error.h"

#include <algorithm>
#include <set>

namespace npuc::isa::detail {
namespace {

std::optional<Semantics> parseSemanticsName(const std::string &s) {
  for (Semantics v : {Semantics::Dma, Semantics::Matmul, Semantics::Vector, Semantics::Finish})
    if (s == semanticsName(v))
      return v;
  return std::nullopt;
}

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// Tracks which instruction bits are taken so overlaps name the other owner.
class BitMap {
public:
  BitMap(int bits, const Field &opcode) : owner_(static_cast<size_t>(bits)) {
    take(opcode.lsb, opcode.width, "the opcode");
  }
  /// Returns the owner of the first clashing bit, or empty when [lsb, lsb+width) was free.
  std::string take(int lsb, int width, const std::string &who) {
    for (int b = lsb; b < lsb + width; ++b)
      if (!owner_[static_cast<size_t>(b)].empty())
        return owner_[static_cast<size_t>(b)];
    for (int b = lsb; b < lsb + width; ++b)
      owner_[static_cast<size_t>(b)] = who;
    return "";
  }

private:
  std::vector<std::string> owner_;
};

void parseFields(const YNode &seq, const Target &t, InstrDesc &d) {
  const std::vector<std::string> &allowed = primitiveFields(d.semantics);
  BitMap bits(t.instructionBits, t.opcodeField);
  int cursor = t.opcodeField.lsb + t.opcodeField.width;
  for (size_t i = 0; i < seq.size(); ++i) {
    YNode raw = seq.at(i);
    raw.allowKeys({"name", "width", "signed", "lsb"});
    Field f;
    f.name = raw.req("name").asString();
    std::string base = seq.path();
    YNode y = raw.relabel(base + "." + f.name);
    if (std::find(allowed.begin(), allowed.end(), f.name) == allowed.end()) {
      std::string list;
      for (const std::string &a : allowed)
        list += (list.empty() ? "" : " ") + a;
      y.error(fmt::format("unknown field '{}' for {} semantics (it reads: {})", f.name,
                          semanticsName(d.semantics), list));
    }
    if (d.field(f.name))
      y.error("duplicate field '" + f.name + "'");
    f.width = static_cast<int>(y.req("width").asIntIn(1, 64));
    if (auto s = y.opt("signed"))
      f.isSigned = s->asBool();
    f.lsb = cursor;
    if (auto l = y.opt("lsb"))
      f.lsb = static_cast<int>(l->asIntIn(0, t.instructionBits - 1));
    if (f.lsb + f.width > t.instructionBits)
      y.error(fmt::format("bits [{}, {}) exceed instruction_bits {}", f.lsb, f.lsb + f.width,
                          t.instructionBits));
    std::string clash = bits.take(f.lsb, f.width, "field '" + f.name + "'");
    if (!clash.empty())
      y.error(fmt::format("bits [{}, {}) overlap {}", f.lsb, f.lsb + f.width, clash));
    cursor = f.lsb + f.width;
    d.fields.push_back(f);
  }
}

/// A fixed value: an integer, or a level name for *_space, a dtype name for *_dtype, a vector
/// op name for `op`, so that descriptions read as "src_space: dram" rather than a magic index.
int64_t fixedValue(const YNode &y, const std::string &name, const Target &t) {
  std::string s = y.asString();
  bool numeric = !s.empty() && (std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '-');
  if (numeric)
    return y.asInt();
  if (endsWith(name, "_space")) {
    if (std::optional<int> l = t.findLevel(s))
      return *l;
    y.error("unknown memory level '" + s + "'");
  }
  if (endsWith(name, "_dtype")) {
    for (int i = 0; i < kNumDtypes; ++i)
      if (s == kDtypeNames[i])
        return i;
    y.error("unknown dtype '" + s + "' (expected fp16, fp32, int8 or int32)");
  }
  if (name == "op") {
    std::optional<VecOp> op = vecOpFromName(s);
    int code = op ? t.vector.opCode(*op) : -1;
    if (code < 0)
      y.error("'" + s + "' is not in vector_unit.ops");
    return code;
  }
  y.error("expected an integer, found '" + s + "'");
}

void parseFixed(const YNode &map, const Target &t, InstrDesc &d) {
  const std::vector<std::string> &allowed = primitiveFields(d.semantics);
  for (auto &[name, y] : map.entries()) {
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end())
      y.error(fmt::format("unknown field '{}' for {} semantics", name, semanticsName(d.semantics)));
    if (name == "pop" || name == "push")
      y.error("pop and push carry the dependency tokens and must be encoded, not fixed");
    if (d.field(name))
      y.error("field '" + name + "' is both encoded in fields and fixed");
    int64_t v = fixedValue(y, name, t);
    if (endsWith(name, "_space") && (v < 0 || v >= int64_t(t.levels.size())))
      y.error(fmt::format("{} is not a memory level index (0..{})", v, t.levels.size() - 1));
    if (endsWith(name, "_dtype") && (v < 0 || v >= kNumDtypes))
      y.error(fmt::format("{} is not a dtype code (0..{})", v, kNumDtypes - 1));
    d.fixed[name] = v;
  }
}

/// Checks that apply once all fields of one instruction are known.
void checkCoverage(const YNode &y, const Target &t, const InstrDesc &d) {
  // Messages about one field carry the fields list's line; the field may have no node at all.
  YNode fieldsNode = y.req("fields");
  std::string fieldsPath = fieldsNode.path();
  for (const std::string &name : primitiveFields(d.semantics))
    if (!d.hasField(name))
      fieldsNode.relabel(fieldsPath + "." + name)
          .error(fmt::format("missing: the {} primitive reads '{}'; encode it in fields or give "
                             "it in fixed",
                             semanticsName(d.semantics), name));
  int engines = static_cast<int>(t.engines.size());
  for (const Field &f : d.fields) {
    auto where = [&] { return fieldsNode.relabel(fieldsPath + "." + f.name); };
    if ((f.name == "pop" || f.name == "push") && (f.width < engines || f.isSigned))
      where().error(fmt::format("{} needs an unsigned bit per engine: width {} < {} engines",
                                f.name, f.width, engines));
    if (endsWith(f.name, "_space") && f.maxValue() < int64_t(t.levels.size()) - 1)
      where().error(
          fmt::format("width {} cannot hold memory level index {}", f.width, t.levels.size() - 1));
    if (f.name == "op" && f.maxValue() < int64_t(t.vector.ops.size()) - 1)
      where().error(
          fmt::format("width {} cannot hold vector op index {}", f.width, t.vector.ops.size() - 1));
  }
  const Engine &e = t.engines[static_cast<size_t>(d.engine)];
  if (d.semantics == Semantics::Dma && !(e.bytesPerCycle > 0))
    y.req("engine").error("engine '" + e.name +
                          "' runs a dma instruction but has no bytes_per_cycle");
}

InstrDesc parseInstr(const YNode &raw, const Target &t) {
  raw.allowKeys(
      {"mnemonic", "opcode", "engine", "semantics", "fields", "fixed", "timing", "description"});
  InstrDesc d;
  d.mnemonic = raw.req("mnemonic").asString();
  YNode y = raw.relabel(raw.path() + " (" + d.mnemonic + ")");
  if (d.mnemonic.empty() || d.mnemonic.find_first_of(" \t=#") != std::string::npos)
    y.req("mnemonic").error("a mnemonic must be one word without '=' or '#'");
  int64_t maxOpcode = (int64_t(1) << t.opcodeField.width) - 1;
  YNode op = y.req("opcode");
  int64_t opcode = op.asInt();
  if (opcode < 0 || opcode > maxOpcode)
    op.error(fmt::format("opcode {} does not fit the {}-bit opcode field (0..{})", opcode,
                         t.opcodeField.width, maxOpcode));
  d.opcode = static_cast<uint64_t>(opcode);
  YNode eng = y.req("engine");
  std::optional<int> e = t.findEngine(eng.asString());
  if (!e)
    eng.error("unknown engine '" + eng.asString() + "'");
  d.engine = *e;
  YNode sem = y.req("semantics");
  std::optional<Semantics> s = parseSemanticsName(sem.asString());
  if (!s)
    sem.error("unknown semantics '" + sem.asString() + "' (expected dma, matmul, vector, finish)");
  d.semantics = *s;
  parseFields(y.req("fields"), t, d);
  if (auto f = y.opt("fixed"))
    parseFixed(*f, t, d);
  if (auto tm = y.opt("timing")) {
    tm->allowKeys({"latency", "per_element"});
    d.timing.latency = static_cast<int>(tm->intOr("latency", 0, 0, INT32_MAX));
    d.timing.perElement = tm->doubleOr("per_element", 0);
    if (d.timing.perElement < 0)
      tm->req("per_element").error("must not be negative");
  }
  if (auto desc = y.opt("description"))
    desc->asString();
  checkCoverage(y, t, d);
  return d;
}

// The levels an instruction's address field `addr` ("dst_addr", "a_addr") can point into: the
// tensor unit's levels for a matmul; else the level a fixed *_space names; else every level the
// vector unit works on, or for a dma every on-chip level (the dram is reached through
// instructions whose space is fixed to it, such as npu-base's ld and st).
std::vector<int> addressedLevels(const Target &t, const InstrDesc &d, const std::string &addr) {
  if (d.semantics == Semantics::Matmul)
    return {addr == "a_addr"   ? t.tensor.aLevel
            : addr == "b_addr" ? t.tensor.bLevel
                               : t.tensor.accLevel};
  auto fixed = d.fixed.find(addr.substr(0, addr.size() - 5) + "_space");
  if (fixed != d.fixed.end())
    return {int(fixed->second)};
  if (d.semantics == Semantics::Vector)
    return t.vector.levels;
  std::vector<int> onChip;
  for (const MemoryLevel &l : t.levels)
    if (!l.isDram)
      onChip.push_back(l.index);
  return onChip;
}

} // namespace

void checkAddressRanges(const YNode &memory, const Target &t) {
  struct Reach {
    int64_t bytes = INT64_MAX; // what the narrowest field reaching the level can address
    std::string field;         // "instructions[1] (mov).fields.dst_addr (24 bits)"
  };
  std::vector<Reach> reach(t.levels.size());
  for (size_t i = 0; i < t.instrs.size(); ++i) {
    const InstrDesc &d = t.instrs[i];
    for (const Field &f : d.fields) {
      if (!endsWith(f.name, "_addr"))
        continue;
      const int64_t max = f.maxValue();
      Reach r{max == INT64_MAX ? max : max + 1,
              fmt::format("instructions[{}] ({}).fields.{} ({}{} bits)", i, d.mnemonic, f.name,
                          f.isSigned ? "signed, " : "", f.width)};
      for (int l : addressedLevels(t, d, f.name))
        if (r.bytes < reach[size_t(l)].bytes)
          reach[size_t(l)] = r;
    }
  }
  // The largest on-chip level npuc models, whatever its address fields allow: the compiler and
  // the simulator keep per-byte state for on-chip memories (a 1 GiB L1 took minutes and as much
  // host memory). Real scratchpads are far smaller (npu-large's L1 is 8 MiB).
  constexpr int64_t kMaxOnChipBytes = int64_t(256) << 20;
  for (const MemoryLevel &l : t.levels) {
    // The dram may be larger than its address fields reach: only the image a program uses is
    // held, and a tensor placed out of reach is an encoding Reject the compiler handles (the
    // group moves to the CPU; tests/e2e/RetryTest.cpp).
    if (l.isDram)
      continue;
    const YNode size =
        memory.at(size_t(l.index))
            .relabel(fmt::format("{} ({}).size", memory.at(size_t(l.index)).path(), l.name));
    const Reach &r = reach[size_t(l.index)];
    if (l.size > r.bytes)
      size.error(
          fmt::format("{} bytes, but {} addresses at most {} bytes", l.size, r.field, r.bytes));
    if (l.size > kMaxOnChipBytes)
      size.error(fmt::format("{} bytes exceeds {} bytes, the largest on-chip level npuc models",
                             l.size, kMaxOnChipBytes));
  }
}

void parseInstructions(const YNode &seq, Target &t) {
  size_t n = seq.size();
  if (n == 0)
    seq.error("the instruction set is empty");
  for (size_t i = 0; i < n; ++i) {
    InstrDesc d = parseInstr(seq.at(i), t);
    YNode y = seq.at(i).relabel(seq.at(i).path() + " (" + d.mnemonic + ")");
    for (size_t j = 0; j < t.instrs.size(); ++j) {
      const InstrDesc &o = t.instrs[j];
      if (o.mnemonic == d.mnemonic)
        y.req("mnemonic")
            .error(fmt::format("duplicate mnemonic '{}' (also instructions[{}])", d.mnemonic, j));
      if (o.opcode == d.opcode)
        y.req("opcode").error(fmt::format("opcode {} is already used by '{}' (instructions[{}])",
                                          d.opcode, o.mnemonic, j));
    }
    t.instrs.push_back(std::move(d));
  }
}

} // namespace npuc::isa::detail
