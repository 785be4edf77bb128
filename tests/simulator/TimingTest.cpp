// TimingTest.cpp - edges of the timing model, with cycle counts derived by hand from the formulas
// in docs/SIMULATOR.md for the tiny test target (DRAM 16 B/cycle, latency 100; tensor 4x4 with
// fill latency 10; vector 8 lanes; move engine 8 B/cycle; instruction latencies 0).
#include "SimTestUtil.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using namespace simtest;
using namespace npuc;

namespace {

sim::SimStats runTraced(const isa::Target &t, const isa::Program &p, int64_t dram = 1 << 16) {
  sim::Memory mem(t, dram);
  sim::SimOptions o;
  o.trace = true;
  return sim::run(t, p, mem, o);
}

isa::Instr vecCopy(const isa::Target &t, int64_t elems, int64_t src, int64_t dst, int64_t pop = 0,
                   int64_t push = 0) {
  return make(t, "vop",
              {{"op", 0},
               {"dst_space", L1},
               {"dst_addr", dst},
               {"dst_dtype", 1},
               {"src1_space", L1},
               {"src1_addr", src},
               {"src1_dtype", 1},
               {"n0", elems},
               {"dst_s0", 1},
               {"src1_s0", 1},
               {"pop", pop},
               {"push", push}});
}

// The consumer starts exactly when the producer's token arrives: at the producer's end.
void tokenCase(int64_t bytes, int64_t expectEnd) {
  auto t = makeTarget();
  isa::Program p;
  p.instrs.push_back(copy1d(*t, "ld", DRAM, 0, L1, 0, bytes, 0, 1 << VECTOR));
  p.instrs.push_back(vecCopy(*t, 16, 0x4000, 0x5000, 1 << LOAD));
  sim::SimStats s = runTraced(*t, p);
  EXPECT_EQ(eventOf(s, 0).start, 0);
  EXPECT_EQ(eventOf(s, 0).end, expectEnd);
  EXPECT_EQ(eventOf(s, 1).start, expectEnd);
  EXPECT_EQ(eventOf(s, 1).end, expectEnd + 2);
  EXPECT_EQ(s.totalCycles, expectEnd + 2);
}

TEST(SimTiming, TokenPopWaitsExactlyForProducerEnd) {
  tokenCase(320, 100 + 20); // latency + 320 / 16
  tokenCase(321, 100 + 21); // one byte more: one cycle later (ceil)
}

TargetOptions noBanks() {
  TargetOptions o;
  o.l1Banks = 1; // isolate the effect under test from bank conflicts
  return o;
}

TEST(SimTiming, IndependentEnginesOverlap) {
  auto t = makeTarget(noBanks());
  isa::Program p;
  p.instrs.push_back(copy1d(*t, "ld", DRAM, 0, L1, 0x8000, 320));
  p.instrs.push_back(vecCopy(*t, 800, 0, 0x2000)); // ceil(800 / 8) = 100 cycles
  sim::SimStats s = runTraced(*t, p);
  EXPECT_EQ(s.totalCycles, 120); // max(120, 100), not the sum
  EXPECT_EQ(s.engines[LOAD].busyCycles, 120);
  EXPECT_EQ(s.engines[VECTOR].busyCycles, 100);
  EXPECT_EQ(s.engines[VECTOR].instructions, 1);
}

TEST(SimTiming, SameEngineSerialises) {
  auto t = makeTarget(noBanks());
  isa::Program p;
  p.instrs.push_back(vecCopy(*t, 80, 0, 0x2000));
  p.instrs.push_back(vecCopy(*t, 8, 0, 0x3000));
  sim::SimStats s = runTraced(*t, p);
  EXPECT_EQ(eventOf(s, 1).start, 10);
  EXPECT_EQ(s.totalCycles, 11);
}

TEST(SimTiming, LoadAndStoreShareDramBandwidth) {
  auto t = makeTarget(noBanks());
  isa::Program p;
  p.instrs.push_back(copy1d(*t, "ld", DRAM, 0, L1, 0, 1024));
  p.instrs.push_back(copy1d(*t, "st", L1, 0x4000, DRAM, 0x4000, 1024));
  sim::SimStats s = runTraced(*t, p);
  // Load transfers in [0, 64) and completes after its latency; the store queues behind it.
  EXPECT_EQ(eventOf(s, 0).end, 164);
  EXPECT_EQ(eventOf(s, 1).start, 0);
  EXPECT_EQ(eventOf(s, 1).end, 64 + 64 + 100);
  EXPECT_EQ(s.totalCycles, 228);
  EXPECT_EQ(s.dramBytesRead, 1024);
  EXPECT_EQ(s.dramBytesWritten, 1024);
}

TEST(SimTiming, DramDmaIsCappedByItsEngineRate) {
  TargetOptions o = noBanks();
  o.dramBytesPerCycle = 64; // faster than the load engine's 32 B/cycle
  auto t = makeTarget(o);
  isa::Program p;
  p.instrs.push_back(copy1d(*t, "ld", DRAM, 0, L1, 0, 1024));
  EXPECT_EQ(runTraced(*t, p).totalCycles, 100 + 1024 / 32);
  EXPECT_EQ(sim::dmaCycles(*t, *desc(*t, "ld"), 1024, true), 100 + 1024 / 32);
}

TEST(SimTiming, DramChannelsServeDisjointBurstsInParallel) {
  TargetOptions o = noBanks();
  o.dramChannels = 2; // 8 B/cycle each, interleaved every 64 bytes
  auto t = makeTarget(o);
  {
    isa::Program p; // bursts 0 and 1: different channels, in parallel
    p.instrs.push_back(copy1d(*t, "ld", DRAM, 0, L1, 0, 64));
    p.instrs.push_back(copy1d(*t, "st", L1, 0x1000, DRAM, 64, 64));
    sim::SimStats s = runTraced(*t, p);
    EXPECT_EQ(eventOf(s, 0).end, 108);
    EXPECT_EQ(eventOf(s, 1).end, 108);
  }
  {
    isa::Program p; // bursts 0 and 2: both on channel 0
    p.instrs.push_back(copy1d(*t, "ld", DRAM, 0, L1, 0, 64));
    p.instrs.push_back(copy1d(*t, "st", L1, 0x1000, DRAM, 128, 64));
    sim::SimStats s = runTraced(*t, p);
    EXPECT_EQ(eventOf(s, 0).end, 108);
    EXPECT_EQ(eventOf(s, 1).end, 116);
  }
  {
    isa::Program p; // a large transfer uses both channels: full bandwidth
    p.instrs.push_back(copy1d(*t, "ld", DRAM, 0, L1, 0, 1024));
    EXPECT_EQ(runTraced(*t, p).totalCycles, 164);
  }
}

int64_t matmulTotal(int64_t m, int64_t k, int64_t n) {
  auto t = makeTarget();
  isa::Program p;
  p.instrs.push_back(
      make(*t, "mm", {{"a_addr", 0}, {"b_addr", 0}, {"c_addr", 0}, {"m", m}, {"k", k}, {"n", n}}));
  return runTraced(*t, p).totalCycles;
}

TEST(SimTiming, MatmulCycleFormulaAtArrayEdges) {
  EXPECT_EQ(matmulTotal(3, 4, 4), 10 + 3 * 1 * 1); // k = rows
  EXPECT_EQ(matmulTotal(3, 5, 4), 10 + 3 * 2 * 1); // k = rows + 1
  EXPECT_EQ(matmulTotal(3, 4, 5), 10 + 3 * 1 * 2); // n = cols + 1
  auto t = makeTarget();
  EXPECT_EQ(sim::matmulCycles(*t, *desc(*t, "mm"), 7, 9, 8), 10 + 7 * 3 * 2);
}

// vector_unit.op_latency adds its cycles to each vop of that op (pipeline depth), not per
// element: 16 elements on 8 lanes take 2 cycles, plus 5 for a copy given latency 5.
TEST(SimTiming, VectorOpLatencyIsPerInstruction) {
  auto t = makeTarget();
  t->vector.opLatency[static_cast<size_t>(isa::VecOp::Copy)] = 5;
  isa::Program p;
  p.instrs.push_back(vecCopy(*t, 16, 0, 0x100));
  p.instrs.push_back(vecCopy(*t, 64, 0, 0x100));
  sim::SimStats s = runTraced(*t, p);
  EXPECT_EQ(eventOf(s, 0).end - eventOf(s, 0).start, 5 + 2);
  EXPECT_EQ(eventOf(s, 1).end - eventOf(s, 1).start, 5 + 8);
  EXPECT_EQ(sim::vectorCycles(*t, *desc(*t, "vop"), 16, isa::VecOp::Copy), 5 + 2);
  EXPECT_EQ(sim::vectorCycles(*t, *desc(*t, "vop"), 16, isa::VecOp::Add), 2);
}

// Two vector ops that wait for loads queued behind them in program order.
isa::Program dispatchProgram(const isa::Target &t) {
  isa::Program p;
  p.instrs.push_back(vecCopy(t, 8, 0, 0x100, 1 << LOAD));
  p.instrs.push_back(vecCopy(t, 8, 0, 0x200, 1 << LOAD));
  p.instrs.push_back(copy1d(t, "ld", DRAM, 0, L1, 0x1000, 16, 0, 1 << VECTOR));
  p.instrs.push_back(copy1d(t, "ld", DRAM, 0, L1, 0x2000, 16, 0, 1 << VECTOR));
  return p;
}

TEST(SimTiming, DispatchQueueDepthIsModelled) {
  auto program = dispatchProgram;
  auto deep = makeTarget();
  sim::SimStats s = runTraced(*deep, program(*deep));
  EXPECT_EQ(eventOf(s, 0).start, 101); // first load: 100 + 16 / 16
  EXPECT_EQ(eventOf(s, 1).start, 202); // second load runs after it on the same engine
  TargetOptions o;
  o.queueDepth = 1; // the second vector op cannot be dispatched until the first starts
  auto shallow = makeTarget(o);
  try {
    runTraced(*shallow, program(*shallow));
    FAIL() << "expected a deadlock";
  } catch (const Error &e) {
    std::string m = e.what();
    EXPECT_NE(m.find("engine 'load' waits at instruction #2 (ld), not dispatched"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("instruction #1 (vop) because the queue of engine 'vector' (depth 1)"),
              std::string::npos)
        << m;
  }
}

// Two loads push to vector; the vector unit is busy for 200 cycles before it pops.
isa::Program tokenFifoProgram(const isa::Target &t) {
  isa::Program p;
  p.instrs.push_back(copy1d(t, "ld", DRAM, 0, L1, 0, 256, 0, 1 << VECTOR));
  p.instrs.push_back(copy1d(t, "ld", DRAM, 0, L1, 0x400, 16, 0, 1 << VECTOR));
  p.instrs.push_back(vecCopy(t, 1600, 0x4000, 0x6000));
  p.instrs.push_back(vecCopy(t, 8, 0x1000, 0x1100, 1 << LOAD));
  p.instrs.push_back(vecCopy(t, 8, 0x1000, 0x1200, 1 << LOAD));
  return p;
}

TEST(SimTiming, TokenQueueDepthBlocksProducer) {
  TargetOptions o = noBanks();
  o.tokenQueueDepth = 1;
  auto t = makeTarget(o);
  // With a single-slot FIFO the second load cannot start until the first token is popped (200).
  sim::SimStats s = runTraced(*t, tokenFifoProgram(*t));
  EXPECT_EQ(eventOf(s, 0).end, 116);
  EXPECT_EQ(eventOf(s, 3).start, 200);
  EXPECT_EQ(eventOf(s, 1).start, 200); // 116 with an unbounded FIFO
  EXPECT_EQ(eventOf(s, 1).end, 200 + 1 + 100);
  EXPECT_EQ(eventOf(s, 4).start, 301);
}

TEST(SimTrace, ChromeJsonHasOneTrackPerEngine) {
  auto t = makeTarget();
  isa::Program p;
  p.instrs.push_back(copy1d(*t, "ld", DRAM, 0, L1, 0, 320, 0, 1 << VECTOR));
  p.instrs.push_back(vecCopy(*t, 16, 0x4000, 0x5000, 1 << LOAD));
  p.instrs.push_back(make(*t, "fin", {}));
  sim::SimStats s = runTraced(*t, p);
  ASSERT_EQ(s.trace.size(), 2u);
  nlohmann::json j = nlohmann::json::parse(sim::traceToJson(*t, s));
  int names = 0, slices = 0;
  std::vector<std::pair<int64_t, double>> dram, l1;
  for (const auto &ev : j.at("traceEvents")) {
    if (ev.at("ph") == "M") {
      ++names;
      EXPECT_EQ(ev.at("args").at("name"), t->engines[ev.at("tid").get<size_t>()].name);
    } else if (ev.at("ph") == "C") {
      if (ev.at("name") == "dram bytes/cycle")
        dram.emplace_back(ev.at("ts"), ev.at("args").at("bytes_per_cycle"));
      if (ev.at("name") == "l1 active instructions")
        l1.emplace_back(ev.at("ts"), ev.at("args").at("instructions"));
    } else {
      ++slices;
      EXPECT_EQ(ev.at("ph"), "X");
      if (ev.at("name") == "vop") {
        EXPECT_EQ(ev.at("tid"), VECTOR);
        EXPECT_EQ(ev.at("ts"), 120);
        EXPECT_EQ(ev.at("dur"), 2);
      }
    }
  }
  EXPECT_EQ(names, 5);
  EXPECT_EQ(slices, 2);
  // DRAM counter: the load's 320 bytes cross DRAM at its 16 B/cycle in cycles [0, 20), after
  // which the 100-cycle latency runs with no data moving.
  std::vector<std::pair<int64_t, double>> wantDram = {{0, 16.0}, {20, 0.0}};
  EXPECT_EQ(dram, wantDram);
  // L1 activity: the load occupies L1 [0, 120), the vop [120, 122).
  std::vector<std::pair<int64_t, double>> wantL1 = {{0, 1.0}, {120, 1.0}, {122, 0.0}};
  EXPECT_EQ(l1, wantL1);
}

} // namespace

namespace {

TEST(SimTrace, LongTracesMergeConsecutiveSameMnemonic) {
  auto t = makeTarget();
  sim::SimStats s;
  // 250k events: runs of 5 "ld" on load alternate with one "st" on store; 50k loads in runs.
  const int64_t groups = 250000 / 6 + 1;
  int64_t cycle = 0, index = 0;
  for (int64_t g = 0; g < groups; ++g) {
    for (int r = 0; r < 5; ++r, cycle += 2)
      s.trace.push_back({LOAD, index++, cycle, cycle + 2, "ld"});
    s.trace.push_back({STORE, index++, cycle, cycle + 1, "st"});
  }
  nlohmann::json j = nlohmann::json::parse(sim::traceToJson(*t, s));
  int64_t loads = 0, stores = 0;
  for (const auto &ev : j.at("traceEvents")) {
    if (ev.at("ph") != "X")
      continue;
    if (ev.at("tid") == LOAD)
      ++loads;
    else
      ++stores;
  }
  // Every engine's consecutive same-mnemonic events merge: one slice per engine here.
  EXPECT_EQ(loads, 1);
  EXPECT_EQ(stores, 1);
  for (const auto &ev : j.at("traceEvents"))
    if (ev.at("ph") == "X" && ev.at("tid") == LOAD) {
      EXPECT_EQ(ev.at("name"), "ld x" + std::to_string(groups * 5));
      EXPECT_EQ(ev.at("dur"), groups * 10);
    }
}

} // namespace

// ---- the same edges checked on both sides (N-1 and N) ----

TEST(SimTimingEdges, VectorOpCyclesStepAtTheLaneCount) {
  auto t = makeTarget(noBanks()); // 8 lanes: ceil(n / 8) cycles
  auto cycles = [&](int64_t n) {
    isa::Program p;
    p.instrs.push_back(vecCopy(*t, n, 0, 0x2000));
    return runTraced(*t, p).totalCycles;
  };
  EXPECT_EQ(cycles(8), 1);
  EXPECT_EQ(cycles(9), 2);
  EXPECT_EQ(cycles(16), 2);
  EXPECT_EQ(cycles(17), 3);
}

TEST(SimTimingEdges, DmaRateIsTheSlowerOfEngineAndDram) {
  // The load engine moves 32 B/cycle. With DRAM at 32 B/cycle both bound equally (1024 B in 32
  // cycles); one byte per cycle less of DRAM makes DRAM the bound: ceil(1024 / 31) = 34 cycles.
  for (auto [dramRate, transfer] : {std::pair<double, int64_t>{32, 32}, {31, 34}, {33, 32}}) {
    TargetOptions o = noBanks();
    o.dramBytesPerCycle = dramRate;
    auto t = makeTarget(o);
    isa::Program p;
    p.instrs.push_back(copy1d(*t, "ld", DRAM, 0, L1, 0, 1024));
    EXPECT_EQ(runTraced(*t, p).totalCycles, 100 + transfer) << "DRAM " << dramRate << " B/cycle";
  }
}

TEST(SimTimingEdges, DispatchQueueOfTwoHoldsBothWaitingVectorOps) {
  // The program of DispatchQueueDepthIsModelled: two vector ops that wait for loads queued behind
  // them. Depth 1 deadlocks (tested above); depth 2 (= the number of waiting ops) runs exactly as
  // an unbounded queue would.
  TargetOptions o;
  o.queueDepth = 2;
  auto t = makeTarget(o);
  sim::SimStats s = runTraced(*t, dispatchProgram(*t));
  EXPECT_EQ(eventOf(s, 0).start, 101);
  EXPECT_EQ(eventOf(s, 1).start, 202);
}

TEST(SimTimingEdges, TokenQueueOfTwoDoesNotBlockTheSecondPush) {
  // TokenQueueDepthBlocksProducer's program: with 2 token slots both pushes fit before the first
  // pop, so the second load starts when the first ends (116), not at the first pop (200).
  TargetOptions o = noBanks();
  o.tokenQueueDepth = 2;
  auto t = makeTarget(o);
  sim::SimStats s = runTraced(*t, tokenFifoProgram(*t));
  EXPECT_EQ(eventOf(s, 1).start, 116);
  EXPECT_EQ(eventOf(s, 1).end, 116 + 1 + 100);
  EXPECT_EQ(eventOf(s, 3).start, 200);
  EXPECT_EQ(eventOf(s, 4).start, 217); // the second token arrived at 217, after the first pop
}
