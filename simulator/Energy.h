// Energy.h - the simulator's action counts and the energy they cost (docs/ENERGY.md).
//
// countActions() is what the simulator counts per executed instruction (timing-only runs count
// the same: every count follows from the decoded fields, never from data):
//   Dma     the bytes read from the source level (the box minus its padding) and the bytes
//           written to the destination level (padding included: the pad value is written).
//   Matmul  the tensor unit's MACs (SimStats::macs); and its operand traffic as a
//           weight-stationary array moves it: B (k x n) is read once into the array, A (m x k) is
//           streamed once per column block of the array (ceil(n / cols) times), and each row
//           block of the array (ceil(k / rows) of them) writes C's m x n partial sums, reading the
//           previous ones first except for the first block of a non-accumulating matmul.
//   Vector  the elements of the op (SimStats::vectorElements), src1 read, src2 read when the op
//           reads it, the destination read when the op accumulates, and the destination written.
// energyOf() multiplies the counts by the target's figures (isa/Costs.h) and adds leakage over
// the run's time at the target's clock.
#pragma once

#include "isa/Costs.h"
#include "simulator/Decode.h"
#include "simulator/Simulator.h"

#include <vector>

namespace npuc::sim {

/// Adds the actions of one executed instruction to `s` (whose levels are sized to the target's).
void countActions(const isa::Target &t, const Decoded &d, SimStats &s);

/// A run's energy, pJ, by component.
struct EnergyBreakdown {
  double mac = 0;             // the tensor unit's multiply-accumulates
  double vector = 0;          // the vector unit's arithmetic
  std::vector<double> levels; // reads and writes, by level index (DRAM included)
  double leakage = 0;         // static power over the run's cycles
  double total() const;
};

/// The energy of the actions counted in `s` on target `t`.
EnergyBreakdown energyOf(const isa::Target &t, const SimStats &s);

} // namespace npuc::sim
