// TensorUnitSpace.cpp - the schedule space of the tensor-unit conv/matmul kernel.
#include "npu/kernels/KernelSpaces.h"

namespace npuc::npu {

std::unique_ptr<KernelSpace> makeTensorUnitSpace(const GroupPlan &, const graph::Graph &,
                                                 const SpaceContext &) {
  return nullptr;
}

} // namespace npuc::npu
