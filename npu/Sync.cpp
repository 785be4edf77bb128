// Sync.cpp - deriving dependency tokens from the instructions' memory accesses.
#include "npu/Sync.h"

#include "support/Error.h"

#include <algorithm>

namespace npuc::npu {

bool vectorOpIsBinary(const std::string &op) {
  static const char *binary[] = {"add", "sub", "mul", "div", "max", "min", "mac"};
  return std::any_of(std::begin(binary), std::end(binary), [&](const char *b) { return op == b; });
}

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
    int64_t op = g("op");
    if (op >= 0 && op < static_cast<int64_t>(t.vector.ops.size()) &&
        vectorOpIsBinary(t.vector.ops[static_cast<size_t>(op)]))
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
  return st;
}

} // namespace npuc::npu
