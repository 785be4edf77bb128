// QuantCoverage.cpp - which analysed groups the int8 kernels run (Plan.h int8Reject): a question
// about kernel plans, so it lives with the kernels, above the quantisation scheme (npu/hw/Quant.h).
#include "npu/kernels/Plan.h"

#include <string>

namespace npuc::npu {

bool quantisedResidualOp(isa::VecOp op) {
  // The ops withQuantEpilogue (npu/kernels/Epilogue.cpp) can apply to a residual of its own scale:
  // it rescales the chain value to that scale first, or for mul folds the scale into the factor.
  switch (op) {
  case isa::VecOp::Add:
  case isa::VecOp::Sub:
  case isa::VecOp::Max:
  case isa::VecOp::Min:
  case isa::VecOp::Mul:
    return true;
  default:
    return false;
  }
}

// int8 targets: which analysed groups the quantised kernels run. The tensor-unit kernel takes
// Conv/Gemm/MatMul, the vector kernels window pools, global average pools and elementwise chains,
// each with an epilogue of unary ops, per-channel constants and residual tensors (each
// dequantised with its own scale); a view aliases its input's int8 bytes, and a Concat copies
// them (calibration gives its inputs one scale). Everything else (broadcast tensor operands,
// the loop-nest kernel) is rejected by name, so that
// it runs on the CPU in fp32 (the host dequantises and quantises at the segment boundary) instead
// of computing on int8 bytes as if they were fp16.
std::string int8Reject(const graph::Graph &g, const GroupPlan &p, const graph::FusedGroup &grp) {
  const graph::Node &a = g.node(grp.anchor);
  if (p.kind == KernelKind::View || p.kind == KernelKind::Concat)
    return "";
  if (p.kind != KernelKind::Matmul && p.kind != KernelKind::Pool &&
      p.kind != KernelKind::GlobalAvgPool && p.kind != KernelKind::Eltwise)
    return "int8 target: " + a.name + " (" + graph::opName(a.kind) +
           ") is not quantised on the NPU yet";
  for (const EpilogueOp &e : p.epilogue) {
    if (e.operand == EpilogueOp::Operand::Broadcast)
      return "int8 target: " + grp.name + ": a broadcast tensor operand (" +
             g.value(e.tensor).name + ") is not quantised on the NPU yet";
    if (e.operand == EpilogueOp::Operand::Saved)
      return "int8 target: " + grp.name + ": an epilogue that reads a chain value again (x * " +
             "f(x)) is not quantised on the NPU yet";
    if (e.operand == EpilogueOp::Operand::Tensor && !quantisedResidualOp(e.op))
      return "int8 target: " + grp.name + ": a residual '" + isa::vecOpName(e.op) +
             "' is not quantised on the NPU yet";
  }
  return "";
}


} // namespace npuc::npu
