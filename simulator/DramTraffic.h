// DramTraffic.h - DRAM traffic by what the bytes are: the report's accounting of compulsory and
// non-compulsory DRAM traffic (docs/REPORT.md, "DRAM accounting") needs to know which DMA moved
// constants (weights), the program's inputs, its outputs, or intermediates.
//
// Contract: the caller describes the DRAM image as regions [lo, hi) of a class (the constants,
// each input, each output); any address outside them is an intermediate. Each DMA's DRAM bytes
// are attributed by the address of its DRAM operand: a kernel's box never spans two tensors, so
// the operand's first address names the tensor it reads or writes. Counting needs decoded fields
// only, so timing-only runs count the same.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace npuc::sim {

enum class DramClass { Constant, Input, Output, Intermediate };
inline constexpr size_t kDramClasses = 4;
const char *dramClassName(DramClass c); // "constant", "input", "output", "intermediate"

struct DramRegion {
  int64_t lo = 0, hi = 0; // bytes [lo, hi)
  DramClass cls = DramClass::Intermediate;
};

/// Bytes read from and written to DRAM, per class (index: DramClass).
struct DramTraffic {
  std::array<int64_t, kDramClasses> read{}, written{};
  int64_t readOf(DramClass c) const { return read[size_t(c)]; }
  int64_t writtenOf(DramClass c) const { return written[size_t(c)]; }
};

/// Regions sorted by address. Where regions overlap (a value that is both an input and an
/// output of the program), the one starting last at or below an address classifies it.
class DramRegions {
public:
  DramRegions() = default;
  explicit DramRegions(std::vector<DramRegion> regions);
  bool empty() const { return regions_.empty(); }
  DramClass classOf(int64_t addr) const;

private:
  std::vector<DramRegion> regions_;
};

} // namespace npuc::sim
