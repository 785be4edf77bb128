// DramTraffic.h - DRAM traffic by what the bytes are: the report's accounting of compulsory and
// non-compulsory DRAM traffic (docs/REPORT.md, "DRAM accounting") needs to know which DMA moved
// constants (weights), the program's inputs, its outputs, or intermediates.
//
// Contract: the caller describes the DRAM image as regions [lo, hi) of a class (the constants,
// each input, each output); any address outside them is an intermediate. Each DMA's DRAM bytes
// are attributed by the address of its DRAM operand: a kernel's box never spans two tensors, so
// the operand's first address names the tensor it reads or writes. A compiler reuses a dead
// tensor's DRAM bytes for later ones, so a region holds its class for part of the run only:
// from instruction `fromInstr` on (an output's bytes before its producer runs belong to others),
// and, where `endsAtFirstWrite` (an input, which the program only reads), until the first DMA
// that writes into it (the simulator processes an instruction after every one it depends on,
// so every read of the input comes first). Counting needs decoded fields only, so timing-only
// runs count the same.
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
  int64_t fromInstr = 0;         // program index from which the region holds its class
  bool endsAtFirstWrite = false; // the first DMA writing into it ends it
};

/// Bytes read from and written to DRAM, per class (index: DramClass).
struct DramTraffic {
  std::array<int64_t, kDramClasses> read{}, written{};
  int64_t readOf(DramClass c) const { return read[size_t(c)]; }
  int64_t writtenOf(DramClass c) const { return written[size_t(c)]; }
};

/// The regions of one run (a run's copy tracks which have ended). Where live regions overlap,
/// the first listed classifies the address.
class DramRegions {
public:
  DramRegions() = default;
  explicit DramRegions(std::vector<DramRegion> regions);
  bool empty() const { return regions_.empty(); }
  /// The class of DRAM byte `addr` as instruction `instr` reads (`write` false) or writes it.
  DramClass access(int64_t addr, int64_t instr, bool write);

private:
  std::vector<DramRegion> regions_;
  std::vector<bool> ended_;
};

} // namespace npuc::sim
