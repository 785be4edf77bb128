// Emit.cpp - running a tiled loop nest at compile time to produce the instruction stream.
#include "npu/Emit.h"

#include "support/Error.h"
#include "tir/Eval.h"

#include <unordered_map>

namespace npuc::npu {

using namespace tir;

namespace {

class Emitter {
public:
  Emitter(const isa::Target &t, const std::string &where, isa::Program &out)
      : t_(t), where_(where), out_(out) {}

  void run(const Stmt &s) {
    if (!s.defined())
      return;
    if (const auto *f = s.as<ForNode>()) {
      int64_t lo = evalInt(f->min, env_), n = evalInt(f->extent, env_);
      const void *key = f->var.get();
      for (int64_t i = lo; i < lo + n; ++i) {
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
  void emit(const NpuOpNode &op) {
    const isa::InstrDesc *d = t_.findInstr(op.mnemonic);
    NPUC_ASSERT(d, "kernels use the mnemonics Hw::derive found in the target: " + op.mnemonic);
    isa::Instr in;
    in.desc = d;
    for (const auto &[name, expr] : op.fields) {
      int64_t v = evalInt(expr, env_);
      if ((name == "n0" || name == "n1" || name == "n2" || name == "m" || name == "k" ||
           name == "n") &&
          v == 0)
        return; // an empty box: nothing to move or compute
      if (auto fx = d->fixed.find(name); fx != d->fixed.end()) {
        NPUC_ASSERT(fx->second == v, "kernels only use " + d->mnemonic + " with its fixed " + name +
                                         " (Hw::derive chose it for that)");
        continue;
      }
      const isa::Field *f = d->field(name);
      if (!f) {
        if (v != 0)
          fail("{}: instruction '{}' of target '{}' has no field '{}' (needed value {})", where_,
               d->mnemonic, t_.name, name, v);
        continue;
      }
      if (v > f->maxValue() || v < f->minValue())
        fail("{}: {} field '{}' = {} does not fit its {}-bit field in target '{}'", where_,
             d->mnemonic, name, v, f->width, t_.name);
      in.set(name, v);
    }
    for (const auto &[name, v] : d->fixed)
      in.set(name, v);
    out_.instrs.push_back(std::move(in));
  }

  const isa::Target &t_;
  std::string where_;
  isa::Program &out_;
  std::unordered_map<const void *, int64_t> env_;
};

} // namespace

void emitInstructions(const isa::Target &t, const Stmt &body, const std::string &where,
                      isa::Program &out) {
  Emitter(t, where, out).run(body);
}

} // namespace npuc::npu
