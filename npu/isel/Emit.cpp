// Emit.cpp - running a tiled loop nest at compile time to produce the instruction stream.
#include "npu/isel/Emit.h"

#include "support/Error.h"
#include "tir/Eval.h"

#include <fmt/format.h>

#include <map>
#include <optional>
#include <unordered_map>
#include <vector>

namespace npuc::npu {

using namespace tir;

namespace {

class Emitter {
public:
  Emitter(const isa::Target &t, const std::string &where, isa::Program &out)
      : t_(t), where_(where), out_(out) {}

  /// Why a field could not be encoded (emission stops at the first such instruction).
  const std::optional<Reject> &failure() const { return failed_; }

  void run(const Stmt &s) {
    if (!s.defined() || failed_)
      return;
    if (const auto *f = s.as<ForNode>()) {
      int64_t lo = evalInt(f->min, env_), n = evalInt(f->extent, env_);
      const void *key = f->var.get();
      for (int64_t i = lo; i < lo + n && !failed_; ++i) {
        env_[key] = i;
        run(f->body);
      }
      env_.erase(key);
    } else if (const auto *q = s.as<SeqNode>()) {
      for (const Stmt &x : q->stmts)
        run(x);
    } else if (const auto *a = s.as<AttrStmtNode>()) {
      run(a->body);
    } else if (const auto *al = s.as<AllocateNode>()) {
      run(al->body);
    } else if (const auto *c = s.as<IfThenElseNode>()) {
      if (evalInt(c->cond, env_) != 0)
        run(c->thenCase);
      else
        run(c->elseCase);
    } else if (const auto *op = s.as<NpuOpNode>()) {
      emit(*op);
    } else {
      NPUC_ASSERT(false, std::string("NPU kernels contain only loops, branches and NpuOps, not ") +
                             kindName(s.kind()));
    }
  }

private:
  // An NpuOp's fields resolved against its instruction's description: an op inside loops is
  // emitted once per iteration, and looking its fields up by name each time was most of the
  // emission (and a fifth of compiling a transformer).
  struct OpField {
    bool boxDim = false;            // n0/n1/n2/m/k/n: 0 means an empty box
    const int64_t *fixed = nullptr; // the description fixes it to this value
    const isa::Field *field = nullptr;
    int slot = -1; // Instr slot of an encoded field
  };
  struct ResolvedOp {
    const isa::InstrDesc *d = nullptr;
    std::vector<OpField> fields; // op.fields' order
    int n0 = -1;                 // index of "n0" in op.fields
    bool drops = false;          // a DMA or vector op: dropUnitDims may apply
    std::vector<int> fixedSlots; // the description's fixed fields' slots, in d->fixed's order
  };

  // How the description takes field `name`: fixed to a value, encoded in a slot, or absent.
  static OpField fieldOf(const isa::InstrDesc &d, const std::string &name) {
    OpField f;
    f.boxDim =
        name == "n0" || name == "n1" || name == "n2" || name == "m" || name == "k" || name == "n";
    if (auto fx = d.fixed.find(name); fx != d.fixed.end())
      f.fixed = &fx->second;
    else if ((f.field = d.field(name)))
      f.slot = isa::Instr::slotOf(d, name);
    return f;
  }

  const ResolvedOp &resolve(const NpuOpNode &op) {
    auto [it, fresh] = resolved_.try_emplace(&op);
    ResolvedOp &r = it->second;
    if (!fresh)
      return r;
    r.d = t_.findInstr(op.mnemonic);
    NPUC_ASSERT(r.d, "kernels use the mnemonics Hw::derive found in the target: " + op.mnemonic);
    r.drops = r.d->semantics == isa::Semantics::Dma || r.d->semantics == isa::Semantics::Vector;
    for (size_t i = 0; i < op.fields.size(); ++i) {
      if (op.fields[i].first == "n0")
        r.n0 = int(i);
      r.fields.push_back(fieldOf(*r.d, op.fields[i].first));
    }
    for (const auto &[name, v] : r.d->fixed)
      r.fixedSlots.push_back(isa::Instr::slotOf(*r.d, name));
    return r;
  }

  void emit(const NpuOpNode &op) {
    const ResolvedOp &r = resolve(op);
    values_.resize(op.fields.size());
    for (size_t i = 0; i < op.fields.size(); ++i) {
      values_[i] = evalInt(op.fields[i].second, env_);
      if (r.fields[i].boxDim && values_[i] == 0)
        return; // an empty box: nothing to move or compute
    }
    isa::Instr in;
    in.desc = r.d;
    // dropUnitDims changes only boxes whose innermost extent is 1 (n0 absent reads as 1): those
    // take the path by name, the others their resolved fields.
    if (r.drops && (r.n0 < 0 || values_[size_t(r.n0)] == 1)) {
      std::vector<std::pair<std::string, int64_t>> vals;
      for (size_t i = 0; i < op.fields.size(); ++i)
        vals.emplace_back(op.fields[i].first, values_[i]);
      dropUnitDims(*r.d, vals);
      for (const auto &[name, v] : vals)
        if (!put(in, fieldOf(*r.d, name), name, v))
          return;
    } else {
      for (size_t i = 0; i < op.fields.size(); ++i)
        if (!put(in, r.fields[i], op.fields[i].first, values_[i]))
          return;
    }
    size_t k = 0;
    for (const auto &[name, v] : r.d->fixed)
      setField(in, r.fixedSlots[k++], name, v);
    out_.instrs.push_back(std::move(in));
  }

  // Encodes field `name` = v into `in` (a fixed field is checked, not set); false, with the
  // failure recorded, when the description cannot take it.
  bool put(isa::Instr &in, const OpField &f, const std::string &name, int64_t v) {
    const isa::InstrDesc &d = *in.desc;
    if (f.fixed) {
      NPUC_ASSERT(*f.fixed == v, "kernels only use " + d.mnemonic + " with its fixed " + name +
                                     " (Hw::derive chose it for that)");
      return true;
    }
    if (!f.field) {
      if (v == 0)
        return true;
      encodingFailure(
          fmt::format("{}: instruction '{}' of target '{}' has no field '{}' (needed value {})",
                      where_, d.mnemonic, t_.name, name, v));
      return false;
    }
    if (v > f.field->maxValue() || v < f.field->minValue()) {
      encodingFailure(
          fmt::format("{}: {} field '{}' = {} does not fit its {}-bit field in target '{}'", where_,
                      d.mnemonic, name, v, f.field->width, t_.name));
      return false;
    }
    setField(in, f.slot, name, v);
    return true;
  }

  static void setField(isa::Instr &in, int slot, const std::string &name, int64_t v) {
    if (slot >= 0 && slot < isa::Instr::kFlatSlots)
      in.setAt(slot, v);
    else
      in.set(name, v);
  }

  // A value the kernel computed does not fit the instruction: a compiler decision (the caller
  // tries another kernel, splits the group or runs it on the CPU), not an error.
  void encodingFailure(std::string message) {
    failed_ = Reject{-1, RejectPhase::Emit, RejectKind::Encoding, std::move(message)};
  }

  // A strided DMA or vector box whose innermost extent is 1 is the same element sequence with
  // that dimension removed (n0, n1, n2 -> n1, n2, 1, every operand's strides and the DMA's pads
  // likewise). Kernels produce such boxes naturally (a depthwise tile is one channel wide), but
  // the hardware accesses a bank word per innermost row (docs/SIMULATOR.md, "Banks"), so a
  // 1-element row costs a bank access per element; shifted, consecutive elements share words.
  // Applied only when every field involved is encoded (not fixed) and the new values fit.
  void dropUnitDims(const isa::InstrDesc &d, std::vector<std::pair<std::string, int64_t>> &vals) {
    std::vector<std::string> ops;
    if (d.semantics == isa::Semantics::Dma)
      ops = {"src", "dst"};
    else if (d.semantics == isa::Semantics::Vector)
      ops = {"dst", "src1", "src2"};
    else
      return;
    std::map<std::string, int64_t> v(vals.begin(), vals.end());
    auto get = [&](const std::string &n, int64_t def) {
      auto it = v.find(n);
      return it == v.end() ? def : it->second;
    };
    bool changed = false;
    for (int round = 0; round < 2; ++round) {
      if (get("n0", 1) != 1 || (get("n1", 1) == 1 && get("n2", 1) == 1) || get("pad0_lo", 0) != 0 ||
          get("pad0_hi", 0) != 0)
        break;
      std::map<std::string, int64_t> next = v;
      next["n0"] = get("n1", 1);
      next["n1"] = get("n2", 1);
      next["n2"] = 1;
      for (const std::string &o : ops) {
        next[o + "_s0"] = get(o + "_s1", 0);
        next[o + "_s1"] = get(o + "_s2", 0);
        next[o + "_s2"] = 0;
      }
      for (const char *side : {"_lo", "_hi"}) {
        next[std::string("pad0") + side] = get(std::string("pad1") + side, 0);
        next[std::string("pad1") + side] = get(std::string("pad2") + side, 0);
        next[std::string("pad2") + side] = 0;
      }
      bool ok = true;
      for (const auto &[name, x] : next) {
        if (get(name, name[0] == 'n' ? 1 : 0) == x && !v.count(name))
          continue; // untouched default
        const isa::Field *f = d.field(name);
        ok = ok && !d.fixed.count(name) && f && x <= f->maxValue() && x >= f->minValue();
      }
      if (!ok)
        break;
      v = std::move(next);
      changed = true;
    }
    if (!changed)
      return;
    std::map<std::string, int64_t> before(vals.begin(), vals.end());
    vals.clear();
    for (const auto &[name, x] : v) // fields the kernel left out stay out when still default
      if (before.count(name) || x != (name[0] == 'n' ? 1 : 0))
        vals.emplace_back(name, x);
  }

  const isa::Target &t_;
  std::string where_;
  isa::Program &out_;
  std::unordered_map<const void *, int64_t> env_;
  std::optional<Reject> failed_;
  // Per emission, never across calls: the nodes are the caller's body's, alive while it runs.
  std::unordered_map<const NpuOpNode *, ResolvedOp> resolved_;
  std::vector<int64_t> values_; // the op being emitted, op.fields' order
};

} // namespace

Expected<isa::Program, Reject> emitInstructions(const isa::Target &t, const Stmt &body,
                                                const std::string &where) {
  isa::Program out;
  Emitter e(t, where, out);
  e.run(body);
  if (e.failure())
    return unexpected(*e.failure());
  return out;
}

} // namespace npuc::npu
