// SimTestUtil.h - a tiny hand-built target and instruction builders for the simulator tests.
//
// The tests build isa::Target structs directly (no YAML loader) so they exercise exactly the
// fields the simulator reads. The target has DRAM, an L1 scratchpad, tensor operand/accumulator
// buffers and five engines: load (DRAM->on-chip DMA), tensor, vector, store (on-chip->DRAM DMA)
// and move (on-chip DMA).
#pragma once

#include "isa/Program.h"
#include "isa/Target.h"
#include "simulator/Simulator.h"
#include "support/Error.h"
#include "support/Half.h"

#include <cstring>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace simtest {

using namespace npuc;

enum Level { DRAM = 0, L1 = 1, L0A = 2, L0B = 3, ACC = 4 };
enum EngineId { LOAD = 0, TENSOR = 1, VECTOR = 2, STORE = 3, MOVE = 4 };

struct TargetOptions {
  int l1Banks = 8;
  int l1Ports = 1;
  int bankWidth = 64;
  double dramBytesPerCycle = 16;
  int dramLatency = 100;
  int dramChannels = 1;
  int fillLatency = 10;
  int vectorLanes = 8;
  int queueDepth = 16;
  int tokenQueueDepth = 32;
};

inline isa::Field field(const std::string &name) {
  return isa::Field{name, 0, 32, false};
}

inline std::unique_ptr<isa::Target> makeTarget(const TargetOptions &o = {}) {
  auto t = std::make_unique<isa::Target>();
  t->name = "tiny";
  auto level = [&](const char *name, int index, bool dram, int64_t size, int banks, int ports = 1) {
    isa::MemoryLevel l;
    l.name = name;
    l.index = index;
    l.isDram = dram;
    l.size = size;
    l.banks = banks;
    l.bankWidth = o.bankWidth;
    l.ports = ports;
    t->levels.push_back(l);
  };
  level("dram", DRAM, true, 0, 1);
  level("l1", L1, false, 64 * 1024, o.l1Banks, o.l1Ports);
  level("l0a", L0A, false, 16 * 1024, 1);
  level("l0b", L0B, false, 16 * 1024, 1);
  level("acc", ACC, false, 32 * 1024, 1);
  const char *engines[] = {"load", "tensor", "vector", "store", "move"};
  double bpc[] = {32, 0, 0, 32, 8};
  for (int i = 0; i < 5; ++i)
    t->engines.push_back({engines[i], i, o.queueDepth, bpc[i]});
  t->tensor.rows = 4;
  t->tensor.cols = 4;
  t->tensor.aLevel = L0A;
  t->tensor.bLevel = L0B;
  t->tensor.accLevel = ACC;
  t->tensor.fillLatency = o.fillLatency;
  t->vector.lanes = o.vectorLanes;
  using isa::VecOp;
  t->vector.ops = {VecOp::Copy, VecOp::Add,  VecOp::Sub,    VecOp::Mul, VecOp::Max,  VecOp::Min,
                   VecOp::Relu, VecOp::Clip, VecOp::MulAdd, VecOp::Exp, VecOp::Tanh, VecOp::Sigmoid,
                   VecOp::Div,  VecOp::Sqrt, VecOp::Mac,    VecOp::Erf};
  t->vector.levels = {L1, ACC};
  t->dram.bytesPerCycle = o.dramBytesPerCycle;
  t->dram.latency = o.dramLatency;
  t->dram.channels = o.dramChannels;
  t->tokenQueueDepth = o.tokenQueueDepth;
  auto instr = [&](const char *mn, int engine, isa::Semantics s, std::vector<std::string> names) {
    isa::InstrDesc d;
    d.mnemonic = mn;
    d.opcode = t->instrs.size() + 1;
    d.engine = engine;
    d.semantics = s;
    names.insert(names.begin(), {"pop", "push"});
    for (const std::string &n : names)
      d.fields.push_back(field(n));
    t->instrs.push_back(d);
  };
  std::vector<std::string> dma = {
      "src_space", "src_addr", "dst_space", "dst_addr", "elem_bytes", "n0",      "n1",
      "n2",        "src_s0",   "src_s1",    "src_s2",   "dst_s0",     "dst_s1",  "dst_s2",
      "pad0_lo",   "pad0_hi",  "pad1_lo",   "pad1_hi",  "pad2_lo",    "pad2_hi", "pad_value"};
  std::vector<std::string> vec = {
      "op",         "dst_space",  "dst_addr",  "dst_dtype",  "src1_space", "src1_addr",
      "src1_dtype", "src2_space", "src2_addr", "src2_dtype", "n0",         "n1",
      "n2",         "dst_s0",     "dst_s1",    "dst_s2",     "src1_s0",    "src1_s1",
      "src1_s2",    "src2_s0",    "src2_s1",   "src2_s2",    "imm0",       "imm1"};
  instr("ld", LOAD, isa::Semantics::Dma, dma);
  instr("mm", TENSOR, isa::Semantics::Matmul,
        {"a_addr", "b_addr", "c_addr", "m", "k", "n", "accumulate"});
  instr("vop", VECTOR, isa::Semantics::Vector, vec);
  instr("st", STORE, isa::Semantics::Dma, dma);
  instr("mv", MOVE, isa::Semantics::Dma, dma);
  isa::InstrDesc fin;
  fin.mnemonic = "fin";
  fin.opcode = 99;
  fin.engine = -1;
  fin.semantics = isa::Semantics::Finish;
  t->instrs.push_back(fin);
  return t;
}

inline const isa::InstrDesc *desc(const isa::Target &t, const std::string &mn) {
  for (const isa::InstrDesc &d : t.instrs)
    if (d.mnemonic == mn)
      return &d;
  return nullptr;
}

/// Builds an instruction from (field, value) pairs. Unspecified fields are absent and read as 0
/// (as in assembly), except that the helper sets n1 = n2 = 1 for Dma/Vector unless given, so a
/// test writes only the dimensions it uses.
inline isa::Instr make(const isa::Target &t, const std::string &mn,
                       std::initializer_list<std::pair<const char *, int64_t>> fields) {
  isa::Instr in;
  in.desc = desc(t, mn);
  if (in.desc &&
      (in.desc->semantics == isa::Semantics::Dma || in.desc->semantics == isa::Semantics::Vector)) {
    in.set("n1", 1);
    in.set("n2", 1);
  }
  for (auto &[k, v] : fields)
    in.set(k, v);
  return in;
}

/// A contiguous 1-D DMA of `bytes` bytes (elem_bytes 1).
inline isa::Instr copy1d(const isa::Target &t, const std::string &mn, int srcSpace, int64_t src,
                         int dstSpace, int64_t dst, int64_t bytes, int64_t pop = 0,
                         int64_t push = 0) {
  return make(t, mn,
              {{"src_space", srcSpace},
               {"src_addr", src},
               {"dst_space", dstSpace},
               {"dst_addr", dst},
               {"elem_bytes", 1},
               {"n0", bytes},
               {"n1", 1},
               {"n2", 1},
               {"src_s0", 1},
               {"dst_s0", 1},
               {"pop", pop},
               {"push", push}});
}

inline int64_t f32bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

inline void putHalf(sim::Memory &m, int level, int64_t addr, float v) {
  uint16_t h = floatToHalf(v);
  std::memcpy(m.level(level).data() + addr, &h, 2);
}
inline uint16_t getHalfBits(sim::Memory &m, int level, int64_t addr) {
  uint16_t h;
  std::memcpy(&h, m.level(level).data() + addr, 2);
  return h;
}
inline void putF32(sim::Memory &m, int level, int64_t addr, float v) {
  std::memcpy(m.level(level).data() + addr, &v, 4);
}
inline uint32_t getF32Bits(sim::Memory &m, int level, int64_t addr) {
  uint32_t u;
  std::memcpy(&u, m.level(level).data() + addr, 4);
  return u;
}
inline uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

/// The trace event of program index `i`.
inline const sim::TraceEvent &eventOf(const sim::SimStats &s, int64_t i) {
  for (const sim::TraceEvent &e : s.trace)
    if (e.index == i)
      return e;
  static sim::TraceEvent none;
  return none;
}

} // namespace simtest
