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
  std::stable_sort(regions_.begin(), regions_.end(),
                   [](const DramRegion &a, const DramRegion &b) { return a.lo < b.lo; });
}

DramClass DramRegions::classOf(int64_t addr) const {
  auto it = std::upper_bound(regions_.begin(), regions_.end(), addr,
                             [](int64_t a, const DramRegion &r) { return a < r.lo; });
  if (it == regions_.begin())
    return DramClass::Intermediate;
  --it;
  return addr < it->hi ? it->cls : DramClass::Intermediate;
}

} // namespace npuc::sim
