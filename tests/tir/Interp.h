// Interp.h - a direct interpreter of TIR for differential tests of the passes: runs a PrimFunc
// on buffers of doubles (every buffer, whatever its dtype; integer-typed values are kept
// integral by truncating casts and integer operators), so a function before and after a pass
// can be compared on the same random inputs. Deliberately naive: a tree walk with an
// environment of loop variables, no code shared with the passes under test.
#pragma once

#include "support/Error.h"
#include "tir/Eval.h"
#include "tir/IR.h"

#include <cmath>
#include <map>
#include <vector>

namespace npuc::tir::test {

class Interp {
public:
  std::map<const BufferNode *, std::vector<double>> mem;

  void run(const PrimFunc &f, std::vector<std::vector<double>> &params) {
    NPUC_ASSERT(params.size() == f.params.size(), "interp: parameter count");
    for (size_t i = 0; i < params.size(); ++i)
      mem[f.params[i].get()] = params[i];
    exec(f.body);
    for (size_t i = 0; i < params.size(); ++i)
      params[i] = mem[f.params[i].get()];
  }

private:
  std::map<const void *, int64_t> env_;

  std::vector<double> &buffer(const Buffer &b) {
    auto it = mem.find(b.get());
    NPUC_ASSERT(it != mem.end(), "interp: unknown buffer " + b->name);
    return it->second;
  }

  double &at(const Buffer &b, const Expr &index) {
    std::vector<double> &m = buffer(b);
    int64_t i = static_cast<int64_t>(eval(index));
    NPUC_ASSERT(i >= 0 && i < static_cast<int64_t>(m.size()),
                "interp: " + b->name + "[" + std::to_string(i) + "] out of bounds");
    return m[static_cast<size_t>(i)];
  }

  void exec(const Stmt &s) {
    switch (s.kind()) {
    case NodeKind::For: {
      const auto *op = s.as<ForNode>();
      int64_t lo = static_cast<int64_t>(eval(op->min)), n = static_cast<int64_t>(eval(op->extent));
      for (int64_t i = lo; i < lo + n; ++i) {
        env_[op->var.get()] = i;
        exec(op->body);
      }
      env_.erase(op->var.get());
      return;
    }
    case NodeKind::IfThenElse: {
      const auto *op = s.as<IfThenElseNode>();
      if (eval(op->cond) != 0)
        exec(op->thenCase);
      else if (op->elseCase.defined())
        exec(op->elseCase);
      return;
    }
    case NodeKind::Store: {
      const auto *op = s.as<StoreNode>();
      double v = eval(op->value);
      at(op->buffer, op->index) = v;
      return;
    }
    case NodeKind::Allocate: {
      const auto *op = s.as<AllocateNode>();
      mem[op->buffer.get()] = std::vector<double>(static_cast<size_t>(op->buffer->numElements()));
      exec(op->body);
      mem.erase(op->buffer.get());
      return;
    }
    case NodeKind::Seq:
      for (const Stmt &c : s.as<SeqNode>()->stmts)
        exec(c);
      return;
    case NodeKind::Evaluate:
      eval(s.as<EvaluateNode>()->value);
      return;
    case NodeKind::AttrStmt:
      exec(s.as<AttrStmtNode>()->body);
      return;
    default:
      NPUC_ASSERT(false, std::string("interp: unsupported statement ") + kindName(s.kind()));
    }
  }

  static double integral(DataType t, double v) { return t.isFloat() ? v : std::trunc(v); }

  double eval(const Expr &e) {
    switch (e.kind()) {
    case NodeKind::IntImm:
      return static_cast<double>(e.as<IntImmNode>()->value);
    case NodeKind::FloatImm:
      return e.as<FloatImmNode>()->value;
    case NodeKind::Var: {
      auto it = env_.find(e.get());
      NPUC_ASSERT(it != env_.end(), "interp: unbound variable");
      return static_cast<double>(it->second);
    }
    case NodeKind::Not:
      return eval(e.as<NotNode>()->a) == 0;
    case NodeKind::Select: {
      const auto *op = e.as<SelectNode>();
      return eval(op->cond) != 0 ? eval(op->trueValue) : eval(op->falseValue);
    }
    case NodeKind::Cast:
      return integral(e.type(), eval(e.as<CastNode>()->value));
    case NodeKind::Load: {
      const auto *op = e.as<LoadNode>();
      return at(op->buffer, op->index);
    }
    case NodeKind::Call: {
      const auto *op = e.as<CallNode>();
      double x = op->args.empty() ? 0 : eval(op->args[0]);
      if (op->name == "exp")
        return std::exp(x);
      if (op->name == "sqrt")
        return std::sqrt(x);
      if (op->name == "tanh")
        return std::tanh(x);
      NPUC_ASSERT(false, "interp: unsupported call " + op->name);
    }
    default:
      break;
    }
    const auto *op = static_cast<const BinaryNode *>(e.get());
    double a = eval(op->a), b = eval(op->b);
    bool isInt = op->a.type().isIntegral();
    auto ia = static_cast<int64_t>(a), ib = static_cast<int64_t>(b);
    switch (e.kind()) {
    case NodeKind::Add:
      return a + b;
    case NodeKind::Sub:
      return a - b;
    case NodeKind::Mul:
      return a * b;
    case NodeKind::Div:
      return isInt ? static_cast<double>(ia / ib) : a / b;
    case NodeKind::Mod:
      return isInt ? static_cast<double>(ia % ib) : std::fmod(a, b);
    case NodeKind::FloorDiv:
      return static_cast<double>(floorDivInt(ia, ib));
    case NodeKind::FloorMod:
      return static_cast<double>(floorModInt(ia, ib));
    case NodeKind::Min:
      return std::min(a, b);
    case NodeKind::Max:
      return std::max(a, b);
    case NodeKind::EQ:
      return a == b;
    case NodeKind::NE:
      return a != b;
    case NodeKind::LT:
      return a < b;
    case NodeKind::LE:
      return a <= b;
    case NodeKind::GT:
      return a > b;
    case NodeKind::GE:
      return a >= b;
    case NodeKind::And:
      return a != 0 && b != 0;
    case NodeKind::Or:
      return a != 0 || b != 0;
    default:
      NPUC_ASSERT(false, std::string("interp: unsupported expression ") + kindName(e.kind()));
    }
  }
};

} // namespace npuc::tir::test
