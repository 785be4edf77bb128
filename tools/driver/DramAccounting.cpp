// DramAccounting.cpp - compulsory DRAM bytes, non-compulsory bytes by cause, and the whole-graph
// bound (contract in DramAccounting.h).
#include "tools/driver/DramAccounting.h"

#include "support/IntMath.h"

#include <algorithm>
#include <cmath>

namespace npuc::driver {

namespace {

int64_t beyond(int64_t moved, int64_t size) {
  return std::max<int64_t>(0, moved - size);
}

} // namespace

DramAccounting dramAccounting(const isa::Target &t, const DramFootprint &f,
                              const sim::SimStats &s) {
  using sim::DramClass;
  const sim::DramTraffic &d = s.dramByClass;
  DramAccounting a;
  a.compulsory = f.constants + f.inputs + f.outputs;
  a.moved = s.dramBytesRead + s.dramBytesWritten;
  a.weightsReread = beyond(d.readOf(DramClass::Constant), f.constants);
  a.inputsReread = beyond(d.readOf(DramClass::Input), f.inputs);
  const int64_t interW = d.writtenOf(DramClass::Intermediate);
  const int64_t interR = d.readOf(DramClass::Intermediate);
  a.activationsSpilled = interW + std::min(interR, interW);
  a.activationsReread = beyond(interR, interW);
  a.outputsExtra = beyond(d.writtenOf(DramClass::Output), f.outputs) + d.readOf(DramClass::Output);
  a.macBound =
      ceilDiv(std::max<int64_t>(0, s.macs - f.recomputedMacs), t.tensor.peakMacsPerCycle());
  a.dramBound = static_cast<int64_t>(std::ceil(double(a.compulsory) / t.dram.bytesPerCycle));
  const int64_t elements =
      std::max<int64_t>(0, s.totalVectorElements() - f.recomputedVectorElements);
  a.vectorBound = ceilDiv(elements, t.vector.lanes);
  return a;
}

nlohmann::json dramAccountingToJson(const DramAccounting &a, int64_t totalCycles) {
  const int64_t bound = a.bound();
  return {
      {"compulsory_bytes", a.compulsory},
      {"moved_bytes", a.moved},
      {"moved_over_compulsory", a.compulsory > 0 ? double(a.moved) / double(a.compulsory) : 0.0},
      {"non_compulsory_bytes",
       {{"weights_reread", a.weightsReread},
        {"inputs_reread", a.inputsReread},
        {"activations_spilled", a.activationsSpilled},
        {"activations_reread", a.activationsReread},
        {"outputs_extra", a.outputsExtra}}},
      {"whole_graph_bound_cycles", bound},
      {"bound_parts_cycles",
       {{"mac", a.macBound}, {"dram", a.dramBound}, {"vector", a.vectorBound}}},
      {"cycles_over_bound", bound > 0 ? double(totalCycles) / double(bound) : 0.0}};
}

} // namespace npuc::driver
