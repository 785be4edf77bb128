// RtlCore.cpp - runs the verilated NPU core (runRtl) and co-simulates it with the simulator
// (cosim).
//
// The harness is the testbench a bring-up team would write: it backdoor-loads the instruction
// memory and scratchpads, implements the core's DRAM port (the npu_dram_read/npu_dram_write DPI
// imports) on the DRAM image, records every retired instruction (npu_retire), and clocks the
// core until it raises `done` or `deadlock`. Programs are validated with the simulator's decoder
// first, so the RTL only ever sees programs whose accesses are in bounds.
#include "simulator/rtl/RtlCore.h"
#include "support/Hash.h"

#include "simulator/Decode.h"
#include "support/Error.h"

#include "Vnpu_core.h"
#include "Vnpu_core__Dpi.h"
#include "Vnpu_core___024root.h"
#include "Vnpu_core_npu_core.h"
#include "npu_fingerprint.h"
#include "verilated.h"
#include "verilated_vcd_c.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <type_traits>

namespace npuc::rtl {

namespace {

/// What the DPI callbacks of the running core operate on (one run at a time per thread).
struct RunContext {
  std::vector<uint8_t> *dram = nullptr;
  std::vector<sim::TraceEvent> *trace = nullptr;
  const isa::Program *program = nullptr;
  const std::vector<DramFault> *faults = nullptr;
  int64_t badAddress = -1;
};
thread_local RunContext *gRun = nullptr;

template <class T> void setWord(T &dst, const uint8_t *b, int nbytes) {
  if constexpr (std::is_integral_v<T>) {
    uint64_t v = 0;
    for (int i = 0; i < nbytes; ++i)
      v |= uint64_t(b[i]) << (8 * i);
    dst = static_cast<T>(v);
  } else {
    for (int w = 0; 4 * w < nbytes; ++w) {
      uint32_t v = 0;
      for (int i = 0; i < 4 && 4 * w + i < nbytes; ++i)
        v |= uint32_t(b[4 * w + i]) << (8 * i);
      dst[static_cast<size_t>(w)] = v;
    }
  }
}

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

} // namespace

} // namespace npuc::rtl

// ---- DPI imports of npu_core.sv: the DRAM port and the retire monitor ----
unsigned char npu_dram_read(long long addr) {
  npuc::rtl::RunContext *r = npuc::rtl::gRun;
  if (addr < 0 || addr >= static_cast<long long>(r->dram->size())) {
    r->badAddress = addr;
    return 0;
  }
  unsigned char v = (*r->dram)[static_cast<size_t>(addr)];
  for (const npuc::rtl::DramFault &f : *r->faults)
    if (f.addr == addr)
      v ^= f.mask;
  return v;
}
void npu_dram_write(long long addr, unsigned char data) {
  npuc::rtl::RunContext *r = npuc::rtl::gRun;
  if (addr < 0 || addr >= static_cast<long long>(r->dram->size())) {
    r->badAddress = addr;
    return;
  }
  (*r->dram)[static_cast<size_t>(addr)] = data;
}
void npu_retire(int engine, int index, long long start, long long end) {
  npuc::rtl::RunContext *r = npuc::rtl::gRun;
  const npuc::isa::Instr &in = r->program->instrs.at(static_cast<size_t>(index));
  r->trace->push_back({engine, index, start, end, in.desc ? in.desc->mnemonic : "?"});
}

namespace npuc::rtl {

const char *builtTargetName() {
  return gen::kTargetName;
}

bool matchesBuiltTarget(const isa::Target &t) {
  return fnv1a(t.sourceText) == gen::kTargetFingerprint;
}

void checkTarget(const isa::Target &t) {
  if (!matchesBuiltTarget(t))
    fail("{}: target '{}' is not the one the RTL core was generated for ('{}', "
         "configs/npu-rtl.yaml unless NPUC_RTL_TARGET was set at configure time); the RTL "
         "has no runtime parameters",
         t.path, t.name, gen::kTargetName);
}

RtlStats runRtl(const isa::Target &t, const isa::Program &p, sim::Memory &mem,
                const RtlOptions &opt) {
  checkTarget(t);
  sim::decodeProgram(t, p, mem); // validates fields, spaces and bounds (throws)
  if (static_cast<int64_t>(p.instrs.size()) > gen::kImemWords)
    fail("program of {} instructions exceeds the RTL instruction memory ({} words)",
         p.instrs.size(), gen::kImemWords);
  std::vector<uint8_t> code = isa::encode(t, p);

  auto t0 = std::chrono::steady_clock::now();
  auto ctx = std::make_unique<VerilatedContext>();
  ctx->traceEverOn(!opt.wave.empty());
  auto top = std::make_unique<Vnpu_core>(ctx.get(), "npu");
  Vnpu_core_npu_core *core = top->rootp->npu_core;

  // Backdoor loads: instruction memory and scratchpads.
  const int ib = t.instructionBytes();
  for (size_t i = 0; i < p.instrs.size(); ++i)
    setWord(core->imem[i], code.data() + i * static_cast<size_t>(ib), ib);
  int64_t base = 0;
  for (const isa::MemoryLevel &l : t.levels) {
    if (l.isDram)
      continue;
    const std::vector<uint8_t> &bytes = mem.level(l.index);
    for (int64_t a = 0; a < l.size; ++a)
      core->spm[static_cast<size_t>(base + a)] = bytes[static_cast<size_t>(a)];
    base += l.size;
  }

  RtlStats st;
  RunContext run;
  run.dram = &mem.dram();
  run.trace = &st.trace;
  run.program = &p;
  run.faults = &opt.faults;
  for (const DramFault &f : opt.faults)
    if (f.addr < 0 || f.addr >= static_cast<int64_t>(mem.dram().size()))
      fail("DRAM fault at byte {}: outside the {}-byte image", f.addr, mem.dram().size());
  RunContext *saved = gRun;
  gRun = &run;
  struct Restore {
    RunContext *saved;
    ~Restore() { gRun = saved; }
  } restore{saved};

  std::unique_ptr<VerilatedVcdC> wave;
  if (!opt.wave.empty()) {
    wave = std::make_unique<VerilatedVcdC>();
    top->trace(wave.get(), 99);
    wave->open(opt.wave.c_str());
    if (!wave->isOpen())
      fail("--wave {}: cannot open for writing", opt.wave);
  }
  uint64_t time = 0;
  auto tick = [&] {
    top->clk = 1;
    top->eval();
    if (wave)
      wave->dump(time);
    ++time;
    top->clk = 0;
    top->eval();
    if (wave)
      wave->dump(time);
    ++time;
  };
  top->n_instr = static_cast<int>(p.instrs.size());
  top->rst = 1;
  top->clk = 0;
  top->eval();
  tick();
  top->rst = 0;
  while (!top->done && !top->deadlock) {
    tick();
    if (run.badAddress >= 0)
      fail("RTL: DRAM port access at byte {} outside the {}-byte image (cycle {})", run.badAddress,
           mem.dram().size(), top->cycles);
    if (opt.maxCycles > 0 && static_cast<int64_t>(top->cycles) > opt.maxCycles)
      fail("RTL: no FINISH after {} cycles (--max-cycles)", opt.maxCycles);
  }
  if (wave)
    wave->close();
  if (top->deadlock) {
    std::string msg =
        fmt::format("RTL deadlock at cycle {}: no engine can make progress", top->cycles);
    for (size_t e = 0; e < t.engines.size(); ++e) {
      int cnt = core->q_cnt[e];
      if (cnt == 0)
        continue;
      int idx = core->q_idx[e][static_cast<size_t>(core->q_head[e])];
      msg += fmt::format("\n  engine '{}' waits at {}", t.engines[e].name, sim::instrName(p, idx));
    }
    fail("{}", msg);
  }

  // Read back the scratchpads and the counters.
  base = 0;
  for (const isa::MemoryLevel &l : t.levels) {
    if (l.isDram)
      continue;
    std::vector<uint8_t> &bytes = mem.level(l.index);
    for (int64_t a = 0; a < l.size; ++a)
      bytes[static_cast<size_t>(a)] = core->spm[static_cast<size_t>(base + a)];
    base += l.size;
  }
  st.totalCycles = static_cast<int64_t>(top->cycles);
  st.macs = static_cast<int64_t>(core->macs);
  st.dramBytesRead = static_cast<int64_t>(core->dram_bytes_read);
  st.dramBytesWritten = static_cast<int64_t>(core->dram_bytes_written);
  for (size_t e = 0; e < t.engines.size(); ++e)
    st.engines.push_back({t.engines[e].name, static_cast<int64_t>(core->busy_cycles[e]),
                          static_cast<int64_t>(core->instr_count[e])});
  top->final();
  st.seconds = secondsSince(t0);
  return st;
}

} // namespace npuc::rtl
