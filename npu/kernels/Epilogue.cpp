// Epilogue.cpp - the fused elementwise tail of a kernel, as vector instructions over one tile,
// and the staging of its per-channel/scalar operands (constants and broadcast tensors) in L1.
#include "npu/kernels/Kernels.h"

#include "support/Error.h"

#include <cstring>
#include <fmt/format.h>
#include <map>

namespace npuc::npu {

using namespace tir;

GroupPlan withBiasEpilogue(const GroupPlan &plan) {
  GroupPlan p = plan;
  if (!plan.conv.bias.empty()) {
    EpilogueOp bias;
    bias.op = isa::VecOp::Add;
    bias.operand = EpilogueOp::Operand::Const;
    bias.constant = plan.conv.bias;
    p.epilogue.insert(p.epilogue.begin(), bias);
  }
  return p;
}

GroupPlan withQuantEpilogue(const GroupPlan &plan, const std::vector<float> *dequant) {
  // The epilogue runs on values y whose real value is D * y for one scalar D > 0 that the ops
  // track, so that scalings fold into operands instead of costing vector ops: a residual with
  // scale s_r is added as its raw int8 values once D == s_r, a constant c is applied as c / D,
  // ReLU and clip bounds commute with D. The first op turns the int32 accumulator into fp32
  // with a per-channel `mul` by s_in * s_w[c] / D0 (D0: the first residual's scale when only
  // scale-commuting ops precede it, else 1); the last writes int8 with `muladd` imm0 = D / s_out.
  // Without `dequant` (vector kernels) the ops start on the input's int8 values: D = s_in.
  const QuantParams &q = plan.quant;
  auto commutes = [](const EpilogueOp &e) {
    using isa::VecOp;
    if (e.operand == EpilogueOp::Operand::None)
      return e.op == VecOp::Relu || e.op == VecOp::Clip;
    if (e.operand == EpilogueOp::Operand::Const) // c - D y = D (c/D - y), and so on
      return e.op == VecOp::Add || e.op == VecOp::Sub || e.op == VecOp::Mul || e.op == VecOp::Max ||
             e.op == VecOp::Min;
    return false;
  };
  float D = dequant ? 1.0f : q.in;
  for (const EpilogueOp &e : plan.epilogue) {
    if (!dequant)
      break;
    if (e.operand == EpilogueOp::Operand::Tensor) {
      if (e.op != isa::VecOp::Mul)
        D = q.of(e.tensor);
      break;
    }
    if (!commutes(e))
      break;
  }
  GroupPlan p = plan;
  p.epilogue.clear();
  if (dequant) {
    EpilogueOp dq;
    dq.op = isa::VecOp::Mul;
    dq.operand = EpilogueOp::Operand::Const;
    for (float s : *dequant)
      dq.constant.push_back(s / D);
    p.epilogue.push_back(dq);
  }
  auto rescale = [&](float to) { // y -> y * D / to, so that the real value is `to` * y
    if (D == to)
      return;
    EpilogueOp m;
    m.op = isa::VecOp::MulAdd;
    m.imm0 = D / to;
    p.epilogue.push_back(m);
    D = to;
  };
  for (EpilogueOp e : plan.epilogue) {
    if (e.operand == EpilogueOp::Operand::Tensor) {
      NPUC_ASSERT(quantisedResidualOp(e.op),
                  std::string("int8Reject rejects other residual ops: ") + isa::vecOpName(e.op));
      if (e.op == isa::VecOp::Mul) {
        p.epilogue.push_back(e);
        D *= q.of(e.tensor); // (D y) (s_r r) = (D s_r) (y r)
      } else {
        rescale(q.of(e.tensor));
        p.epilogue.push_back(e);
      }
      continue;
    }
    NPUC_ASSERT(e.operand != EpilogueOp::Operand::Broadcast,
                "analyzeGroup rejects broadcast operands on int8 targets");
    if (!commutes(e))
      rescale(1.0f);
    if (e.operand == EpilogueOp::Operand::Const && e.op != isa::VecOp::Mul)
      for (float &c : e.constant)
        c /= D;
    if (e.op == isa::VecOp::Clip) {
      e.imm0 /= D;
      e.imm1 /= D;
    }
    p.epilogue.push_back(e);
  }
  EpilogueOp rq;
  rq.op = isa::VecOp::MulAdd;
  rq.imm0 = D / q.out;
  p.epilogue.push_back(rq);
  return p;
}

int residualOperands(const GroupPlan &p) {
  int n = 0;
  for (const EpilogueOp &e : p.epilogue)
    n += e.operand == EpilogueOp::Operand::Tensor;
  return n;
}

int tensorOperands(const GroupPlan &p) {
  int n = residualOperands(p);
  for (const EpilogueOp &e : p.epilogue)
    n += e.save;
  return n;
}

void savedOperands(const GroupPlan &p, const std::vector<OnChip> &rbufs, const Expr &it,
                   const Expr &tcc, isa::ElemType act, std::vector<View> &ops) {
  // The saves' buffers follow the residuals', in epilogue order.
  size_t r = static_cast<size_t>(residualOperands(p));
  // Slots are numbered in the order the analysis met their readers, which need not be the order
  // of the saves (a later value read again before an earlier one).
  std::map<int, View> slots;
  for (size_t i = 0; i < p.epilogue.size(); ++i) {
    const EpilogueOp &e = p.epilogue[i];
    if (e.operand != EpilogueOp::Operand::Saved)
      continue;
    if (e.save) {
      const OnChip &buf = rbufs.at(r++);
      View v{buf.level, buf.at(it), act};
      v.s1 = tcc;
      NPUC_ASSERT(slots.emplace(e.slot, v).second, "one save per slot");
    }
    auto slot = slots.find(e.slot);
    NPUC_ASSERT(slot != slots.end(), "a saved value is read after its save");
    ops[i] = slot->second;
  }
}

void stageTensorOperands(const GroupPlan &p, const Builder &b, const DramCtx &d,
                         const std::vector<OnChip> &rbufs, const Expr &it, const Expr &elem0,
                         int64_t C, const Expr &tcc, const Expr &pixels, std::vector<View> &ops,
                         std::vector<Stmt> &out) {
  const Hw &hw = b.hw();
  const isa::ElemType act = hw.act;
  const int64_t eb = hw.actBytes();
  size_t r = 0;
  for (size_t i = 0; i < p.epilogue.size(); ++i) {
    const EpilogueOp &e = p.epilogue[i];
    if (e.operand != EpilogueOp::Operand::Tensor)
      continue;
    View src{d.level(e.tensor, hw), imm(d.addrOf(e.tensor)) + elem0 * eb, act};
    src.s1 = imm(C);
    View dst{hw.l1, rbufs[r++].at(it), act};
    dst.s1 = tcc;
    if (inPlace(hw, src)) { // resident in L1: the epilogue reads it there
      ops[i] = src;
      continue;
    }
    out.push_back(b.load(src, dst, Dims{tcc, pixels, imm(1)}));
    ops[i] = dst;
  }
  savedOperands(p, rbufs, it, tcc, act, ops);
}

void appendEpilogueAndStore(const GroupPlan &p, const Builder &b, const View &src, const View &acc,
                            const View &out, const View &ydst, const std::vector<View> &ops,
                            const Dims &d, std::vector<Stmt> &body) {
  if (inPlace(b.hw(), ydst)) { // resident in L1: the epilogue writes the tile there
    body.push_back(applyEpilogue(p, b, src, acc, ydst, ops, d));
    return;
  }
  body.push_back(applyEpilogue(p, b, src, acc, out, ops, d));
  body.push_back(b.store(out, ydst, d));
}

int64_t broadcastOperandBytes(const GroupPlan &p, int64_t elemBytes) {
  int64_t bytes = 0;
  for (const EpilogueOp &e : p.epilogue)
    if (e.operand == EpilogueOp::Operand::Broadcast)
      bytes += e.count * elemBytes;
  return bytes;
}

int64_t epilogueOpsPerElement(const GroupPlan &p) {
  return p.epilogue.empty() ? 1 : static_cast<int64_t>(p.epilogue.size());
}

namespace {

// A broadcast tensor operand (1 or C values in DRAM in the operand dtype, written by an earlier
// group) is loaded once into L1 before the tile loop, in rows within the DMA's extent limits, so
// that every tile reads it with a channel stride of 1 (or 0 for a scalar) and a pixel stride of 0.
bool stageBroadcast(const EpilogueOp &e, size_t i, Builder &b, const DramCtx &d, View &view,
                    std::vector<Stmt> &prologue) {
  const Hw &hw = b.hw();
  const int64_t eb = hw.actBytes();
  OnChip buf{fmt::format("bcast{}", i), hw.l1, e.count * eb, 1};
  if (!b.reserve(buf))
    return false;
  const int64_t src = d.addrOf(e.tensor), row = std::min<int64_t>(e.count, hw.maxDim());
  for (int64_t at = 0; at < e.count; at += row) {
    int64_t len = std::min(row, e.count - at);
    prologue.push_back(b.load(View{d.level(e.tensor, hw), imm(src + at * eb), hw.act},
                              View{hw.l1, imm(buf.base + at * eb), hw.act},
                              Dims{imm(len), imm(1), imm(1)}));
  }
  view = View{hw.l1, imm(buf.base), hw.act};
  view.s0 = imm(e.count == 1 ? 0 : 1);
  return true;
}

} // namespace

std::vector<View> operandsAtChannel(const GroupPlan &p, const std::vector<View> &consts,
                                    const Expr &c0) {
  std::vector<View> ops(p.epilogue.size());
  for (size_t i = 0; i < p.epilogue.size(); ++i) {
    const EpilogueOp &e = p.epilogue[i];
    if (e.operand != EpilogueOp::Operand::Const && e.operand != EpilogueOp::Operand::Broadcast)
      continue;
    ops[i] = consts[i];
    int64_t n =
        e.operand == EpilogueOp::Operand::Const ? static_cast<int64_t>(e.constant.size()) : e.count;
    if (n > 1)
      ops[i].addr = consts[i].addr + c0 * isa::elemBytes(consts[i].dtype);
  }
  return ops;
}

std::optional<Reject> stageEpilogueConstants(const GroupPlan &p, Builder &b, const DramCtx &d,
                                             std::vector<View> &consts,
                                             std::vector<Stmt> &prologue) {
  const Reject kNoRoom =
      kernelReject(RejectKind::Capacity, "no room in L1 for the epilogue constants");
  const Hw &hw = b.hw();
  consts.assign(p.epilogue.size(), View{});
  for (size_t i = 0; i < p.epilogue.size(); ++i) {
    const EpilogueOp &e = p.epilogue[i];
    if (e.operand == EpilogueOp::Operand::Broadcast) {
      if (!stageBroadcast(e, i, b, d, consts[i], prologue))
        return kNoRoom;
      continue;
    }
    if (e.operand != EpilogueOp::Operand::Const)
      continue;
    // fp32 constants keep the CPU's precision for bias-like operands. A DMA copies raw bytes, so
    // they move as fp16-sized elements in rows that respect the field limits (tail zero-padded).
    int64_t halves = static_cast<int64_t>(e.constant.size()) * 2;
    int64_t row = std::min<int64_t>(halves, hw.maxDim());
    int64_t rows = ceilDiv(halves, row);
    std::vector<uint8_t> bytes(static_cast<size_t>(rows * row * 2), 0);
    std::memcpy(bytes.data(), e.constant.data(), e.constant.size() * 4);
    int64_t dramAddr = d.addConst(std::move(bytes));
    OnChip buf{fmt::format("const{}", i), hw.l1, rows * row * 2, 1};
    if (!b.reserve(buf))
      return kNoRoom;
    View src{hw.dram, imm(dramAddr)}, dst{hw.l1, imm(buf.base)};
    src.s1 = imm(row);
    dst.s1 = imm(row);
    Dims dims{imm(row), imm(rows), imm(1)};
    prologue.push_back(b.load(src, dst, dims));
    View v{hw.l1, imm(buf.base), isa::ElemType::F32};
    v.s0 = imm(e.constant.size() == 1 ? 0 : 1);
    v.s1 = imm(0);
    v.s2 = imm(0);
    consts[i] = v;
  }
  return std::nullopt;
}

Stmt applyEpilogue(const GroupPlan &p, const Builder &b, const View &src, const View &acc,
                   const View &out, const std::vector<View> &ops, const Dims &d) {
  std::vector<Stmt> s;
  if (p.epilogue.empty()) {
    s.push_back(b.vector(isa::VecOp::Copy, out, src, View{}, d));
    return seq(s);
  }
  View cur = src;
  for (size_t i = 0; i < p.epilogue.size(); ++i) {
    const EpilogueOp &e = p.epilogue[i];
    NPUC_ASSERT(!e.save || i + 1 < p.epilogue.size(), "a saved value has a later reader");
    if (e.save) { // into the output's dtype, as the unfused graph would have stored it
      s.push_back(b.vector(isa::VecOp::Copy, ops[i], cur, View{}, d));
      continue;
    }
    const View &dst = i + 1 == p.epilogue.size() ? out : acc;
    if (e.operand == EpilogueOp::Operand::None) {
      s.push_back(b.vector(e.op, dst, cur, View{}, d, e.imm0, e.imm1));
    } else if (e.operandFirst) {
      s.push_back(b.vector(e.op, dst, ops[i], cur, d, e.imm0, e.imm1));
    } else {
      s.push_back(b.vector(e.op, dst, cur, ops[i], d, e.imm0, e.imm1));
    }
    cur = acc;
  }
  return seq(s);
}

} // namespace npuc::npu
