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
#include "simulator/Energy.h"
#include "simulator/Functional.h"
#include "simulator/Hazards.h"
#include "simulator/Timing.h"
#include "support/Error.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>

namespace npuc::sim {

namespace {

struct Fifo {
  std::vector<int64_t> pushTimes;        // arrival time of each token, in push order
  std::vector<int64_t> popTimes;         // time of each pop, in pop order
  std::vector<int64_t> pushers, poppers; // program index of each push / pop
};

/// Why an engine's head instruction cannot start yet.
struct Blocked {
  enum Kind { Ready, NotDispatched, NoToken, FifoFull } kind = Ready;
  int other = -1; // the engine whose token/slot it waits for
};

/// What fixed a ready instruction's start, for the critical path: the instruction whose end
/// (engine free, token arrival) or start (dispatch slot, token-queue slot) it equals.
struct Cause {
  int64_t instr = -1;
  int64_t ready = 0; // max(engine free, dispatch): when it could have started without tokens
};

class Scheduler {
public:
  Scheduler(const isa::Target &t, const isa::Program &p, Memory &mem, const SimOptions &opt)
      : t_(t), p_(p), mem_(mem), opt_(opt), dram_(t), banks_(t) {}

  SimStats run() {
    if (opt_.functional && !mem_.hasData())
      fail("simulator: a functional run needs a Memory with data (a sizes-only one serves "
           "timing-only runs)");
    code_ = decodeProgram(t_, p_, mem_);
    if (opt_.functional)
      checkWorkBudget();
    const size_t E = t_.engines.size();
    queue_.assign(E, {});
    head_.assign(E, 0);
    free_.assign(E, 0);
    fifos_.assign(E * E, {});
    pos_.assign(code_.size(), 0);
    dispatch_.assign(code_.size(), -1);
    start_.assign(code_.size(), -1);
    end_.assign(code_.size(), -1);
    pred_.assign(code_.size(), -1);
    dispatchSrc_.assign(code_.size(), -1);
    lastOnEngine_.assign(E, -1);
    if (opt_.check)
      checker_ = std::make_unique<HazardChecker>(t_, p_);
    stats_.levels.resize(t_.levels.size());
    for (const isa::MemoryLevel &l : t_.levels)
      if (static_cast<size_t>(l.index) < stats_.levels.size())
        stats_.levels[static_cast<size_t>(l.index)].name = l.name;
    levelStall_.assign(stats_.levels.size(), 0);
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
    finishStats();
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
          if (start_[static_cast<size_t>(older)] > when) {
            when = start_[static_cast<size_t>(older)];
            lastDispatchSrc_ = older;
          }
        }
      }
      dispatch_[nextDispatch_] = lastDispatch_ = when;
      dispatchSrc_[nextDispatch_] = lastDispatchSrc_;
      ++nextDispatch_;
    }
  }

  /// Whether engine e's head can start, and if so at which cycle.
  Blocked check(int e, int64_t &s, Cause *cause = nullptr) {
    int64_t i = headOf(e);
    const Decoded &d = code_[static_cast<size_t>(i)];
    if (dispatch_[static_cast<size_t>(i)] < 0)
      return {Blocked::NotDispatched, -1};
    const size_t ue = static_cast<size_t>(e);
    s = std::max(free_[ue], dispatch_[static_cast<size_t>(i)]);
    Cause c;
    c.ready = s;
    c.instr = free_[ue] >= dispatch_[static_cast<size_t>(i)] ? lastOnEngine_[ue]
                                                             : dispatchSrc_[size_t(i)];
    // Only the engines named in pop or push, in increasing order (ties keep the lowest's cause).
    for (uint32_t bits = d.pop | d.push; bits != 0; bits &= bits - 1) {
      const int q = std::countr_zero(bits);
      if (d.pop >> q & 1) {
        Fifo &f = fifo(q, e);
        size_t next = f.popTimes.size();
        if (f.pushTimes.size() <= next)
          return {Blocked::NoToken, q};
        if (f.pushTimes[next] > s) {
          s = f.pushTimes[next];
          c.instr = f.pushers[next];
        }
      }
      if (d.push >> q & 1) {
        Fifo &f = fifo(e, q);
        int64_t depth = t_.tokenQueueDepth;
        int64_t j = static_cast<int64_t>(f.pushTimes.size());
        if (depth > 0 && j >= depth) {
          if (static_cast<int64_t>(f.popTimes.size()) <= j - depth)
            return {Blocked::FifoFull, q};
          if (f.popTimes[static_cast<size_t>(j - depth)] > s) {
            s = f.popTimes[static_cast<size_t>(j - depth)];
            c.instr = f.poppers[static_cast<size_t>(j - depth)];
          }
        }
      }
    }
    if (cause)
      *cause = c;
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
      return vectorCycles(t_, desc, d.elements, d.vec.op);
    case isa::Semantics::Finish:
      return desc.timing.latency;
    }
    return 0;
  }

  // The functional model's work for the whole program against opt_.maxWork (SimOptions).
  void checkWorkBudget() const {
    auto mul = [](int64_t a, int64_t b) {
      int64_t r = 0;
      return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
    };
    int64_t total = 0, largest = 0;
    const Decoded *worst = nullptr;
    for (const Decoded &d : code_) {
      const int64_t w = d.sem == isa::Semantics::Matmul   ? mul(mul(d.mm.m, d.mm.k), d.mm.n)
                        : d.sem == isa::Semantics::Finish ? 0
                                                          : d.elements;
      total = __builtin_add_overflow(total, w, &total) ? INT64_MAX : total;
      if (w > largest) {
        largest = w;
        worst = &d;
      }
    }
    if (total > opt_.maxWork)
      fail("the functional simulation needs {} element operations, over its budget of {}; the "
           "largest is instruction {} ({}) with {}. Raise the budget (npuc sim --max-work N) or "
           "count cycles only (--timing-only)",
           total, opt_.maxWork, worst->index, worst->desc->mnemonic, largest);
  }

  void execute(int e, int64_t s) {
    int64_t i = headOf(e);
    const size_t ui = static_cast<size_t>(i), ue = static_cast<size_t>(e);
    const Decoded &d = code_[ui];
    Cause cause;
    check(e, s, &cause);
    if (checker_) {
      std::string hazard = checker_->check(d, e);
      if (!hazard.empty())
        fail("{}\n  engines at cycle {}:{}", hazard, s, engineStates(e, s));
    }
    for (uint32_t bits = d.pop; bits != 0; bits &= bits - 1) {
      Fifo &f = fifo(std::countr_zero(bits), e);
      f.popTimes.push_back(s);
      f.poppers.push_back(i);
    }
    int64_t dur = duration(d, s);
    int64_t stall = banks_.stall(d, e, s, s + dur, &levelStall_);
    int64_t end = s + dur + stall;
    for (uint32_t bits = d.push; bits != 0; bits &= bits - 1) {
      Fifo &f = fifo(e, std::countr_zero(bits));
      f.pushTimes.push_back(end);
      f.pushers.push_back(i);
    }
    start_[ui] = s;
    end_[ui] = end;
    pred_[ui] = cause.instr;
    free_[ue] = end;
    lastOnEngine_[ue] = i;
    ++head_[ue];
    stats_.engines[ue].tokenWaitCycles += s - cause.ready;
    stats_.engines[ue].bankConflictStallCycles += stall;
    if (opt_.trace)
      recordActivity(d, s, dur, end);

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
    countActions(t_, d, stats_);
    stats_.dramBytesRead += d.dramRead;
    stats_.dramBytesWritten += d.dramWritten;
    if (!opt_.dramRegions.empty() && d.sem == isa::Semantics::Dma) {
      if (d.dramRead > 0)
        stats_.dramByClass.read[size_t(opt_.dramRegions.access(d.dma.src.addr, i, false))] +=
            d.dramRead;
      if (d.dramWritten > 0)
        stats_.dramByClass.written[size_t(opt_.dramRegions.access(d.dma.dst.addr, i, true))] +=
            d.dramWritten;
    }
    stats_.bankConflictStallCycles += stall;
    stats_.totalCycles = std::max(stats_.totalCycles, end);
    if (opt_.trace)
      stats_.trace.push_back({e, i, s, end, d.desc->mnemonic, stall});
  }

  /// Counter-track deltas: DRAM bytes/cycle while a DMA's DRAM transfer runs, and per on-chip
  /// level the number of instructions touching it.
  void recordActivity(const Decoded &d, int64_t s, int64_t dur, int64_t end) {
    if (d.dramRead + d.dramWritten > 0) {
      int64_t bytes = d.dramRead + d.dramWritten;
      // The transfer proper ends before the fixed latency terms; it lasts at least
      // bytes / bandwidth cycles.
      int64_t fixed = dmaCycles(t_, *d.desc, 0, true);
      int64_t xferEnd = std::max(s + 1, s + dur - fixed);
      int64_t xfer = std::max<int64_t>(
          1, static_cast<int64_t>(std::ceil(double(bytes) / t_.dram.bytesPerCycle)));
      int64_t xferStart = std::max(s, xferEnd - xfer);
      double rate = double(bytes) / double(xferEnd - xferStart);
      dramDeltas_.push_back({xferStart, rate});
      dramDeltas_.push_back({xferEnd, -rate});
    }
    uint64_t seen = 0;
    for (const AccessRange &r : d.ranges) {
      if (r.level == mem_.dramIndex() || r.level >= 64 || (seen >> r.level & 1))
        continue;
      seen |= uint64_t(1) << r.level;
      if (levelDeltas_.size() <= static_cast<size_t>(r.level))
        levelDeltas_.resize(static_cast<size_t>(r.level) + 1);
      levelDeltas_[static_cast<size_t>(r.level)].push_back({s, 1});
      levelDeltas_[static_cast<size_t>(r.level)].push_back({end, -1});
    }
  }

  static std::vector<CounterSample> integrate(std::vector<CounterSample> deltas) {
    std::stable_sort(
        deltas.begin(), deltas.end(),
        [](const CounterSample &a, const CounterSample &b) { return a.time < b.time; });
    std::vector<CounterSample> out;
    double v = 0;
    for (const CounterSample &c : deltas) {
      v += c.value;
      if (std::abs(v) < 1e-9)
        v = 0;
      if (!out.empty() && out.back().time == c.time)
        out.back().value = v;
      else
        out.push_back({c.time, v});
    }
    return out;
  }

  void finishStats() {
    const int64_t total = stats_.totalCycles;
    for (EngineStats &es : stats_.engines)
      es.idleCycles = std::max<int64_t>(0, total - es.busyCycles - es.tokenWaitCycles);
    for (size_t l = 0; l < stats_.levels.size(); ++l)
      stats_.levels[l].bankConflictStallCycles = levelStall_[l];
    double cap = t_.dram.bytesPerCycle * double(total);
    stats_.dramUtilization =
        cap > 0 ? double(stats_.dramBytesRead + stats_.dramBytesWritten) / cap : 0.0;
    // Critical path: from the instruction that ends last, follow what fixed each start.
    int64_t cur = -1;
    for (size_t i = 0; i < end_.size(); ++i)
      if (end_[i] >= 0 && (cur < 0 || end_[i] > end_[size_t(cur)]))
        cur = static_cast<int64_t>(i);
    int64_t tcur = total;
    while (cur >= 0) {
      const size_t uc = static_cast<size_t>(cur);
      int64_t s = start_[uc];
      int eng = code_[uc].engine;
      if (eng >= 0)
        stats_.engines[static_cast<size_t>(eng)].criticalPathCycles += tcur - s;
      else
        stats_.criticalPathOtherCycles += tcur - s;
      tcur = s;
      int64_t p = pred_[uc];
      // A predecessor ends (or starts) exactly at s; anything else is time no instruction
      // accounts for.
      if (p < 0 || (end_[size_t(p)] != s && start_[size_t(p)] != s))
        break;
      if (end_[size_t(p)] != s) {
        // Bound by p's start (a queue slot): continue from p with nothing to add for it.
        tcur = start_[size_t(p)];
      }
      cur = p;
    }
    stats_.criticalPathOtherCycles += tcur;
    if (opt_.trace) {
      stats_.dramCounter = integrate(std::move(dramDeltas_));
      stats_.levelActivity.resize(stats_.levels.size());
      for (size_t l = 0; l < levelDeltas_.size() && l < stats_.levels.size(); ++l)
        stats_.levelActivity[l] = integrate(std::move(levelDeltas_[l]));
    }
  }

  /// One line per engine: what it is doing at cycle `now` (for hazard diagnostics).
  std::string engineStates(int current, int64_t now) {
    std::string out;
    for (size_t e = 0; e < queue_.size(); ++e) {
      std::string st;
      int64_t last = lastOnEngine_[e];
      if (static_cast<int>(e) == current) {
        st = fmt::format("starting {}", instrName(p_, headOf(current)));
      } else if (last >= 0 && end_[size_t(last)] > now) {
        st = fmt::format("running {} (cycles {}..{})", instrName(p_, last), start_[size_t(last)],
                         end_[size_t(last)]);
      } else if (head_[e] < queue_[e].size()) {
        int64_t s = 0;
        Blocked b = check(static_cast<int>(e), s);
        std::string next = instrName(p_, headOf(static_cast<int>(e)));
        if (b.kind == Blocked::NoToken)
          st = fmt::format("waiting at {} for a token from '{}'", next,
                           t_.engines[size_t(b.other)].name);
        else if (b.kind == Blocked::FifoFull)
          st = fmt::format("waiting at {} for room in its token queue to '{}'", next,
                           t_.engines[size_t(b.other)].name);
        else if (b.kind == Blocked::NotDispatched)
          st = fmt::format("idle; {} not dispatched yet", next);
        else
          st = fmt::format("idle; {} can start at cycle {}", next, s);
      } else {
        st = "done";
      }
      if (last >= 0 && static_cast<int>(e) != current && end_[size_t(last)] <= now)
        st += fmt::format("; last started {} ended at cycle {}", instrName(p_, last),
                          end_[size_t(last)]);
      out += fmt::format("\n    {}: {}", t_.engines[e].name, st);
    }
    return out;
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
  std::vector<std::vector<int64_t>> queue_;       // per engine: program indices in order
  std::vector<size_t> head_;                      // per engine: next position in queue_
  std::vector<int64_t> free_;                     // per engine: busy until
  std::vector<Fifo> fifos_;                       // producer * E + consumer
  std::vector<int64_t> pos_, dispatch_, start_;   // per instruction
  std::vector<int64_t> end_, pred_, dispatchSrc_; // per instruction
  std::vector<int64_t> lastOnEngine_;             // per engine: last started instruction
  std::vector<int64_t> levelStall_;               // per level: bank stall cycles
  std::vector<CounterSample> dramDeltas_;
  std::vector<std::vector<CounterSample>> levelDeltas_;
  std::unique_ptr<HazardChecker> checker_;
  size_t nextDispatch_ = 0;
  int64_t lastDispatch_ = 0, lastDispatchSrc_ = -1;
  SimStats stats_;
};

} // namespace

SimStats run(const isa::Target &t, const isa::Program &p, Memory &mem, const SimOptions &opt) {
  return Scheduler(t, p, mem, opt).run();
}

} // namespace npuc::sim
