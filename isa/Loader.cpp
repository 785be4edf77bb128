// Loader.cpp - reads a target description YAML (schema: docs/ISA.md, example:
// configs/npu-base.yaml) into an isa::Target and validates the machine part: memory levels,
// engines, tensor/vector units, DRAM and tokens. Instructions are handled by Instructions.cpp.
// Every rejection is an npuc::Error naming the file and the field path, because a target file
// is user input: a typo in it must never turn into a compiler assertion or a silent default.
#include "isa/LoaderInternal.h"
#include "isa/Target.h"
#include "isa/YamlNode.h"

#include "support/Error.h"
#include "support/Npy.h"

#include <cmath>
#include <set>

namespace npuc::isa {
namespace {

using detail::YNode;

bool isPowerOfTwo(int64_t v) {
  return v > 0 && (v & (v - 1)) == 0;
}

constexpr int64_t kIntMax = INT32_MAX;

/// A cost figure: finite and not negative.
double costValue(const YNode &y) {
  double v = y.asDouble();
  if (!std::isfinite(v) || v < 0)
    y.error(fmt::format("{} is not a finite, non-negative figure", v));
  return v;
}

std::optional<double> optCost(const YNode &y, const char *key) {
  if (auto v = y.opt(key))
    return costValue(*v);
  return std::nullopt;
}

void setCost(const YNode &y, const char *key, double &field) {
  if (auto v = optCost(y, key))
    field = *v;
}

/// A {fp16: x, fp32: y, int8: z, int32: w} map, each entry optional.
void setPerDtype(const YNode &y, const char *key, double (&field)[kNumDtypes]) {
  auto m = y.opt(key);
  if (!m)
    return;
  for (const auto &[name, v] : m->entries()) {
    int code = -1;
    for (int i = 0; i < kNumDtypes; ++i)
      if (name == kDtypeNames[i])
        code = i;
    if (code < 0)
      v.error(fmt::format("unknown dtype '{}' (expected fp16, fp32, int8 or int32)", name));
    field[code] = costValue(v);
  }
}

// `energy:` (docs/ENERGY.md): any subset of the EnergyTable's figures.
void parseEnergy(const YNode &y, Target &t) {
  y.allowKeys({"mac_pj", "vector_alu_pj", "vector_mul_pj", "vector_special_pj",
               "sram_read_pj_per_byte", "sram_write_pj_per_byte", "sram_ref_kib", "sram_exponent",
               "dram_pj_per_byte", "leakage_mw_per_mm2"});
  EnergyTable &e = t.energy;
  setPerDtype(y, "mac_pj", e.macPj);
  setCost(y, "vector_alu_pj", e.vectorAluPj);
  setCost(y, "vector_mul_pj", e.vectorMulPj);
  setCost(y, "vector_special_pj", e.vectorSpecialPj);
  setCost(y, "sram_read_pj_per_byte", e.sramReadPjPerByte);
  setCost(y, "sram_write_pj_per_byte", e.sramWritePjPerByte);
  setCost(y, "sram_ref_kib", e.sramRefKib);
  if (!(e.sramRefKib > 0))
    y.req("sram_ref_kib").error("must be positive");
  setCost(y, "sram_exponent", e.sramExponent);
  setCost(y, "dram_pj_per_byte", e.dramPjPerByte);
  setCost(y, "leakage_mw_per_mm2", e.leakageMwPerMm2);
}

// `area:` (docs/ENERGY.md): any subset of the AreaTable's figures.
void parseArea(const YNode &y, Target &t) {
  y.allowKeys({"mac_mm2", "vector_lane_mm2", "vector_special_lane_mm2", "sram_mm2_per_kib",
               "sram_bank_mm2", "sram_extra_port_fraction"});
  AreaTable &a = t.area;
  setPerDtype(y, "mac_mm2", a.macMm2);
  setCost(y, "vector_lane_mm2", a.vectorLaneMm2);
  setCost(y, "vector_special_lane_mm2", a.vectorSpecialLaneMm2);
  setCost(y, "sram_mm2_per_kib", a.sramMm2PerKib);
  setCost(y, "sram_bank_mm2", a.sramBankMm2);
  setCost(y, "sram_extra_port_fraction", a.sramExtraPortFraction);
}

void parseLevels(const YNode &seq, Target &t) {
  size_t n = seq.size();
  if (n == 0)
    seq.error("at least one memory level (the dram) is required");
  std::set<std::string> names;
  int drams = 0;
  for (size_t i = 0; i < n; ++i) {
    YNode raw = seq.at(i);
    raw.allowKeys({"name", "kind", "size", "banks", "bank_width", "alignment", "ports",
                   "read_pj_per_byte", "write_pj_per_byte", "area_mm2"});
    MemoryLevel l;
    l.name = raw.req("name").asString();
    YNode y = raw.relabel(raw.path() + " (" + l.name + ")");
    if (!names.insert(l.name).second)
      y.req("name").error("duplicate memory level name '" + l.name + "'");
    l.index = static_cast<int>(i);
    YNode kind = y.req("kind");
    std::string k = kind.asString();
    if (k != "dram" && k != "sram")
      kind.error("unknown kind '" + k + "' (expected dram or sram)");
    l.isDram = k == "dram";
    drams += l.isDram;
    l.size = y.req("size").asIntIn(1, INT64_MAX);
    l.banks = static_cast<int>(y.intOr("banks", 1, 1, 4096));
    l.bankWidth = static_cast<int>(y.intOr("bank_width", 64, 1, kIntMax));
    l.alignment = static_cast<int>(y.intOr("alignment", 1, 1, kIntMax));
    l.ports = static_cast<int>(y.intOr("ports", 1, 1, 64));
    l.cost.readPjPerByte = optCost(y, "read_pj_per_byte");
    l.cost.writePjPerByte = optCost(y, "write_pj_per_byte");
    l.cost.areaMm2 = optCost(y, "area_mm2");
    int64_t row = int64_t(l.banks) * l.bankWidth;
    if (l.size % row != 0)
      y.req("size").error(fmt::format("size {} is not a multiple of banks*bank_width = {}*{} = {}",
                                      l.size, l.banks, l.bankWidth, row));
    if (!isPowerOfTwo(l.alignment))
      y.req("alignment").error(fmt::format("alignment {} is not a power of two", l.alignment));
    t.levels.push_back(l);
  }
  if (drams != 1)
    seq.error(fmt::format("exactly one level must have kind dram, found {}", drams));
}

void parseEngines(const YNode &seq, Target &t) {
  size_t n = seq.size();
  if (n == 0)
    seq.error("at least one engine is required");
  std::set<std::string> names;
  for (size_t i = 0; i < n; ++i) {
    YNode raw = seq.at(i);
    raw.allowKeys({"name", "queue_depth", "bytes_per_cycle"});
    Engine e;
    e.name = raw.req("name").asString();
    YNode y = raw.relabel(raw.path() + " (" + e.name + ")");
    if (!names.insert(e.name).second)
      y.req("name").error("duplicate engine name '" + e.name + "'");
    e.index = static_cast<int>(i);
    e.queueDepth = static_cast<int>(y.intOr("queue_depth", 16, 1, 1 << 20));
    e.bytesPerCycle = y.doubleOr("bytes_per_cycle", 0);
    if (e.bytesPerCycle < 0)
      y.req("bytes_per_cycle").error("must not be negative");
    t.engines.push_back(e);
  }
}

/// A level named by a unit (tensor a/b/acc, vector levels): must exist and be on chip.
int onChipLevel(const YNode &y, const Target &t) {
  std::string name = y.asString();
  std::optional<int> l = t.findLevel(name);
  if (!l)
    y.error("unknown memory level '" + name + "'");
  if (t.levels[static_cast<size_t>(*l)].isDram)
    y.error("level '" + name + "' is the dram; compute units work on on-chip levels");
  return *l;
}

ElemType dtype(const YNode &y) {
  std::string s = y.asString();
  for (int i = 0; i < kNumDtypes; ++i)
    if (s == kDtypeNames[i])
      return static_cast<ElemType>(i);
  y.error("unknown dtype '" + s + "' (expected fp16, fp32, int8 or int32)");
}

void parseTensorUnit(const YNode &y, Target &t) {
  y.allowKeys({"rows", "cols", "operand_dtype", "acc_dtype", "dataflow", "a_level", "b_level",
               "acc_level", "fill_latency"});
  TensorUnit &u = t.tensor;
  u.rows = static_cast<int>(y.req("rows").asIntIn(1, 4096));
  u.cols = static_cast<int>(y.req("cols").asIntIn(1, 4096));
  u.operandType = dtype(y.req("operand_dtype"));
  u.accType = dtype(y.req("acc_dtype"));
  // Matmul semantics: float operands accumulate in fp32, int8 operands in int32.
  if (isIntegerType(u.operandType) ? (u.operandType != ElemType::I8 || u.accType != ElemType::I32)
                                   : u.accType != ElemType::F32)
    y.req("acc_dtype")
        .error(std::string("operand_dtype ") + kDtypeNames[int(u.operandType)] +
               " needs acc_dtype " + (isIntegerType(u.operandType) ? "int32" : "fp32") +
               " (Matmul semantics: fp16/fp32 operands accumulate in fp32, int8 in int32)");
  YNode df = y.req("dataflow");
  u.dataflow = df.asString();
  if (u.dataflow != "weight-stationary" && u.dataflow != "output-stationary" &&
      u.dataflow != "input-stationary")
    df.error("unknown dataflow '" + u.dataflow +
             "' (expected weight-stationary, output-stationary or input-stationary)");
  u.aLevel = onChipLevel(y.req("a_level"), t);
  u.bLevel = onChipLevel(y.req("b_level"), t);
  u.accLevel = onChipLevel(y.req("acc_level"), t);
  u.fillLatency = static_cast<int>(y.req("fill_latency").asIntIn(0, kIntMax));
}

void parseVectorUnit(const YNode &y, Target &t) {
  y.allowKeys({"lanes", "ops", "max_dims", "levels", "op_latency"});
  VectorUnit &v = t.vector;
  v.lanes = static_cast<int>(y.req("lanes").asIntIn(1, 1 << 16));
  YNode ops = y.req("ops");
  if (ops.size() == 0)
    ops.error("the vector op list is empty (at least copy is needed to move data)");
  for (size_t i = 0; i < ops.size(); ++i) {
    std::string name = ops.at(i).asString();
    std::optional<VecOp> op = vecOpFromName(name);
    if (!op)
      ops.at(i).error("unknown vector op '" + name + "' (known: " + vecOpNameList() + ")");
    if (v.supports(*op))
      ops.at(i).error("duplicate vector op '" + name + "'");
    v.ops.push_back(*op);
  }
  if (std::optional<YNode> lat = y.opt("op_latency"))
    for (const auto &[name, value] : lat->entries()) {
      std::optional<VecOp> op = vecOpFromName(name);
      if (!op)
        value.error("unknown vector op '" + name + "' (known: " + vecOpNameList() + ")");
      v.opLatency[static_cast<size_t>(*op)] = static_cast<int>(value.asIntIn(0, 1 << 16));
    }
  v.maxDims = static_cast<int>(y.req("max_dims").asIntIn(1, 3));
  YNode levels = y.req("levels");
  if (levels.size() == 0)
    levels.error("the vector unit needs at least one memory level");
  for (size_t i = 0; i < levels.size(); ++i) {
    int l = onChipLevel(levels.at(i), t);
    for (int prev : v.levels)
      if (prev == l)
        levels.at(i).error("duplicate level '" + t.levels[static_cast<size_t>(l)].name + "'");
    v.levels.push_back(l);
  }
}

void parseDram(const YNode &y, Target &t) {
  y.allowKeys({"bytes_per_cycle", "latency", "channels", "burst_bytes"});
  t.dram.bytesPerCycle = y.req("bytes_per_cycle").asDouble();
  if (!(t.dram.bytesPerCycle > 0))
    y.req("bytes_per_cycle").error("must be positive");
  t.dram.latency = static_cast<int>(y.req("latency").asIntIn(0, kIntMax));
  t.dram.channels = static_cast<int>(y.intOr("channels", 1, 1, 1024));
  t.dram.burstBytes = static_cast<int>(y.intOr("burst_bytes", 64, 1, kIntMax));
}

void parseOpcodeField(const YNode &y, Target &t) {
  y.allowKeys({"lsb", "width"});
  t.opcodeField.name = "opcode";
  t.opcodeField.lsb = static_cast<int>(y.req("lsb").asIntIn(0, t.instructionBits - 1));
  t.opcodeField.width = static_cast<int>(y.req("width").asIntIn(1, 32));
  if (t.opcodeField.lsb + t.opcodeField.width > t.instructionBits)
    y.error(fmt::format("bits [{}, {}) exceed instruction_bits {}", t.opcodeField.lsb,
                        t.opcodeField.lsb + t.opcodeField.width, t.instructionBits));
}

} // namespace

Target parseTarget(const std::string &yamlText, const std::string &origin) {
  YAML::Node doc;
  try {
    doc = YAML::Load(yamlText);
  } catch (const YAML::ParserException &e) {
    fail("{}:{}:{}: YAML syntax error: {}", origin, e.mark.line + 1, e.mark.column + 1, e.msg);
  } catch (const YAML::Exception &e) {
    fail("{}: cannot read YAML: {}", origin, e.what());
  }
  detail::rejectDuplicateKeys(doc, origin);
  YNode root(doc, "", &origin);
  if (!doc.IsMap())
    root.error("a target description must be a YAML map");
  root.allowKeys({"name", "description", "clock_ghz", "instruction_bits", "opcode", "memory",
                  "engines", "tensor_unit", "vector_unit", "dram", "tokens", "instructions",
                  "energy", "area"});
  Target t;
  t.path = origin;
  t.sourceText = yamlText;
  t.name = root.req("name").asString();
  if (auto d = root.opt("description"))
    d->asString(); // free text; only checked to be a scalar
  t.clockGhz = root.req("clock_ghz").asDouble();
  if (!(t.clockGhz > 0))
    root.req("clock_ghz").error("must be positive");
  YNode bits = root.req("instruction_bits");
  t.instructionBits = static_cast<int>(bits.asIntIn(8, 1 << 16));
  if (t.instructionBits % 8 != 0)
    bits.error(fmt::format("{} is not a multiple of 8", t.instructionBits));
  parseOpcodeField(root.req("opcode"), t);
  parseLevels(root.req("memory"), t);
  parseEngines(root.req("engines"), t);
  parseTensorUnit(root.req("tensor_unit"), t);
  parseVectorUnit(root.req("vector_unit"), t);
  parseDram(root.req("dram"), t);
  YNode tokens = root.req("tokens");
  tokens.allowKeys({"queue_depth"});
  t.tokenQueueDepth = static_cast<int>(tokens.req("queue_depth").asIntIn(1, 1 << 20));
  if (auto e = root.opt("energy"))
    parseEnergy(*e, t);
  if (auto a = root.opt("area"))
    parseArea(*a, t);
  detail::parseInstructions(root.req("instructions"), t);
  detail::checkAddressRanges(root.req("memory"), t);
  return t;
}

Target loadTarget(const std::string &path) {
  // readFile reports a missing/unreadable file as "<path>: cannot open file".
  std::string text = readFile(path);
  return parseTarget(text, path);
}

} // namespace npuc::isa
