// GenParams.cpp - npuc-rtl-gen: writes the RTL core's parameter header from a target YAML.
//
//   npuc-rtl-gen TARGET.yaml OUT.svh OUT_fingerprint.h
//
// Everything the Verilog needs to know about the target (instruction width, opcode and field
// positions, engine queue depths and DMA rates, memory level sizes, tensor/vector unit shape,
// vector op codes, timing latencies) is read through the isa library and emitted as
// SystemVerilog localparams, per-level/per-engine functions and decode macros, so nothing is typed
// twice. The C++ header carries a fingerprint of the YAML text so the harness can refuse a
// different target. Targets the RTL cannot implement (fractional rates, several DRAM channels,
// per-element timing, vector ops the RTL lacks, unbounded queues) are rejected here with the file
// and field named.
#include "isa/Program.h"
#include "isa/Target.h"
#include "support/Error.h"
#include "support/Hash.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

using namespace npuc;

namespace {

int integerRate(const isa::Target &t, double v, const std::string &what) {
  if (v <= 0 || std::floor(v) != v || v > 4096)
    fail("{}: {}: the RTL core needs an integer bytes_per_cycle in 1..4096, got {}", t.path, what,
         v);
  return static_cast<int>(v);
}

void checkSupported(const isa::Target &t) {
  if (t.dram.channels != 1)
    fail("{}: dram.channels: the RTL core models one DRAM channel, got {}", t.path,
         t.dram.channels);
  integerRate(t, t.dram.bytesPerCycle, "dram.bytes_per_cycle");
  for (const isa::Engine &e : t.engines) {
    if (e.queueDepth <= 0 || e.queueDepth > 256)
      fail("{}: engines[{}] ({}).queue_depth: the RTL core needs 1..256, got {}", t.path, e.index,
           e.name, e.queueDepth);
    if (e.bytesPerCycle != 0)
      integerRate(t, e.bytesPerCycle,
                  fmt::format("engines[{}] ({}).bytes_per_cycle", e.index, e.name));
  }
  if (t.engines.size() > 16)
    fail("{}: engines: the RTL core supports at most 16 engines", t.path);
  if (t.tokenQueueDepth <= 0 || t.tokenQueueDepth > 65535)
    fail("{}: tokens.queue_depth: the RTL core needs 1..65535, got {}", t.path, t.tokenQueueDepth);
  if (t.tensor.accType != isa::ElemType::F32)
    fail("{}: tensor_unit.acc_dtype: the RTL core accumulates in fp32 only", t.path);
  for (isa::VecOp op : t.vector.ops)
    if (!isa::vecOpInRtl(op)) // the `rtl` column of isa/VectorOps.def
      fail("{}: vector_unit.ops: the RTL vector unit does not implement '{}'", t.path,
           isa::vecOpName(op));
  // The memory port returns read data DRAM_LAT edges after it accepts the request, which is one
  // edge after the DMA registers it: the data must land within the instruction's tail.
  if (t.dram.latency < 1)
    fail("{}: dram.latency: the RTL core's memory port needs at least 1 cycle, got {}", t.path,
         t.dram.latency);
  auto onChip = [&](int level, const char *what) {
    if (level == t.dramLevel())
      fail("{}: {}: the RTL core reaches DRAM only through its DMA engines", t.path, what);
  };
  onChip(t.tensor.aLevel, "tensor_unit.a_level");
  onChip(t.tensor.bLevel, "tensor_unit.b_level");
  onChip(t.tensor.accLevel, "tensor_unit.acc_level");
  for (int l : t.vector.levels)
    onChip(l, "vector_unit.levels");
  for (size_t i = 0; i < t.instrs.size(); ++i) {
    const isa::InstrDesc &d = t.instrs[i];
    if (d.semantics == isa::Semantics::Dma && d.timing.latency < 1)
      fail("{}: instructions[{}] ({}).timing.latency: the RTL DMA needs at least 1 cycle (its "
           "memory-port request register)",
           t.path, i, d.mnemonic);
    if (d.semantics == isa::Semantics::Matmul && d.timing.latency + t.tensor.fillLatency < 1)
      fail("{}: instructions[{}] ({}): timing.latency + tensor_unit.fill_latency must be at "
           "least 1 (the array's write-back cycle)",
           t.path, i, d.mnemonic);
    if (d.timing.perElement != 0)
      fail("{}: instructions[{}] ({}).timing.per_element: the RTL core supports only 0", t.path, i,
           d.mnemonic);
    if (d.semantics == isa::Semantics::Dma &&
        t.engines[static_cast<size_t>(d.engine)].bytesPerCycle <= 0)
      fail("{}: instructions[{}] ({}): engine '{}' has no bytes_per_cycle", t.path, i, d.mnemonic,
           t.engines[static_cast<size_t>(d.engine)].name);
  }
}

int maxRate(const isa::Target &t) {
  int rateMax = 1;
  for (const isa::Engine &e : t.engines)
    rateMax = std::max(rateMax, static_cast<int>(e.bytesPerCycle));
  return rateMax;
}
int memLanes(const isa::Target &t) {
  return maxRate(t) + 7; // the simulator's decoder limits elem_bytes to 1..8
}
int memAddrBits(const isa::Target &t) {
  const isa::MemoryLevel &d = t.levels.at(static_cast<size_t>(t.dramLevel()));
  return std::max(1, static_cast<int>(std::bit_width(static_cast<uint64_t>(d.size - 1))));
}

std::string hex(uint64_t v) {
  return fmt::format("64'h{:x}", v);
}

/// The extraction expression of field `name` for instruction `d` (a 64-bit value).
std::string fieldExpr(const isa::InstrDesc &d, const std::string &name) {
  if (const isa::Field *f = d.field(name)) {
    std::string slice = fmt::format("w[{}:{}]", f->lsb + f->width - 1, f->lsb);
    if (f->width == 64)
      return slice;
    if (f->isSigned)
      return fmt::format("{{{{{}{{w[{}]}}}}, {}}}", 64 - f->width, f->lsb + f->width - 1, slice);
    return fmt::format("{{{}'d0, {}}}", 64 - f->width, slice);
  }
  auto it = d.fixed.find(name);
  if (it != d.fixed.end())
    return hex(static_cast<uint64_t>(it->second));
  // Fields an instruction lacks read 0, except extents, which read 1 (docs/SIMULATOR.md).
  return (name == "n0" || name == "n1" || name == "n2") ? "64'd1" : "64'd0";
}

std::string generate(const isa::Target &t) {
  std::ostringstream o;
  const int opLsb = t.opcodeField.lsb, opW = t.opcodeField.width;
  o << "// npu_params.svh - GENERATED by npuc-rtl-gen from " << t.path << " (target '" << t.name
    << "'). Do not edit.\n";
  // The header describes the whole target: a parameter the core does not use (NLEVELS, a copy
  // op code) is still part of it, and eng_has_sem reads only the low bits of its `int` argument.
  // Both lint waivers end with the header.
  o << "/* verilator lint_off UNUSEDPARAM */\n/* verilator lint_off UNUSEDSIGNAL */\n";
  o << fmt::format("localparam int IBITS = {};\n", t.instructionBits);
  o << fmt::format("localparam int NENG = {};\n", t.engines.size());
  o << fmt::format("localparam int NLEVELS = {};\n", t.levels.size());
  o << fmt::format("localparam int DRAM_LEVEL = {};\n", t.dramLevel());
  int64_t spm = 0;
  int qmax = 1, rateMax = 1;
  for (const isa::MemoryLevel &l : t.levels)
    if (!l.isDram)
      spm += l.size;
  for (const isa::Engine &e : t.engines) {
    qmax = std::max(qmax, e.queueDepth);
    rateMax = std::max(rateMax, static_cast<int>(e.bytesPerCycle));
  }
  o << fmt::format("localparam int SPM_BYTES = {};\n", spm);
  o << fmt::format("localparam int QMAX = {};\n", qmax);
  o << fmt::format("localparam int RATE_MAX = {};\n", rateMax);
  o << fmt::format("localparam int DRAM_RATE = {};\n", static_cast<int>(t.dram.bytesPerCycle));
  o << fmt::format("localparam int DRAM_LAT = {};\n", t.dram.latency);
  // Memory port: a beat carries at most one cycle of DMA credit (RATE_MAX bytes plus the
  // element that the carried-over credit completes, elements being at most 8 bytes), each lane
  // addressing one byte of DRAM.
  o << fmt::format("localparam int MEM_LANES = {};\n", memLanes(t));
  o << fmt::format("localparam int MEM_AW = {};\n", memAddrBits(t));
  o << fmt::format("localparam int TOKEN_DEPTH = {};\n", t.tokenQueueDepth);
  o << fmt::format("localparam int TU_ROWS = {};\n", t.tensor.rows);
  o << fmt::format("localparam int TU_COLS = {};\n", t.tensor.cols);
  o << fmt::format("localparam int TU_FILL = {};\n", t.tensor.fillLatency);
  o << fmt::format("localparam int TU_A_LEVEL = {};\n", t.tensor.aLevel);
  o << fmt::format("localparam int TU_B_LEVEL = {};\n", t.tensor.bLevel);
  o << fmt::format("localparam int TU_ACC_LEVEL = {};\n", t.tensor.accLevel);
  o << fmt::format("localparam int TU_OPERAND_F32 = {};\n",
                   t.tensor.operandType == isa::ElemType::F32 ? 1 : 0);
  o << fmt::format("localparam int VU_LANES = {};\n", t.vector.lanes);
  for (isa::VecOp k : isa::kAllVecOps) { // the ops the RTL implements (hdl/: OP_<NAME>)
    if (!isa::vecOpInRtl(k))
      continue;
    std::string u = isa::vecOpName(k);
    for (char &c : u)
      c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    o << fmt::format("localparam int OP_{} = {};\n", u, t.vector.opCode(k));
  }
  o << "localparam int SEM_DMA = 0, SEM_MATMUL = 1, SEM_VECTOR = 2, SEM_FINISH = 3;\n\n";

  auto levelFn = [&](const char *name, auto value) {
    o << fmt::format("function automatic longint {}(input int l);\n  case (l)\n", name);
    int64_t base = 0;
    for (const isa::MemoryLevel &l : t.levels) {
      o << fmt::format("    {}: {} = {};\n", l.index, name, value(l, base));
      if (!l.isDram)
        base += l.size;
    }
    o << fmt::format("    default: {} = 0;\n  endcase\nendfunction\n", name);
  };
  levelFn("level_base",
          [](const isa::MemoryLevel &l, int64_t base) { return l.isDram ? int64_t(0) : base; });
  levelFn("level_size",
          [](const isa::MemoryLevel &l, int64_t) { return l.isDram ? int64_t(0) : l.size; });
  // vector_unit.op_latency: extra tail cycles of a vop, by op code.
  o << "function automatic int vop_latency(input int op);\n  case (op)\n";
  for (size_t c = 0; c < t.vector.ops.size(); ++c)
    if (int lat = t.vector.latencyOf(t.vector.ops[c]); lat > 0)
      o << fmt::format("    {}: vop_latency = {};\n", c, lat);
  o << "    default: vop_latency = 0;\n  endcase\nendfunction\n";
  o << "function automatic int eng_depth(input int e);\n  case (e)\n";
  for (const isa::Engine &e : t.engines)
    o << fmt::format("    {}: eng_depth = {};\n", e.index, e.queueDepth);
  o << "    default: eng_depth = 1;\n  endcase\nendfunction\n";
  o << "function automatic int eng_rate(input int e);\n  case (e)\n";
  for (const isa::Engine &e : t.engines)
    o << fmt::format("    {}: eng_rate = {};\n", e.index, static_cast<int>(e.bytesPerCycle));
  o << "    default: eng_rate = 0;\n  endcase\nendfunction\n";
  // Which semantics an engine executes (the instructions naming it): the core builds a unit's
  // datapath only into the engines that run it, so synthesis does not replicate every unit per
  // engine.
  o << "function automatic logic eng_has_sem(input int e, input int s);\n";
  o << "  logic [3:0] m;\n  case (e)\n";
  for (const isa::Engine &e : t.engines) {
    unsigned mask = 0;
    for (const isa::InstrDesc &d : t.instrs)
      if (d.engine == e.index)
        mask |= 1u << static_cast<int>(d.semantics);
    o << fmt::format("    {}: m = 4'b{:04b};\n", e.index, mask);
  }
  o << "    default: m = 4'b0000;\n  endcase\n";
  o << "  eng_has_sem = s >= 0 && s < 4 && m[s[1:0]];\nendfunction\n\n";

  // Decode: one macro per property / primitive field, a conditional chain over the opcode that
  // selects each instruction's bit slice (or fixed value, or default). Macros rather than
  // functions: a function copies its IBITS-wide argument at every call, which the core makes
  // hundreds of times per cycle, and yosys 0.23 elaborates each copy into muxes (the synthesis
  // check would not finish); an expression over the caller's word copies nothing. The argument
  // must be a name or an indexed name (`w`, `cur_w[e]`): the macro selects bits of it.
  o << fmt::format("localparam int OPC_MSB = {};\n", opLsb + opW - 1);
  auto opcodeCase = [&](const std::string &fn, const std::string &, auto expr,
                        const std::string &dflt) {
    o << fmt::format("`define {}(w) ( \\\n", fn);
    for (const isa::InstrDesc &d : t.instrs)
      o << fmt::format("    w[{}:{}] == {}'d{} ? {} : \\\n", opLsb + opW - 1, opLsb, opW, d.opcode,
                       expr(d));
    o << fmt::format("    {})\n", dflt);
  };
  opcodeCase(
      "instr_valid", "logic", [](const isa::InstrDesc &) { return std::string("1'b1"); }, "1'b0");
  opcodeCase(
      "instr_engine", "int", [](const isa::InstrDesc &d) { return std::to_string(d.engine); }, "0");
  opcodeCase(
      "instr_sem", "int",
      [](const isa::InstrDesc &d) { return std::to_string(static_cast<int>(d.semantics)); },
      "SEM_FINISH");
  opcodeCase(
      "instr_latency", "int",
      [](const isa::InstrDesc &d) { return std::to_string(d.timing.latency); }, "0");
  std::set<std::string> names;
  for (isa::Semantics s : {isa::Semantics::Dma, isa::Semantics::Matmul, isa::Semantics::Vector,
                           isa::Semantics::Finish})
    for (const std::string &f : isa::primitiveFields(s))
      names.insert(f);
  for (const std::string &name : names)
    opcodeCase(
        "f_" + name, "logic [63:0]", [&](const isa::InstrDesc &d) { return fieldExpr(d, name); },
        (name == "n0" || name == "n1" || name == "n2") ? "64'd1" : "64'd0");
  o << "/* verilator lint_on UNUSEDSIGNAL */\n/* verilator lint_on UNUSEDPARAM */\n";
  return o.str();
}

void writeIfChanged(const std::string &path, const std::string &text) {
  {
    std::ifstream in(path, std::ios::binary);
    std::stringstream cur;
    cur << in.rdbuf();
    if (in && cur.str() == text)
      return; // keep the timestamp: no re-verilation
  }
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out)
    fail("{}: cannot write", path);
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 4) {
    std::cerr << "usage: npuc-rtl-gen TARGET.yaml OUT.svh OUT_fingerprint.h\n";
    return 2;
  }
  try {
    isa::Target t = isa::loadTarget(argv[1]);
    checkSupported(t);
    writeIfChanged(argv[2], generate(t));
    writeIfChanged(argv[3],
                   fmt::format("// GENERATED by npuc-rtl-gen from {}. Do not edit.\n#pragma once\n"
                               "#include <cstdint>\n"
                               "namespace npuc::rtl::gen {{\n"
                               "inline constexpr const char *kTargetName = \"{}\";\n"
                               "inline constexpr uint64_t kTargetFingerprint = 0x{:x}ull;\n"
                               "inline constexpr int kImemWords = NPUC_RTL_IMEM_WORDS;\n"
                               "inline constexpr int kMemLanes = {};\n"
                               "inline constexpr int kMemAddrBits = {};\n"
                               "}} // namespace npuc::rtl::gen\n",
                               t.path, t.name, fnv1a(t.sourceText), memLanes(t), memAddrBits(t)));
  } catch (const Error &e) {
    std::cerr << "npuc-rtl-gen: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
