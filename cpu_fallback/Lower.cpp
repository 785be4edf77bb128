// Lower.cpp - group -> CPU kernel (contract in Lower.h).
#include "cpu_fallback/Lower.h"

#include "lowering/LowerOps.h"
#include "support/Error.h"

#include <fmt/format.h>

namespace npuc::cpu {

std::string kernelSymbol(int groupId) {
  return fmt::format("npuc_cpu_group_{}", groupId);
}

CpuKernel lowerGroupForCpu(const graph::Graph &g, const graph::FusedGroup &grp, bool prepack) {
  CpuKernel k;
  k.group = grp.id;
  k.func = tir::lowerGroup(g, grp, &k.params);
  k.func.name = kernelSymbol(grp.id);
  k.numOutputs = grp.outputs.size();
  NPUC_ASSERT(k.params.size() == k.func.params.size(), "lowerGroup binds every parameter");
  NPUC_ASSERT(k.params.size() >= k.numOutputs, "a group's outputs are parameters");
  for (size_t i = 0; i < k.params.size(); ++i)
    NPUC_ASSERT(k.func.params[i]->numElements() == numElements(g.value(k.params[i]).shape),
                "lowerGroup's parameter buffers have the values' sizes");
  scheduleForCpu(g, grp, k.params, k.func, prepack ? &k.packed : nullptr);
  return k;
}

} // namespace npuc::cpu
