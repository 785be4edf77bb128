// EmitNpu.cpp - enumerating, checking and costing instruction forms per loop nest (EmitNpu.h).
#include "npu/isel/EmitNpu.h"

#include "npu/isel/InstrMatch.h"
#include "support/Error.h"
#include "support/Half.h"
#include "support/IntMath.h"
#include "tir/IRMutator.h"
#include "tir/Printer.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>

namespace npuc::tir {

std::optional<int> scopeLevel(const isa::Target &t, const std::string &scope) {
  if (scope == "global")
    return t.dramLevel();
  return t.findLevel(scope);
}

std::optional<int> dtypeCode(DataType d) {
  if (d == DataType::Float(16))
    return static_cast<int>(isa::ElemType::F16);
  if (d == DataType::Float(32))
    return static_cast<int>(isa::ElemType::F32);
  if (d == DataType::Int(8))
    return static_cast<int>(isa::ElemType::I8);
  if (d == DataType::Int(32))
    return static_cast<int>(isa::ElemType::I32);
  return std::nullopt;
}

namespace {

using Fields = std::vector<std::pair<std::string, Expr>>;

/// The fields of one candidate instruction, each checked against the description as it is set.
class FieldBuilder {
public:
  explicit FieldBuilder(const isa::InstrDesc &d) : d_(d) {}
  bool ok() const { return ok_; }
  Fields take() { return std::move(fields_); }

  /// An integer field; `absent` is the value an instruction without the field implies.
  void num(const std::string &name, int64_t v, int64_t absent = 0, bool write = true) {
    if (!ok_)
      return;
    if (auto it = d_.fixed.find(name); it != d_.fixed.end()) {
      ok_ = it->second == v;
      return;
    }
    const isa::Field *f = d_.field(name);
    if (!f) {
      ok_ = v == absent;
      return;
    }
    ok_ = v >= f->minValue() && v <= f->maxValue();
    if (ok_ && write)
      fields_.emplace_back(name, imm(v));
  }
  /// A float immediate, encoded as an fp32 bit pattern.
  void fp32(const std::string &name, double v) {
    if (!ok_)
      return;
    const isa::Field *f = d_.field(name);
    ok_ = f ? f->width >= 32 : v == 0;
    if (ok_ && f)
      fields_.emplace_back(name, fimm(v));
  }
  /// An operand: its level must be one the instruction's `<p>_space` can name (or fixes), its
  /// dtype one `<p>_dtype` encodes (when the instruction has that field).
  /// Matmul operands have no space fields: the tensor unit fixes their levels (`implied`).
  void operand(const std::string &p, const Buffer &b, const Expr &base, int level,
               bool implied = false) {
    if (!implied)
      num(p + "_space", level, -1, false);
    if (d_.hasField(p + "_dtype")) {
      std::optional<int> code = dtypeCode(b->dtype);
      ok_ = ok_ && code.has_value();
      num(p + "_dtype", code.value_or(0), -1, false);
    }
    if (ok_)
      fields_.emplace_back(p, load(b, base));
  }

private:
  const isa::InstrDesc &d_;
  Fields fields_;
  bool ok_ = true;
};

struct Form {
  const isa::InstrDesc *instr = nullptr;
  Fields fields;
  int depth = 0;
  double cost = 0;
};

// prefix + j ("n0", "dst_s1"), by appending (GCC 12 warns falsely about literal + string).
std::string indexed(std::string prefix, size_t j) {
  prefix += std::to_string(j);
  return prefix;
}

// Whether distinct iterations of the mapped loops write distinct elements (sufficient test:
// sorted by |stride|, each stride exceeds the span of the smaller ones).
bool injective(const std::vector<int64_t> &strides, const std::vector<int64_t> &extents) {
  std::vector<size_t> idx(strides.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(),
            [&](size_t a, size_t b) { return std::abs(strides[a]) < std::abs(strides[b]); });
  int64_t span = 0;
  for (size_t i : idx) {
    if (extents[i] == 1)
      continue;
    if (std::abs(strides[i]) <= span)
      return false;
    span += std::abs(strides[i]) * (extents[i] - 1);
  }
  return true;
}

class Emitter : public IRMutator {
public:
  explicit Emitter(const isa::Target &t) : t_(t) {}
  std::vector<std::string> scalar; // why each nest left scalar stayed so

  Stmt mutate(const Stmt &s) override {
    PerfectNest n;
    if (s.defined() && (s.kind() == NodeKind::For || s.kind() == NodeKind::Store) &&
        perfectNest(s, n))
      return emitNest(s, n);
    return IRMutator::mutate(s);
  }

private:
  const isa::Target &t_;

  // The accesses of the store and its operands over the covered loops (the innermost `depth`).
  struct Accesses {
    Access dst;
    std::vector<Access> srcs;
    std::vector<int> srcLevel;
    int dstLevel = -1;
  };

  bool analyse(const PerfectNest &n, const OpMatch &m, int depth, Accesses &a) {
    std::vector<NestLoop> covered(n.loops.end() - depth, n.loops.end());
    if (!affineAccess(n.store->buffer, n.store->index, covered, a.dst))
      return false;
    std::optional<int> dl = scopeLevel(t_, n.store->buffer->scope);
    if (!dl)
      return false;
    a.dstLevel = *dl;
    for (const Expr &s : m.srcs) {
      const auto *ld = s.as<LoadNode>();
      Access acc;
      std::optional<int> sl = scopeLevel(t_, ld->buffer->scope);
      if (!sl || !affineAccess(ld->buffer, ld->index, covered, acc))
        return false;
      a.srcs.push_back(acc);
      a.srcLevel.push_back(*sl);
    }
    return true;
  }

  // dimLoop[j] = index into the covered loops of the loop mapped to dimension j.
  void vectorForm(const isa::InstrDesc &d, const OpMatch &m, const Accesses &a,
                  const std::vector<int64_t> &ext, const std::vector<size_t> &dimLoop, Form &out) {
    const isa::VectorUnit &vu = t_.vector;
    if (m.kind != MatchKind::Vector || !vu.supports(m.vecOp))
      return;
    auto inLevels = [&](int l) {
      return std::find(vu.levels.begin(), vu.levels.end(), l) != vu.levels.end();
    };
    if (!inLevels(a.dstLevel))
      return;
    for (int l : a.srcLevel)
      if (!inLevels(l))
        return;
    FieldBuilder fb(d);
    fb.num("op", vu.opCode(m.vecOp));
    fb.operand("dst", a.dst.buffer, a.dst.base, a.dstLevel);
    // Unary ops ignore src2; it names src1 again so that every operand field is valid.
    for (size_t s = 0; s < 2; ++s) {
      size_t k = std::min(s, a.srcs.size() - 1);
      fb.operand(indexed("src", s + 1), a.srcs[k].buffer, a.srcs[k].base, a.srcLevel[k]);
    }
    int64_t elems = 1;
    for (size_t j = 0; j < std::max<size_t>(dimLoop.size(), 1); ++j) {
      int64_t e = j < dimLoop.size() ? ext[dimLoop[j]] : 1;
      elems *= e;
      fb.num(indexed("n", j), e, 1);
    }
    auto strides = [&](const std::string &p, const Access &acc) {
      for (size_t j = 0; j < dimLoop.size(); ++j)
        fb.num(indexed(p + "_s", j), acc.strides[dimLoop[j]]);
    };
    strides("dst", a.dst);
    for (size_t s = 0; s < 2; ++s)
      strides(indexed("src", s + 1), a.srcs[std::min(s, a.srcs.size() - 1)]);
    if (isa::vecOpImmediates(m.vecOp) > 0) {
      fb.fp32("imm0", m.imm0);
      fb.fp32("imm1", m.imm1);
    }
    if (!fb.ok())
      return;
    out.instr = &d;
    out.fields = fb.take();
    out.cost = d.timing.latency + vu.latencyOf(m.vecOp) +
               static_cast<double>(ceilDiv(elems, vu.lanes)) +
               d.timing.perElement * static_cast<double>(elems);
  }

  void dmaForm(const isa::InstrDesc &d, const OpMatch &m, const Accesses &a,
               const std::vector<int64_t> &ext, const std::vector<size_t> &dimLoop, Form &out) {
    const bool fill = m.kind == MatchKind::Fill;
    const Access &src = fill ? a.dst : a.srcs[0];
    const int srcLevel = fill ? a.dstLevel : a.srcLevel[0];
    const DataType dt = a.dst.buffer->dtype;
    if (!fill && src.buffer->dtype != dt)
      return; // a DMA moves bytes: no conversion
    const isa::Engine &eng = t_.engines.at(static_cast<size_t>(d.engine));
    if (eng.bytesPerCycle <= 0)
      return;
    FieldBuilder fb(d);
    fb.operand("dst", a.dst.buffer, a.dst.base, a.dstLevel);
    fb.operand("src", src.buffer, src.base, srcLevel);
    fb.num("elem_bytes", dt.bytes());
    int64_t elems = 1;
    const size_t dims = std::max<size_t>(dimLoop.size(), 1);
    for (size_t j = 0; j < dims; ++j) {
      int64_t e = j < dimLoop.size() ? ext[dimLoop[j]] : 1;
      elems *= e;
      fb.num(indexed("n", j), e, 1);
    }
    for (size_t j = 0; j < dimLoop.size(); ++j) {
      fb.num(indexed("src_s", j), fill ? 0 : src.strides[dimLoop[j]]);
      fb.num(indexed("dst_s", j), a.dst.strides[dimLoop[j]]);
    }
    if (fill) {
      // Every element of the box is padding: dimension 0 padded from both ends, or, where n0 is
      // longer than the two pads can cover (a row of 3136 fp32 accumulators), an outer dimension
      // (a unit one when the box has fewer) padded whole.
      int64_t n0 = dimLoop.empty() ? 1 : ext[dimLoop[0]];
      const isa::Field *lo = d.field("pad0_lo"), *hi = d.field("pad0_hi");
      int64_t padLo = lo ? std::min(n0, lo->maxValue()) : 0;
      size_t whole = 0; // the dimension padded from its low end alone, when not 0
      if (hi && n0 - padLo > hi->maxValue())
        for (size_t j = 1; j < 3 && whole == 0; ++j) {
          const isa::Field *pj = d.field(indexed("pad", j) + "_lo");
          const int64_t e = j < dimLoop.size() ? ext[dimLoop[j]] : 1;
          if (pj && d.field(indexed("n", j)) && e <= pj->maxValue())
            whole = j;
        }
      if (whole == 0) {
        fb.num("pad0_lo", padLo);
        fb.num("pad0_hi", n0 - padLo);
      } else {
        const int64_t e = whole < dimLoop.size() ? ext[dimLoop[whole]] : 1;
        if (whole >= dims)
          fb.num(indexed("n", whole), 1, 1); // a unit dimension no loop maps to
        fb.num(indexed("pad", whole) + "_lo", e);
      }
      int64_t bits = 0;
      if (dt == DataType::Float(16))
        bits = floatToHalf(static_cast<float>(m.imm0));
      else if (dt == DataType::Float(32))
        bits = std::bit_cast<uint32_t>(static_cast<float>(m.imm0));
      else if (dt.isInt() && std::nearbyint(m.imm0) == m.imm0 && std::fabs(m.imm0) < 0x1p63)
        // The low dt.bits bits; a 64-bit type keeps them all (a shift by 64 is undefined).
        bits = static_cast<int64_t>(m.imm0) &
               (dt.bits >= 64 ? ~int64_t(0) : (int64_t(1) << dt.bits) - 1);
      else
        return;
      fb.num("pad_value", bits);
    }
    if (!fb.ok())
      return;
    const bool dram = a.dstLevel == t_.dramLevel() || (!fill && srcLevel == t_.dramLevel());
    double rate = eng.bytesPerCycle;
    if (dram)
      rate = std::min(rate, t_.dram.bytesPerCycle);
    out.instr = &d;
    out.fields = fb.take();
    out.cost = d.timing.latency + (dram ? t_.dram.latency : 0) +
               std::ceil(static_cast<double>(elems * dt.bytes()) / rate) +
               d.timing.perElement * static_cast<double>(elems);
  }

  // C[m][n] += A[m][k] * B[k][n] over the covered loops: each loop takes the role its strides
  // give it (k: C does not move; n: A does not; m: B does not), rows must be dense.
  void matmulForm(const isa::InstrDesc &d, const Accesses &a, const std::vector<int64_t> &ext,
                  Form &out) {
    const isa::TensorUnit &tu = t_.tensor;
    const Access &A = a.srcs[0], &B = a.srcs[1], &C = a.dst;
    if (a.srcLevel[0] != tu.aLevel || a.srcLevel[1] != tu.bLevel || a.dstLevel != tu.accLevel)
      return;
    if (dtypeCode(A.buffer->dtype) != static_cast<int>(tu.operandType) ||
        dtypeCode(B.buffer->dtype) != static_cast<int>(tu.operandType) ||
        dtypeCode(C.buffer->dtype) != static_cast<int>(tu.accType))
      return;
    int64_t M = 1, K = 1, N = 1;
    int roles[3] = {-1, -1, -1}; // m, k, n
    for (size_t l = 0; l < ext.size(); ++l) {
      if (ext[l] == 1)
        continue;
      int r = C.strides[l] == 0 ? 1 : A.strides[l] == 0 ? 2 : B.strides[l] == 0 ? 0 : -1;
      if (r < 0 || roles[r] >= 0)
        return;
      roles[r] = static_cast<int>(l);
      (r == 0 ? M : r == 1 ? K : N) = ext[l];
    }
    auto stride = [&](const Access &x, int role) {
      return roles[role] < 0 ? -1 : x.strides[static_cast<size_t>(roles[role])];
    };
    auto dense = [&](const Access &x, int rowRole, int64_t rowStride, int colRole) {
      return (roles[rowRole] < 0 || stride(x, rowRole) == rowStride) &&
             (roles[colRole] < 0 || stride(x, colRole) == 1);
    };
    if (!dense(A, 0, K, 1) || !dense(B, 1, N, 2) || !dense(C, 0, N, 2))
      return;
    if ((roles[1] >= 0 && (A.strides[size_t(roles[1])] == 0 || B.strides[size_t(roles[1])] == 0)))
      return;
    FieldBuilder fb(d);
    fb.operand("a", A.buffer, A.base, a.srcLevel[0], true);
    fb.operand("b", B.buffer, B.base, a.srcLevel[1], true);
    fb.operand("c", C.buffer, C.base, a.dstLevel, true);
    fb.num("m", M);
    fb.num("k", K);
    fb.num("n", N);
    fb.num("accumulate", 1);
    if (!fb.ok())
      return;
    out.instr = &d;
    out.fields = fb.take();
    out.cost = d.timing.latency + tu.fillLatency +
               static_cast<double>(M * ceilDiv(K, tu.rows) * ceilDiv(N, tu.cols)) +
               d.timing.perElement * static_cast<double>(M * N);
  }

  // The store and the first reason no form applies, in the target's terms.
  std::string whyScalar(const PerfectNest &n) const {
    std::string what = n.store->buffer->name + "[" + toText(n.store->index) +
                       "] = " + toText(n.store->value) + ": ";
    std::vector<OpMatch> ms = matchOps(n.store->value, n.store->buffer, n.store->index);
    if (ms.empty())
      return what + "not one unit operation over loads and constants";
    bool opKnown = false;
    for (const OpMatch &m : ms)
      opKnown = opKnown || (m.kind == MatchKind::Vector && t_.vector.supports(m.vecOp)) ||
                ((m.is(isa::VecOp::Copy) || m.kind == MatchKind::Fill) &&
                 !t_.instrsWith(isa::Semantics::Dma).empty()) ||
                (m.kind == MatchKind::Matmul && !t_.instrsWith(isa::Semantics::Matmul).empty());
    if (!opKnown)
      return what + "the target has no instruction for '" + ms.front().name() + "'";
    if (!n.loops.empty() && !n.loops.back().constant)
      return what + "the innermost loop has non-constant bounds";
    return what + "no instruction form accepts its operands (scopes, dtypes, strides or "
                  "extents vs field limits)";
  }

  Stmt emitNest(const Stmt &s, const PerfectNest &n) {
    // Covered loops come from the innermost constant-bounded suffix of the nest.
    int maxDepth = 0;
    while (maxDepth < static_cast<int>(n.loops.size()) &&
           n.loops[n.loops.size() - 1 - static_cast<size_t>(maxDepth)].constant)
      ++maxDepth;
    maxDepth = std::min(maxDepth, 3);
    Form best;
    double bestTotal = 0;
    for (const OpMatch &m : matchOps(n.store->value, n.store->buffer, n.store->index)) {
      // A nest's instruction covers at least its innermost loop (one instruction per element
      // is not emission); a bare store is one element.
      for (int depth = n.loops.empty() ? 0 : 1; depth <= maxDepth; ++depth) {
        Accesses a;
        if (!analyse(n, m, depth, a))
          continue;
        std::vector<int64_t> ext;
        for (size_t l = n.loops.size() - static_cast<size_t>(depth); l < n.loops.size(); ++l)
          ext.push_back(n.loops[l].extent);
        double issues = 1;
        for (size_t l = 0; l + static_cast<size_t>(depth) < n.loops.size(); ++l)
          if (n.loops[l].constant)
            issues *= static_cast<double>(n.loops[l].extent);
        auto consider = [&](Form f) {
          if (!f.instr)
            return;
          f.depth = depth;
          double total = f.cost * issues;
          if (!best.instr || total < bestTotal) {
            best = std::move(f);
            bestTotal = total;
          }
        };
        if (m.kind == MatchKind::Matmul) {
          for (const isa::InstrDesc *d : t_.instrsWith(isa::Semantics::Matmul)) {
            Form f;
            matmulForm(*d, a, ext, f);
            consider(f);
          }
          continue;
        }
        // Dimension mappings: innermost loop -> n0 first; permutations only when the order
        // of iterations cannot matter (no operand reads the destination buffer, and every
        // iteration writes its own element).
        std::vector<size_t> dimLoop(static_cast<size_t>(depth));
        for (size_t j = 0; j < dimLoop.size(); ++j)
          dimLoop[j] = dimLoop.size() - 1 - j;
        bool reorderable = injective(a.dst.strides, ext);
        for (const Access &x : a.srcs)
          reorderable = reorderable && !x.buffer.same(a.dst.buffer);
        std::vector<size_t> first = dimLoop;
        do {
          if (m.kind != MatchKind::Fill)
            for (const isa::InstrDesc *d : t_.instrsWith(isa::Semantics::Vector)) {
              Form f;
              vectorForm(*d, m, a, ext, dimLoop, f);
              consider(f);
            }
          if (m.is(isa::VecOp::Copy) || m.kind == MatchKind::Fill)
            for (const isa::InstrDesc *d : t_.instrsWith(isa::Semantics::Dma)) {
              Form f;
              dmaForm(*d, m, a, ext, dimLoop, f);
              consider(f);
            }
          std::next_permutation(dimLoop.begin(), dimLoop.end());
        } while (reorderable && dimLoop != first);
      }
    }
    if (!best.instr) {
      scalar.push_back(whyScalar(n));
      return s;
    }
    Stmt body = NpuOpNode::make(best.instr->mnemonic, std::move(best.fields));
    // Rebuild the loops left outside the instruction around it.
    std::vector<const ForNode *> fors;
    Stmt cur = s;
    while (const ForNode *f = cur.as<ForNode>()) {
      fors.push_back(f);
      cur = f->body;
    }
    for (size_t l = fors.size() - static_cast<size_t>(best.depth); l-- > 0;)
      body = ForNode::make(fors[l]->var, fors[l]->min, fors[l]->extent, fors[l]->forKind, body);
    return body;
  }
};

} // namespace

PrimFunc emitNpu(const PrimFunc &f, const isa::Target &t, std::vector<std::string> *scalar) {
  PrimFunc out = f;
  Emitter e(t);
  out.body = e.mutate(f.body);
  if (scalar)
    *scalar = std::move(e.scalar);
  return out;
}

} // namespace npuc::tir
