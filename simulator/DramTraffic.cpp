// DramTraffic.cpp - classifying DRAM addresses (contract in DramTraffic.h).
#include "simulator/DramTraffic.h"

#include <algorithm>

namespace npuc::sim {

const char *dramClassName(DramClass c) {
  switch (c) {
  case DramClass::Constant:
    return "constant";
  case DramClass::Input:
    return "input";
  case DramClass::Output:
    return "output";
  case DramClass::Intermediate:
    break;
  }
  return "intermediate";
}

DramRegions::DramRegions(std::vector<DramRegion> regions) : regions_(std::move(regions)) {
  regions_.erase(std::remove_if(regions_.begin(), regions_.end(),
                                [](const DramRegion &r) { return r.hi <= r.lo; }),
                 regions_.end());
  ended_.assign(regions_.size(), false);
}

DramClass DramRegions::access(int64_t addr, int64_t instr, bool write) {
  // A handful of regions per program (constants, inputs, outputs): a scan is cheap.
  for (size_t i = 0; i < regions_.size(); ++i) {
    const DramRegion &r = regions_[i];
    if (ended_[i] || addr < r.lo || addr >= r.hi || instr < r.fromInstr)
      continue;
    if (write && r.endsAtFirstWrite) {
      ended_[i] = true; // the bytes hold something else from now on
      continue;
    }
    return r.cls;
  }
  return DramClass::Intermediate;
}

} // namespace npuc::sim
