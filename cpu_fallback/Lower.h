// Lower.h - fused graph groups to CPU kernels: the one entry point the JIT runtime and the
// ahead-of-time compiler share.
//
// lowerGroupForCpu() starts from tir::lowerGroup (the compute definition every backend shares)
// and applies the CPU schedules (Schedule.h) where one matches the group's anchor, so a
// convolution runs as a blocked, vectorisable, parallel loop nest; groups without a schedule keep
// the plain loop nest. The kernel's symbol is `npuc_cpu_group_<id>` (group names are not unique).
#pragma once

#include "cpu_fallback/Schedule.h"
#include "graph/Graph.h"
#include "tir/IR.h"

#include <string>
#include <vector>

namespace npuc::cpu {

struct CpuKernel {
  int group = -1;
  tir::PrimFunc func;                 // named symbol()
  std::vector<graph::ValueId> params; // graph value bound to each parameter, in order
  size_t numOutputs = 0;              // the last numOutputs params are the group's outputs
  std::vector<PackedParam> packed;    // constant params taken in a repacked layout
};

std::string kernelSymbol(int groupId);

/// Lowers one group with the CPU schedules applied. Bad input is an npuc::Error naming the node.
/// With `prepack`, constant weights may be taken pre-packed (CpuKernel::packed says how to
/// produce them: ahead-of-time compilation packs once into the parameter file); without it
/// every parameter has its graph value's layout.
CpuKernel lowerGroupForCpu(const graph::Graph &g, const graph::FusedGroup &grp,
                           bool prepack = false);

} // namespace npuc::cpu
