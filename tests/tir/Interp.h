// Interp.h - a direct interpreter of TIR for differential tests of the passes: runs a PrimFunc
// on buffers of doubles (every buffer, whatever its dtype; integer-typed values are kept
// integral by truncating casts and integer operators), so a function before and after a pass
// can be compared on the same random inputs. Deliberately naive: a tree walk with an
// environment of loop variables, no code shared with the passes under test. NPU instructions
// with symbolic operands (what emit-npu writes) run with the semantics docs/ISA.md gives the
// vector, DMA and matmul primitives; vector op codes are looked up in `vectorOps`.
#pragma once

#include "isa/VectorOps.h"
#include "support/Error.h"
#include "support/Half.h"
#include "tir/Eval.h"
#include "tir/IR.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace npuc::tir::test {

class Interp {
public:
  std::map<const BufferNode *, std::vector<double>> mem;
  std::vector<isa::VecOp> vectorOps; // the target's vector_unit.ops, by op code

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
    case NodeKind::NpuOp:
      npu(s.as<NpuOpNode>());
      return;
    default:
      NPUC_ASSERT(false, std::string("interp: unsupported statement ") + kindName(s.kind()));
    }
  }

  int64_t field(const NpuOpNode *op, const char *name, int64_t absent) {
    Expr e = op->field(name);
    return e.defined() ? static_cast<int64_t>(eval(e)) : absent;
  }
  // prefix + j + suffix, by appending (GCC 12 warns falsely about literal + string).
  static std::string fieldName(std::string prefix, int j, const char *suffix = "") {
    prefix += std::to_string(j);
    prefix += suffix;
    return prefix;
  }

  // Element `off` past a symbolic operand (a load naming buffer and first element).
  double &operand(const NpuOpNode *op, const char *name, int64_t off) {
    const auto *l = op->field(name).as<LoadNode>();
    NPUC_ASSERT(l, std::string("interp: operand field ") + name);
    return at(l->buffer, l->index + IntImmNode::make(off));
  }

  void npu(const NpuOpNode *op) {
    int64_t n[3];
    for (int j = 0; j < 3; ++j)
      n[j] = field(op, fieldName("n", j).c_str(), 1);
    auto off = [&](const std::string &p, const int64_t *i, const int64_t *shift) {
      int64_t o = 0;
      for (int j = 0; j < 3; ++j)
        o += (i[j] - (shift ? shift[j] : 0)) * field(op, fieldName(p + "_s", j).c_str(), 0);
      return o;
    };
    if (op->field("m").defined()) { // matmul: C[m][n] (+)= A[m][k] * B[k][n], dense rows
      int64_t M = field(op, "m", 1), K = field(op, "k", 1), N = field(op, "n", 1);
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          double acc = field(op, "accumulate", 0) ? operand(op, "c", i * N + j) : 0;
          for (int64_t k = 0; k < K; ++k)
            acc += operand(op, "a", i * K + k) * operand(op, "b", k * N + j);
          operand(op, "c", i * N + j) = acc;
        }
      return;
    }
    int64_t i[3];
    if (op->field("elem_bytes").defined()) { // DMA box with padding
      int64_t lo[3], hi[3];
      for (int j = 0; j < 3; ++j) {
        lo[j] = field(op, fieldName("pad", j, "_lo").c_str(), 0);
        hi[j] = field(op, fieldName("pad", j, "_hi").c_str(), 0);
      }
      const auto *dl = op->field("dst").as<LoadNode>();
      auto bits = static_cast<uint32_t>(field(op, "pad_value", 0));
      double pad = dl->buffer->dtype == DataType::Float(16)
                       ? halfToFloat(static_cast<uint16_t>(bits))
                   : dl->buffer->dtype == DataType::Float(32) ? std::bit_cast<float>(bits)
                                                              : static_cast<double>(bits);
      for (i[2] = 0; i[2] < n[2]; ++i[2])
        for (i[1] = 0; i[1] < n[1]; ++i[1])
          for (i[0] = 0; i[0] < n[0]; ++i[0]) {
            bool padded = false;
            for (int j = 0; j < 3; ++j)
              padded = padded || i[j] < lo[j] || i[j] >= n[j] - hi[j];
            double v = padded ? pad : operand(op, "src", off("src", i, lo));
            operand(op, "dst", off("dst", i, nullptr)) = v;
          }
      return;
    }
    using isa::VecOp;
    const VecOp vop = vectorOps.at(static_cast<size_t>(field(op, "op", -1)));
    double imm0 = op->field("imm0").defined() ? eval(op->field("imm0")) : 0;
    double imm1 = op->field("imm1").defined() ? eval(op->field("imm1")) : 0;
    for (i[2] = 0; i[2] < n[2]; ++i[2])
      for (i[1] = 0; i[1] < n[1]; ++i[1])
        for (i[0] = 0; i[0] < n[0]; ++i[0]) {
          double a = operand(op, "src1", off("src1", i, nullptr));
          double b = operand(op, "src2", off("src2", i, nullptr));
          double r = vop == VecOp::Copy     ? a
                     : vop == VecOp::Add    ? a + b
                     : vop == VecOp::Sub    ? a - b
                     : vop == VecOp::Mul    ? a * b
                     : vop == VecOp::Div    ? a / b
                     : vop == VecOp::Max    ? std::max(a, b)
                     : vop == VecOp::Min    ? std::min(a, b)
                     : vop == VecOp::Relu   ? std::max(a, 0.0)
                     : vop == VecOp::Clip   ? std::min(std::max(a, imm0), imm1)
                     : vop == VecOp::MulAdd ? a * imm0 + imm1
                     : vop == VecOp::Exp    ? std::exp(a)
                                            : std::nan("");
          NPUC_ASSERT(!std::isnan(r) || std::isnan(a) || std::isnan(b),
                      std::string("interp: vector op ") + isa::vecOpName(vop));
          operand(op, "dst", off("dst", i, nullptr)) = r;
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
    // Float operands may be non-finite or beyond int64, whose conversion is undefined; the
    // integer views of those are not used by the float cases below.
    auto toInt = [](double x) {
      return std::isfinite(x) && std::fabs(x) < 0x1p63 ? static_cast<int64_t>(x) : int64_t(0);
    };
    auto ia = toInt(a), ib = toInt(b);
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
