// Costs.h - what a target's actions cost in energy and its components in area, from the tables
// the target description declares (isa::EnergyTable, isa::AreaTable; docs/ENERGY.md).
//
// The tables hold technology figures (pJ per MAC, per SRAM byte at a reference bank size, mm^2
// per KiB); this file turns them into per-level and per-op figures for one design point, so
// that a sweep that changes a level's size or banks changes its energy per byte and its area
// without anyone editing a figure. The simulator counts the actions; sim::energyOf (in
// simulator/Energy.h) multiplies them by these.
#pragma once

#include "isa/Target.h"

#include <vector>

namespace npuc::isa {

/// Energy of one element of a vector op, pJ: the ALU, multiplier or special-function cost the
/// op's arithmetic takes (copy moves data only: its bytes are charged to the memory levels).
double vecOpPj(const EnergyTable &e, VecOp op);
/// Whether the op needs a special-function unit (exp, tanh, sigmoid, div, sqrt, erf).
bool vecOpIsSpecial(VecOp op);

/// Energy per byte read from / written to a level, pJ: the level's override, else DRAM's figure,
/// else the SRAM rule: ref * (bank KiB / sramRefKib)^sramExponent.
double readPjPerByte(const Target &t, const MemoryLevel &l);
double writePjPerByte(const Target &t, const MemoryLevel &l);

/// The area model of a target, mm^2. DRAM is off chip and counts nothing.
struct AreaBreakdown {
  double tensorUnit = 0;      // rows * cols MAC units of the operand dtype
  double vectorUnit = 0;      // lanes, plus a special-function unit per special op
  std::vector<double> levels; // by level index
  double total() const;
};
AreaBreakdown areaOf(const Target &t);

} // namespace npuc::isa
