// Simulator.cpp - run(): the discrete-event scheduler tying decode, timing and functional models.
//
// Instructions are dispatched in program order into per-engine in-order queues (an engine's queue
// holds at most queueDepth instructions that have not started yet). Each engine's head
// instruction starts at max(engine free, dispatch time, arrival of every token it pops, and, for
// each token it pushes, the pop that frees a slot in that bounded token FIFO). The scheduler always
// commits the ready head with the earliest start, so instructions are committed in start-time
// order; shared resources (DRAM channels, banks) rely on that ordering, and the functional effect
// of each instruction is applied in that order too, so a program missing a token sees the race a
// real chip would. When no head is ready but instructions remain, the program is deadlocked and
// the error explains what every blocked engine waits for.
#include "simulator/Simulator.h"

#include "simulator/Decode.h"
#include "simulator/Functional.h"
#include "simulator/Timing.h"
#include "support/Error.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace npuc::sim {

namespace {

struct Fifo {
  std::vector<int64_t> pushTimes; // arrival time of each token, in push order
  std::vector<int64_t> popTimes;  // time of each pop, in pop order
};

/// Why an engine's head instruction cannot start yet.
struct Blocked {
  enum Kind { Ready, NotDispatched, NoToken, FifoFull } kind = Ready;
  int other = -1; // the engine whose token/slot it waits for
};

class Scheduler {
public:
  Scheduler(const isa::Target &t, const isa::Program &p, Memory &mem, const SimOptions &opt)
      : t_(t), p_(p), mem_(mem), opt_(opt), dram_(t), banks_(t) {}

  SimStats run() {
    code_ = decodeProgram(t_, p_, mem_);
    const size_t E = t_.engines.size();
    queue_.assign(E, {});
    head_.assign(E, 0);
    free_.assign(E, 0);
    fifos_.assign(E * E, {});
    pos_.assign(code_.size(), 0);
    dispatch_.assign(code_.size(), -1);
    start_.assign(code_.size(), -1);
    for (const Decoded &d : code_)
      if (d.engine >= 0) {
        pos_[static_cast<size_t>(d.index)] = static_cast<int64_t>(queue_[d.engine].size());
        queue_[static_cast<size_t>(d.engine)].push_back(d.index);
      }
    stats_.engines.resize(E);
    for (size_t e = 0; e < E; ++e)
      stats_.engines[e].name = t_.engines[e].name;

    for (;;) {
      advanceDispatch();
      int best = -1;
      int64_t bestStart = std::numeric_limits<int64_t>::max();
      bool remaining = false;
      for (size_t e = 0; e < E; ++e) {
        if (head_[e] >= queue_[e].size())
          continue;
        remaining = true;
        int64_t s;
        if (check(static_cast<int>(e), s).kind == Blocked::Ready && s < bestStart) {
          bestStart = s;
          best = static_cast<int>(e);
        }
      }
      if (!remaining)
        break;
      if (best < 0)
        deadlock();
      execute(best, bestStart);
    }
    return std::move(stats_);
  }

private:
  int64_t headOf(int e) const {
    return queue_[static_cast<size_t>(e)][head_[static_cast<size_t>(e)]];
  }
  Fifo &fifo(int producer, int consumer) {
    return fifos_[static_cast<size_t>(producer) * t_.engines.size() +
                  static_cast<size_t>(consumer)];
  }

  /// Dispatches instructions in program order as long as their engine's queue has room.
  void advanceDispatch() {
    while (nextDispatch_ < code_.size()) {
      const Decoded &d = code_[nextDispatch_];
      int64_t when = lastDispatch_;
      if (d.engine >= 0) {
        int depth = t_.engines[static_cast<size_t>(d.engine)].queueDepth;
        int64_t k = pos_[nextDispatch_];
        if (depth > 0 && k >= depth) {
          int64_t older = queue_[static_cast<size_t>(d.engine)][static_cast<size_t>(k - depth)];
          if (start_[static_cast<size_t>(older)] < 0)
            return; // the queue is full until that instruction starts
          when = std::max(when, start_[static_cast<size_t>(older)]);
        }
      }
      dispatch_[nextDispatch_] = lastDispatch_ = when;
      ++nextDispatch_;
    }
  }

  /// Whether engine e's head can start, and if so at which cycle.
  Blocked check(int e, int64_t &s) {
    int64_t i = headOf(e);
    const Decoded &d = code_[static_cast<size_t>(i)];
    if (dispatch_[static_cast<size_t>(i)] < 0)
      return {Blocked::NotDispatched, -1};
    s = std::max(free_[static_cast<size_t>(e)], dispatch_[static_cast<size_t>(i)]);
    const int E = static_cast<int>(t_.engines.size());
    for (int q = 0; q < E; ++q) {
      if (d.pop >> q & 1) {
        Fifo &f = fifo(q, e);
        size_t next = f.popTimes.size();
        if (f.pushTimes.size() <= next)
          return {Blocked::NoToken, q};
        s = std::max(s, f.pushTimes[next]);
      }
      if (d.push >> q & 1) {
        Fifo &f = fifo(e, q);
        int64_t depth = t_.tokenQueueDepth;
        int64_t j = static_cast<int64_t>(f.pushTimes.size());
        if (depth > 0 && j >= depth) {
          if (static_cast<int64_t>(f.popTimes.size()) <= j - depth)
            return {Blocked::FifoFull, q};
          s = std::max(s, f.popTimes[static_cast<size_t>(j - depth)]);
        }
      }
    }
    return {};
  }

  int64_t duration(const Decoded &d, int64_t start) {
    const isa::InstrDesc &desc = *d.desc;
    switch (d.sem) {
    case isa::Semantics::Dma: {
      bool dram = d.dma.src.level == mem_.dramIndex() || d.dma.dst.level == mem_.dramIndex();
      if (!dram)
        return dmaCycles(t_, desc, d.bytes, false);
      // The transfer queues for DRAM channels and cannot be faster than the engine itself;
      // latency and fixed costs come on top.
      int64_t transferEnd = dram_.transfer(d, start, mem_.dramIndex());
      double engineRate = t_.engines[static_cast<size_t>(d.engine)].bytesPerCycle;
      if (engineRate > 0)
        transferEnd = std::max(
            transferEnd, start + static_cast<int64_t>(std::ceil(double(d.bytes) / engineRate)));
      int64_t fixed = dmaCycles(t_, desc, 0, true);
      return transferEnd - start + fixed;
    }
    case isa::Semantics::Matmul:
      return matmulCycles(t_, desc, d.mm.m, d.mm.k, d.mm.n);
    case isa::Semantics::Vector:
      return vectorCycles(t_, desc, d.elements);
    case isa::Semantics::Finish:
      return desc.timing.latency;
    }
    return 0;
  }

  void execute(int e, int64_t s) {
    int64_t i = headOf(e);
    const Decoded &d = code_[static_cast<size_t>(i)];
    const int E = static_cast<int>(t_.engines.size());
    for (int q = 0; q < E; ++q)
      if (d.pop >> q & 1)
        fifo(q, e).popTimes.push_back(s);
    int64_t dur = duration(d, s);
    int64_t stall = banks_.stall(d, e, s, s + dur);
    int64_t end = s + dur + stall;
    for (int q = 0; q < E; ++q)
      if (d.push >> q & 1)
        fifo(e, q).pushTimes.push_back(end);
    start_[static_cast<size_t>(i)] = s;
    free_[static_cast<size_t>(e)] = end;
    ++head_[static_cast<size_t>(e)];

    if (opt_.functional) {
      switch (d.sem) {
      case isa::Semantics::Dma:
        executeDma(d.dma, mem_);
        break;
      case isa::Semantics::Matmul:
        executeMatmul(t_.tensor, d.mm, mem_);
        break;
      case isa::Semantics::Vector:
        executeVector(d.vec, mem_);
        break;
      case isa::Semantics::Finish:
        break;
      }
    }
    EngineStats &es = stats_.engines[static_cast<size_t>(e)];
    es.busyCycles += end - s;
    ++es.instructions;
    if (d.sem == isa::Semantics::Matmul)
      stats_.macs += d.mm.m * d.mm.k * d.mm.n;
    stats_.dramBytesRead += d.dramRead;
    stats_.dramBytesWritten += d.dramWritten;
    stats_.bankConflictStallCycles += stall;
    stats_.totalCycles = std::max(stats_.totalCycles, end);
    if (opt_.trace)
      stats_.trace.push_back({e, i, s, end, d.desc->mnemonic});
  }

  [[noreturn]] void deadlock() {
    std::string msg = "deadlock: no engine can make progress";
    for (size_t e = 0; e < queue_.size(); ++e) {
      if (head_[e] >= queue_[e].size())
        continue;
      int64_t s = 0;
      Blocked b = check(static_cast<int>(e), s);
      std::string who = instrName(p_, headOf(static_cast<int>(e)));
      msg += fmt::format("\n  engine '{}' waits at {}", t_.engines[e].name, who);
      if (b.kind == Blocked::NoToken) {
        msg += fmt::format(" for a token from engine '{}'", t_.engines[size_t(b.other)].name);
      } else if (b.kind == Blocked::FifoFull) {
        msg += fmt::format(" for room in its token queue to engine '{}' (depth {})",
                           t_.engines[size_t(b.other)].name, t_.tokenQueueDepth);
      } else {
        const Decoded &stuck = code_[nextDispatch_];
        msg += fmt::format(", not dispatched: the dispatcher is blocked at {} because the queue "
                           "of engine '{}' (depth {}) is full",
                           instrName(p_, stuck.index), t_.engines[size_t(stuck.engine)].name,
                           t_.engines[size_t(stuck.engine)].queueDepth);
      }
    }
    fail("{}", msg);
  }

  const isa::Target &t_;
  const isa::Program &p_;
  Memory &mem_;
  SimOptions opt_;
  DramModel dram_;
  BankModel banks_;
  std::vector<Decoded> code_;
  std::vector<std::vector<int64_t>> queue_;     // per engine: program indices in order
  std::vector<size_t> head_;                    // per engine: next position in queue_
  std::vector<int64_t> free_;                   // per engine: busy until
  std::vector<Fifo> fifos_;                     // producer * E + consumer
  std::vector<int64_t> pos_, dispatch_, start_; // per instruction
  size_t nextDispatch_ = 0;
  int64_t lastDispatch_ = 0;
  SimStats stats_;
};

} // namespace

SimStats run(const isa::Target &t, const isa::Program &p, Memory &mem, const SimOptions &opt) {
  return Scheduler(t, p, mem, opt).run();
}

} // namespace npuc::sim
