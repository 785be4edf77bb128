// PlanEpilogue.cpp - the elementwise chain fused after a group's anchor: each node becomes an
// EpilogueOp the kernels apply to the tile on the vector unit (unary ops, Clip, and binary ops
// with a per-channel or scalar constant, a residual of the output's shape, or a per-channel or
// scalar tensor such as an SE gate).
#include "npu/kernels/GroupAnalysis.h"

#include <algorithm>
#include <limits>
#include <optional>

namespace npuc::npu::analysis {

using graph::Graph;
using graph::Node;
using graph::Value;
using graph::ValueId;

namespace {

// The vector op of a binary elementwise graph op, or none when the NPU has none.
std::optional<isa::VecOp> binaryVectorOp(graph::OpKind k) {
  switch (k) {
  case graph::OpKind::Add:
    return isa::VecOp::Add;
  case graph::OpKind::Sub:
    return isa::VecOp::Sub;
  case graph::OpKind::Mul:
    return isa::VecOp::Mul;
  case graph::OpKind::Div:
    return isa::VecOp::Div;
  case graph::OpKind::Max:
    return isa::VecOp::Max;
  case graph::OpKind::Min:
    return isa::VecOp::Min;
  default:
    return std::nullopt;
  }
}

} // namespace

// One elementwise node applied to the chain value `cur`; appends to the epilogue.
bool GroupAnalysis::epilogue(const Node &n, ValueId cur) {
  EpilogueOp e;
  const Shape &out = val(n.outputs[0]).shape;
  if (std::find(n.inputs.begin(), n.inputs.end(), cur) == n.inputs.end())
    return reject(n.name + " (" + graph::opName(n.kind) + "): does not read the chain value " +
                  val(cur).name);
  auto unary = [&](isa::VecOp op) {
    if (!needOp(op, n))
      return false;
    e.op = op;
    p.epilogue.push_back(e);
    return true;
  };
  if (n.kind == graph::OpKind::Relu)
    return unary(isa::VecOp::Relu);
  if (n.kind == graph::OpKind::Sigmoid)
    return unary(isa::VecOp::Sigmoid);
  if (n.kind == graph::OpKind::Tanh)
    return unary(isa::VecOp::Tanh);
  if (n.kind == graph::OpKind::Exp)
    return unary(isa::VecOp::Exp);
  if (n.kind == graph::OpKind::Erf)
    return unary(isa::VecOp::Erf);
  if (n.kind == graph::OpKind::Sqrt)
    return unary(isa::VecOp::Sqrt);
  if (n.kind == graph::OpKind::Clip) {
    float lo = -std::numeric_limits<float>::infinity(), hi = -lo;
    if (n.hasAttr("min"))
      lo = static_cast<float>(n.attrFloat("min", lo));
    if (n.hasAttr("max"))
      hi = static_cast<float>(n.attrFloat("max", hi));
    for (size_t i = 1; i < n.inputs.size() && i < 3; ++i) {
      if (n.inputs[i] == graph::kNoValue)
        continue;
      if (!constant(n.inputs[i]))
        return reject(n.name + " (Clip): bounds must be constant");
      (i == 1 ? lo : hi) = (*val(n.inputs[i]).f32)[0];
    }
    if (!needOp(isa::VecOp::Clip, n))
      return false;
    e.op = isa::VecOp::Clip;
    e.imm0 = lo;
    e.imm1 = hi;
    p.epilogue.push_back(e);
    return true;
  }
  const std::optional<isa::VecOp> vop = binaryVectorOp(n.kind);
  if (!vop || n.inputs.size() != 2)
    return reject(n.name + " (" + graph::opName(n.kind) + "): not an elementwise op the NPU runs");
  bool curFirst = n.inputs[0] == cur;
  ValueId other = curFirst ? n.inputs[1] : n.inputs[0];
  e.operandFirst = !curFirst;
  e.op = *vop;
  if (chainAt.count(other)) { // x * f(x), or x * x: x saved when the chain reached it
    if (val(cur).shape != out || val(other).shape != out)
      return reject(n.name + " (" + graph::opName(n.kind) + "): a chain value read again is " +
                    "broadcast to the output's shape");
    e.operand = EpilogueOp::Operand::Saved;
    e.slot = saveSlot(other);
    return needOp(e.op, n) && (p.epilogue.push_back(e), true);
  }
  if (constant(other)) {
    e.operand = EpilogueOp::Operand::Const;
    e.constant = channelConstant(val(other), out);
    if (e.constant.empty() && !batchResidual(other, out, e))
      return reject(n.name + " (" + graph::opName(n.kind) + "): constant operand " +
                    val(other).name + " broadcasts beyond a per-channel vector");
    if (e.operand == EpilogueOp::Operand::Const && e.op == isa::VecOp::Div &&
        !e.operandFirst) { // x / c == x * (1/c), exactly as the CPU would round
      e.op = isa::VecOp::Mul;
      for (float &v : e.constant)
        v = 1.0f / v;
    }
  } else {
    // The chain value is the streamed tile, so it must have the output's shape; the other
    // operand is a residual of the same shape, a per-channel/scalar tensor (an SE gate) or, for
    // a batched product, the output's matrix broadcast over its batch dims (a mask).
    if (val(cur).shape != out)
      return reject(n.name + " (" + graph::opName(n.kind) + "): the chain value " + val(cur).name +
                    " is broadcast to the output's shape");
    e.tensor = other;
    if (val(other).shape == out) {
      e.operand = EpilogueOp::Operand::Tensor;
    } else if (int64_t count = channelBroadcast(val(other).shape, out); count > 0) {
      e.operand = EpilogueOp::Operand::Broadcast;
      e.count = count;
    } else if (!batchResidual(other, out, e)) {
      return reject(n.name + " (" + graph::opName(n.kind) + "): tensor operand " + val(other).name +
                    " broadcasts beyond a per-channel vector");
    }
  }
  return needOp(e.op, n) && (p.epilogue.push_back(e), true);
}

int GroupAnalysis::saveSlot(ValueId v) {
  auto known = savedSlot.find(v);
  if (known != savedSlot.end())
    return known->second;
  const int slot = static_cast<int>(savedSlot.size());
  savedSlot[v] = slot;
  const size_t at = chainAt.at(v);
  EpilogueOp save;
  save.op = isa::VecOp::Copy;
  save.operand = EpilogueOp::Operand::Saved;
  save.slot = slot;
  save.save = true;
  p.epilogue.insert(p.epilogue.begin() + static_cast<std::ptrdiff_t>(at), save);
  for (auto &[value, pos] : chainAt)
    if (pos > at || (pos == at && value != v))
      ++pos;
  return slot;
}

} // namespace npuc::npu::analysis
