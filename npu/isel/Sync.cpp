// Sync.cpp - deriving dependency tokens from the instructions' memory accesses, and keeping them
// within what the engine and token queues can hold without deadlock.
#include "npu/isel/Sync.h"

#include "support/Error.h"

#include <algorithm>
#include <climits>
#include <cstdint>

namespace npuc::npu {

namespace {

// Bounding byte range of a strided 3-D view of `counts` elements with strides in elements.
Access span(int level, int64_t addr, int64_t elemBytes, const int64_t counts[3],
            const int64_t strides[3], bool write) {
  int64_t lo = 0, hi = 0;
  for (int d = 0; d < 3; ++d) {
    if (counts[d] <= 0)
      return {level, addr, addr, write};
    int64_t ext = (counts[d] - 1) * strides[d];
    if (ext < 0)
      lo += ext;
    else
      hi += ext;
  }
  return {level, addr + lo * elemBytes, addr + (hi + 1) * elemBytes, write};
}

} // namespace

std::vector<Access> accessesOf(const isa::Target &t, const isa::Instr &in) {
  std::vector<Access> out;
  auto g = [&](const char *f) { return in.get(f); };
  switch (in.desc->semantics) {
  case isa::Semantics::Dma: {
    int64_t eb = g("elem_bytes");
    int64_t n[3] = {g("n0"), g("n1"), g("n2")};
    int64_t valid[3] = {n[0] - g("pad0_lo") - g("pad0_hi"), n[1] - g("pad1_lo") - g("pad1_hi"),
                        n[2] - g("pad2_lo") - g("pad2_hi")};
    int64_t ss[3] = {g("src_s0"), g("src_s1"), g("src_s2")};
    int64_t ds[3] = {g("dst_s0"), g("dst_s1"), g("dst_s2")};
    out.push_back(span(static_cast<int>(g("src_space")), g("src_addr"), eb, valid, ss, false));
    out.push_back(span(static_cast<int>(g("dst_space")), g("dst_addr"), eb, n, ds, true));
    break;
  }
  case isa::Semantics::Matmul: {
    int64_t m = g("m"), k = g("k"), n = g("n");
    int64_t ob = isa::elemBytes(t.tensor.operandType), ab = isa::elemBytes(t.tensor.accType);
    out.push_back({t.tensor.aLevel, g("a_addr"), g("a_addr") + m * k * ob, false});
    out.push_back({t.tensor.bLevel, g("b_addr"), g("b_addr") + k * n * ob, false});
    // Accumulating reads C too; a write covers both orderings for the token pass.
    out.push_back({t.tensor.accLevel, g("c_addr"), g("c_addr") + m * n * ab, true});
    break;
  }
  case isa::Semantics::Vector: {
    int64_t n[3] = {g("n0"), g("n1"), g("n2")};
    auto view = [&](const std::string &p, bool write) {
      int64_t s[3] = {g((p + "_s0").c_str()), g((p + "_s1").c_str()), g((p + "_s2").c_str())};
      int64_t eb = isa::elemBytes(static_cast<isa::ElemType>(g((p + "_dtype").c_str())));
      out.push_back(span(static_cast<int>(g((p + "_space").c_str())), g((p + "_addr").c_str()), eb,
                         n, s, write));
    };
    view("dst", true); // also what `mac` reads: a write conflicts with every access already
    view("src1", false);
    if (std::optional<isa::VecOp> op = t.vector.opOf(g("op")); op && isa::vecOpReadsSrc2(*op))
      view("src2", false);
    break;
  }
  case isa::Semantics::Finish:
    break;
  }
  return out;
}

namespace {

bool conflicts(const std::vector<Access> &a, const std::vector<Access> &b) {
  for (const Access &x : a)
    for (const Access &y : b)
      if ((x.write || y.write) && x.level == y.level && x.lo < y.hi && y.lo < x.hi)
        return true;
  return false;
}

} // namespace

namespace {

// ---- Engine and token queues (docs/ISA.md "Timing", docs/SIMULATOR.md "Engines") ----
//
// Whether a program can deadlock does not depend on durations: every rule of the simulator is
// "event B cannot happen before event A" (an engine runs its queue in order; instruction i is
// dispatched after i-1, and, when it is the k-th of its engine with k >= queue_depth, after the
// (k - queue_depth)-th of that engine started; a pop waits for its token's push; the j-th push
// into a (producer, consumer) FIFO waits for the FIFO's (j - tokens.queue_depth)-th pop). The
// simulator is deadlock-free on a program exactly when the graph of these constraints has no
// cycle, whatever the timing, and readiness only ever grows. So an untimed machine that starts
// any ready head instruction until none is left decides it exactly.
//
// Every constraint but the last points backwards in program order (insertTokens links each pop
// to an earlier push). A cycle therefore needs a push waiting for a pop that comes later in
// program order, i.e. more tokens between two engines outstanding in program order than the
// queue holds, and the engine queues too short to dispatch past them (MobileNetV2 at batch 4:
// every mov of image n pushes a write-after-read token to the load that reuses its buffer for
// image n + 2, two images' worth (60) before the first such load).
class QueueMachine {
public:
  QueueMachine(const isa::Target &t, const isa::Program &p)
      : t_(t), p_(p), E_(t.engines.size()), engine_(p.instrs.size(), -1), pos_(p.instrs.size(), 0),
        pop_(p.instrs.size(), 0), push_(p.instrs.size(), 0), started_(p.instrs.size(), false),
        queue_(E_), head_(E_, 0), pairs_(E_ * E_) {
    const int64_t mask = E_ >= 63 ? -1 : (int64_t(1) << E_) - 1;
    for (size_t i = 0; i < p.instrs.size(); ++i) {
      const isa::Instr &in = p.instrs[i];
      int e = in.desc->engine;
      if (e < 0 || static_cast<size_t>(e) >= E_)
        continue; // a finish bound to no engine: dispatched and never waited for
      engine_[i] = e;
      pop_[i] = in.get("pop") & mask;
      push_[i] = in.get("push") & mask;
      pos_[i] = static_cast<int64_t>(queue_[size_t(e)].size());
      queue_[size_t(e)].push_back(i);
      for (size_t q = 0; q < E_; ++q)
        if (pop_[i] >> q & 1)
          pair(q, size_t(e)).poppers.push_back(i);
    }
  }

  /// Starts ready head instructions until every one has started (true) or none can (false).
  bool run() {
    for (bool progress = true; progress;) {
      progress = false;
      dispatch();
      for (size_t e = 0; e < E_; ++e)
        while (head_[e] < queue_[e].size() && ready(e)) {
          start(e);
          dispatch();
          progress = true;
        }
    }
    for (size_t e = 0; e < E_; ++e)
      if (head_[e] < queue_[e].size())
        return false;
    return true;
  }

  /// The first instruction in program order that has not started (the machine is stuck).
  size_t firstBlocked() const {
    size_t x = SIZE_MAX;
    for (size_t e = 0; e < E_; ++e)
      if (head_[e] < queue_[e].size())
        x = std::min(x, queue_[e][head_[e]]);
    return x;
  }

  /// Repairs the stuck machine at X = firstBlocked(), returning the tokens merged (>= 1).
  ///
  /// Everything before X in program order has started, so X is dispatched, heads its engine A and
  /// has its popped tokens (their pushes precede it); X waits for room in a FIFO A -> B: its push
  /// is the j-th, and the (j - depth)-th pop, at C_{j-depth}, has not started, so it comes after
  /// X in program order. Merge X's token with the previous one of that FIFO: P_{j-1}, the last
  /// instruction of A that pushed to B, no longer pushes; the consumer C_{j-1} pops X's token
  /// instead; and C_j, which popped X's token, pops nothing from A.
  ///  - Sound: C_{j-1} now waits for X, which on the in-order engine A ends after P_{j-1};
  ///    C_j runs after C_{j-1} on the in-order engine B, hence after X. Every ordering the
  ///    tokens gave still holds, so the program computes what it did.
  ///  - FIFO pairing stays exact: one push and one pop leave the FIFO, and the pushes and pops
  ///    left are still matched in order, the j-th to the j-th.
  ///  - Still no forward pop: C_{j-1} comes at or after C_{j-depth} on B, hence after X.
  ///  - The machine's state stays one of the new program: P_{j-1}'s push was the FIFO's last and
  ///    nothing popped it (at most j - depth pops happened), and C_j has not started.
  /// X's push is now the (j-1)-th; each merge removes a token, so repeating this ends.
  int64_t repair() {
    const size_t x = firstBlocked();
    NPUC_ASSERT(x != SIZE_MAX, "a stuck queue machine has an instruction left");
    const size_t a = static_cast<size_t>(engine_[x]);
    int64_t merged = 0;
    for (size_t b = 0; b < E_; ++b) {
      Pair &f = pair(a, b);
      while ((push_[x] >> b & 1) && full(f)) {
        const size_t j = f.pushers.size();
        NPUC_ASSERT(j >= 1 && f.poppers.size() > j && f.poppers[j] > x && !started_[f.poppers[j]],
                    "a token pushed before the first stuck instruction is popped after it: " +
                        name(x));
        const size_t prev = f.pushers.back(), consumer = f.poppers[j];
        f.pushers.pop_back();
        push_[prev] &= ~(int64_t(1) << b);
        pop_[consumer] &= ~(int64_t(1) << a);
        f.poppers.erase(f.poppers.begin() + static_cast<std::ptrdiff_t>(j));
        NPUC_ASSERT(f.poppers[j - 1] > x, "a merged token is popped after its new producer");
        ++merged;
      }
    }
    NPUC_ASSERT(merged > 0, "the first stuck instruction waits for room in a token queue (all its "
                            "other waits point backwards in program order): " +
                                explain());
    return merged;
  }

  /// Writes the (repaired) pop and push fields back.
  void store(isa::Program &p) const {
    for (size_t i = 0; i < p.instrs.size(); ++i)
      if (engine_[i] >= 0) {
        p.instrs[i].set("pop", pop_[i]);
        p.instrs[i].set("push", push_[i]);
      }
  }

  /// What every blocked engine waits for, like the simulator's deadlock error.
  std::string explain() const {
    std::string out;
    for (size_t e = 0; e < E_; ++e) {
      if (head_[e] >= queue_[e].size())
        continue;
      const size_t i = queue_[e][head_[e]];
      out += fmt::format("{}engine '{}' waits at {}", out.empty() ? "" : "; ", t_.engines[e].name,
                         name(i));
      if (i >= next_) {
        out += fmt::format(", not dispatched: the dispatcher is blocked at {} (queue of engine "
                           "'{}' full)",
                           name(next_), t_.engines[size_t(engine_[next_])].name);
        continue;
      }
      for (size_t q = 0; q < E_; ++q) {
        if ((pop_[i] >> q & 1) && pair(q, e).pushers.size() <= pair(q, e).popped)
          out += fmt::format(" for a token from engine '{}'", t_.engines[q].name);
        if ((push_[i] >> q & 1) && full(pair(e, q)))
          out += fmt::format(" for room in its token queue to engine '{}' (depth {})",
                             t_.engines[q].name, t_.tokenQueueDepth);
      }
    }
    return out;
  }

private:
  struct Pair {
    std::vector<size_t> pushers; // instructions that pushed so far, in order
    std::vector<size_t> poppers; // every instruction that pops, in order
    size_t popped = 0;
  };
  Pair &pair(size_t producer, size_t consumer) { return pairs_[producer * E_ + consumer]; }
  const Pair &pair(size_t producer, size_t consumer) const {
    return pairs_[producer * E_ + consumer];
  }
  bool full(const Pair &f) const {
    const size_t depth = static_cast<size_t>(std::max(0, t_.tokenQueueDepth));
    const size_t j = f.pushers.size(); // index of the next push
    return depth > 0 && j >= depth && f.popped <= j - depth;
  }
  std::string name(size_t i) const {
    return fmt::format("instruction #{} ({})", i, p_.instrs[i].desc->mnemonic);
  }

  void dispatch() {
    while (next_ < engine_.size()) {
      const int e = engine_[next_];
      if (e >= 0) {
        const int64_t depth = t_.engines[size_t(e)].queueDepth, k = pos_[next_];
        if (depth > 0 && k >= depth && !started_[queue_[size_t(e)][size_t(k - depth)]])
          return;
      }
      ++next_;
    }
  }
  bool ready(size_t e) const {
    const size_t i = queue_[e][head_[e]];
    if (i >= next_)
      return false;
    for (size_t q = 0; q < E_; ++q) {
      if ((pop_[i] >> q & 1) && pair(q, e).pushers.size() <= pair(q, e).popped)
        return false;
      if ((push_[i] >> q & 1) && full(pair(e, q)))
        return false;
    }
    return true;
  }
  void start(size_t e) {
    const size_t i = queue_[e][head_[e]++];
    for (size_t q = 0; q < E_; ++q) {
      if (pop_[i] >> q & 1)
        ++pair(q, e).popped;
      if (push_[i] >> q & 1)
        pair(e, q).pushers.push_back(i);
    }
    started_[i] = true;
  }

  const isa::Target &t_;
  const isa::Program &p_;
  const size_t E_;
  std::vector<int> engine_;                // per instruction; -1: no engine
  std::vector<int64_t> pos_, pop_, push_;  // per instruction
  std::vector<bool> started_;              // per instruction
  std::vector<std::vector<size_t>> queue_; // per engine: its instructions in program order
  std::vector<size_t> head_;               // per engine: next to start
  std::vector<Pair> pairs_;                // producer * E + consumer
  size_t next_ = 0;                        // first instruction not dispatched
};

} // namespace

std::string findDeadlock(const isa::Target &t, const isa::Program &p) {
  QueueMachine m(t, p);
  return m.run() ? std::string() : "deadlock: " + m.explain();
}

int64_t boundTokenQueues(const isa::Target &t, isa::Program &p) {
  QueueMachine m(t, p);
  int64_t merged = 0;
  while (!m.run())
    merged += m.repair();
  if (merged > 0)
    m.store(p);
  return merged;
}

SyncStats insertTokens(const isa::Target &t, isa::Program &p) {
  const size_t E = t.engines.size();
  SyncStats st;
  struct Entry {
    size_t instr;
    std::vector<Access> acc;
    std::vector<int64_t> clock; // per engine: how many of its instructions are known complete
  };
  std::vector<std::vector<Entry>> perEngine(E);
  std::vector<std::vector<int64_t>> known(E, std::vector<int64_t>(E, 0));
  for (size_t i = 0; i < p.instrs.size(); ++i) {
    isa::Instr &in = p.instrs[i];
    in.set("pop", 0);
    in.set("push", 0);
    size_t e = static_cast<size_t>(in.desc->engine);
    std::vector<Access> acc = accessesOf(t, in);
    int64_t pop = 0;
    for (size_t q = 0; q < E; ++q) {
      if (q == e)
        continue;
      auto &list = perEngine[q];
      // Latest conflicting instruction of engine q not yet known complete by engine e.
      for (int64_t j = static_cast<int64_t>(list.size()) - 1; j >= known[e][q]; --j) {
        Entry &prod = list[static_cast<size_t>(j)];
        if (!conflicts(prod.acc, acc))
          continue;
        isa::Instr &pi = p.instrs[prod.instr];
        pi.set("push", pi.get("push") | (int64_t(1) << e));
        pop |= int64_t(1) << q;
        ++st.tokens;
        for (size_t r = 0; r < E; ++r)
          known[e][r] = std::max(known[e][r], prod.clock[r]);
        known[e][q] = std::max(known[e][q], j + 1);
        break;
      }
    }
    in.set("pop", pop);
    std::vector<int64_t> clock = known[e];
    clock[e] = static_cast<int64_t>(perEngine[e].size()) + 1; // itself, once complete
    known[e][e] = clock[e];
    perEngine[e].push_back({i, std::move(acc), std::move(clock)});
  }
  st.merged = boundTokenQueues(t, p);
  st.tokens -= st.merged;
  // The compiler never hands out a program that can deadlock: checked by the exact model.
  std::string why = findDeadlock(t, p);
  NPUC_ASSERT(why.empty(), "the token pass leaves no program that can deadlock on the engine or "
                           "token queues: " +
                               why);
  return st;
}

} // namespace npuc::npu
