// RtlCore.cpp - runs the verilated NPU core (runRtl) and co-simulates it with the simulator
// (cosim).
//
// The harness is the testbench a bring-up team would write: it backdoor-loads the instruction
// memory and scratchpads, implements DRAM behind the core's memory port (every beat accepted at
// once; read data returned dram.latency cycles later, in order, with optional injected faults),
// records every retired instruction from the core's retire outputs, and clocks the core until it
// raises `done` or `deadlock`. The DRAM bandwidth (dram.bytes_per_cycle) is granted inside the
// core by its arbiter, so the port itself never throttles. Programs are validated with the
// simulator's decoder first, so the RTL only ever sees programs whose accesses are in bounds.
#include "simulator/rtl/RtlCore.h"
#include "support/Hash.h"

#include "simulator/Decode.h"
#include "support/Error.h"

#include "Vnpu_core.h"
#include "Vnpu_core___024root.h"
#include "Vnpu_core_npu_core.h"
#include "npu_fingerprint.h"
#include "verilated.h"
#include "verilated_vcd_c.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <type_traits>

namespace npuc::rtl {

namespace {

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

/// Bits [lsb, lsb+width) (width <= 64) of a verilated packed signal: a VlWide (32-bit words) or
/// an integer for signals of at most 64 bits.
template <class T> uint64_t getBits(const T &v, int lsb, int width) {
  if constexpr (std::is_integral_v<T>) {
    uint64_t x = static_cast<uint64_t>(v) >> lsb;
    return width >= 64 ? x : x & ((uint64_t(1) << width) - 1);
  } else {
    uint64_t x = 0;
    for (int i = 0; i < width; ++i) {
      int b = lsb + i;
      x |= uint64_t((v[static_cast<size_t>(b / 32)] >> (b % 32)) & 1u) << i;
    }
    return x;
  }
}
template <class T> void setByte(T &v, int lsb, uint8_t byte) {
  for (int i = 0; i < 8; ++i) {
    int b = lsb + i;
    uint32_t &w = v[static_cast<size_t>(b / 32)];
    w = (w & ~(1u << (b % 32))) | (uint32_t((byte >> i) & 1) << (b % 32));
  }
}

/// DRAM behind the core's memory port: accepts every beat (unless RtlOptions::readyStallPeriod
/// asks for stalls), applies writes at the accepting edge and returns read beats `latency` edges
/// later, in order per channel.
class DramPort {
public:
  DramPort(std::vector<uint8_t> &image, int64_t latency, int engines,
           const std::vector<DramFault> &faults, int stallPeriod)
      : image_(image), latency_(latency), faults_(faults), stallPeriod_(stallPeriod),
        pending_(static_cast<size_t>(engines)) {}

  /// Before edge number `edge`: take the beats the core offers (they transfer at this edge) and
  /// drive the responses due at it.
  void beforeEdge(Vnpu_core &top, uint64_t edge) {
    constexpr int L = gen::kMemLanes, AW = gen::kMemAddrBits;
    const int engines = static_cast<int>(pending_.size());
    const bool ready = stallPeriod_ < 2 || edge % static_cast<uint64_t>(stallPeriod_) != 0;
    top.mem_req_ready = static_cast<std::remove_reference_t<decltype(top.mem_req_ready)>>(
        ready ? (1u << engines) - 1 : 0u);
    for (int e = 0; e < engines; ++e) {
      if (!ready || !getBits(top.mem_req_valid, e, 1))
        continue;
      const bool write = getBits(top.mem_req_write, e, 1);
      Beat beat{edge + static_cast<uint64_t>(latency_), std::vector<uint8_t>(L, 0)};
      for (int l = 0; l < L; ++l) {
        if (!getBits(top.mem_req_strb, e * L + l, 1))
          continue;
        int64_t a = static_cast<int64_t>(getBits(top.mem_req_addr, (e * L + l) * AW, AW));
        if (a >= static_cast<int64_t>(image_.size())) {
          badAddress = a;
          continue;
        }
        uint8_t &cell = image_[static_cast<size_t>(a)];
        if (write) {
          cell = static_cast<uint8_t>(getBits(top.mem_req_wdata, (e * L + l) * 8, 8));
          continue;
        }
        uint8_t v = cell;
        for (const DramFault &f : faults_)
          if (f.addr == a)
            v ^= f.mask;
        beat.data[static_cast<size_t>(l)] = v;
      }
      if (!write)
        pending_[static_cast<size_t>(e)].push_back(std::move(beat));
    }
    uint32_t valid = 0;
    for (int e = 0; e < engines; ++e) {
      std::deque<Beat> &q = pending_[static_cast<size_t>(e)];
      if (q.empty() || q.front().due != edge)
        continue;
      valid |= 1u << e;
      for (int l = 0; l < L; ++l)
        setByte(top.mem_rsp_data, (e * L + l) * 8, q.front().data[static_cast<size_t>(l)]);
      q.pop_front();
    }
    top.mem_rsp_valid = static_cast<std::remove_reference_t<decltype(top.mem_rsp_valid)>>(valid);
  }

  int64_t badAddress = -1;

private:
  struct Beat {
    uint64_t due;
    std::vector<uint8_t> data;
  };
  std::vector<uint8_t> &image_;
  int64_t latency_;
  const std::vector<DramFault> &faults_;
  int stallPeriod_;
  std::vector<std::deque<Beat>> pending_;
};

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

} // namespace

} // namespace npuc::rtl

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
  // Validates fields, spaces and bounds (throws).
  std::vector<sim::Decoded> code0 = sim::decodeProgram(t, p, mem);
  for (const sim::Decoded &d : code0)
    if (d.sem == isa::Semantics::Dma && d.dma.src.level == t.dramLevel() &&
        d.dma.dst.level == t.dramLevel())
      fail("{}: DRAM-to-DRAM copy: the RTL core's DMA engines move data between DRAM and the "
           "scratchpads only",
           sim::instrName(p, d.index));
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
  for (const DramFault &f : opt.faults)
    if (f.addr < 0 || f.addr >= static_cast<int64_t>(mem.dram().size()))
      fail("DRAM fault at byte {}: outside the {}-byte image", f.addr, mem.dram().size());
  if (opt.readyStallPeriod == 1 || opt.readyStallPeriod < 0)
    fail("RTL: ready stall period {}: must be 0 (always ready) or at least 2",
         opt.readyStallPeriod);
  DramPort dram(mem.dram(), t.dram.latency, static_cast<int>(t.engines.size()), opt.faults,
                opt.readyStallPeriod);

  std::unique_ptr<VerilatedVcdC> wave;
  if (!opt.wave.empty()) {
    wave = std::make_unique<VerilatedVcdC>();
    top->trace(wave.get(), 99);
    wave->open(opt.wave.c_str());
    if (!wave->isOpen())
      fail("--wave {}: cannot open for writing", opt.wave);
  }
  uint64_t time = 0, edge = 0;
  auto tick = [&] {
    dram.beforeEdge(*top, edge++);
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
  // The retire outputs pulse for one cycle after the edge at which an instruction ends.
  const int engines = static_cast<int>(t.engines.size());
  auto recordRetires = [&] {
    if (!top->retire_valid)
      return;
    for (int e = 0; e < engines; ++e) {
      if (!getBits(top->retire_valid, e, 1))
        continue;
      int index = static_cast<int>(getBits(top->retire_index, 32 * e, 32));
      int64_t start = static_cast<int64_t>(getBits(top->retire_start, 64 * e, 64));
      NPUC_ASSERT(index >= 0 && index < static_cast<int>(p.instrs.size()),
                  "the core retires only dispatched instructions");
      const isa::Instr &in = p.instrs[static_cast<size_t>(index)];
      // The core has no bank arbitration (docs/RTL.md), so no instruction stalls on banks.
      st.trace.push_back({e, index, start, static_cast<int64_t>(top->cycles),
                          in.desc ? in.desc->mnemonic : "?", 0});
    }
  };
  top->n_instr = static_cast<int>(p.instrs.size());
  top->mem_req_ready =
      static_cast<std::remove_reference_t<decltype(top->mem_req_ready)>>((1u << engines) - 1);
  top->mem_rsp_valid = 0;
  top->rst = 1;
  top->clk = 0;
  top->eval();
  tick();
  top->rst = 0;
  st.setupSeconds = secondsSince(t0);
  auto t1 = std::chrono::steady_clock::now();
  while (!top->done && !top->deadlock) {
    tick();
    recordRetires();
    if (dram.badAddress >= 0)
      fail("RTL: memory-port access at DRAM byte {} outside the {}-byte image (cycle {})",
           dram.badAddress, mem.dram().size(), top->cycles);
    if (opt.maxCycles > 0 && static_cast<int64_t>(top->cycles) > opt.maxCycles)
      fail("RTL: no FINISH after {} cycles (--max-cycles)", opt.maxCycles);
  }
  st.runSeconds = secondsSince(t1);
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
