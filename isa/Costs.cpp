// Costs.cpp - per-level and per-op energy, and the area model (contract in Costs.h).
#include "isa/Costs.h"

#include "support/Error.h"

#include <cmath>

namespace npuc::isa {

bool vecOpIsSpecial(VecOp op) {
  switch (op) {
  case VecOp::Exp:
  case VecOp::Tanh:
  case VecOp::Sigmoid:
  case VecOp::Div:
  case VecOp::Sqrt:
  case VecOp::Erf:
    return true;
  case VecOp::Copy:
  case VecOp::Add:
  case VecOp::Sub:
  case VecOp::Mul:
  case VecOp::Max:
  case VecOp::Min:
  case VecOp::Relu:
  case VecOp::Clip:
  case VecOp::MulAdd:
  case VecOp::Mac:
    return false;
  }
  NPUC_ASSERT(false, "every VecOp is listed above");
  return false;
}

double vecOpPj(const EnergyTable &e, VecOp op) {
  if (vecOpIsSpecial(op))
    return e.vectorSpecialPj;
  switch (op) {
  case VecOp::Copy:
    return 0;
  case VecOp::Mul:
    return e.vectorMulPj;
  case VecOp::MulAdd: // a multiply, then an add (no fused multiply-add)
  case VecOp::Mac:
    return e.vectorMulPj + e.vectorAluPj;
  default: // add, sub, max, min, relu, clip: one ALU operation
    return e.vectorAluPj;
  }
}

namespace {

double sramScale(const Target &t, const MemoryLevel &l) {
  const double bankKib = double(l.size) / double(l.banks) / 1024.0;
  return std::pow(bankKib / t.energy.sramRefKib, t.energy.sramExponent);
}

} // namespace

double readPjPerByte(const Target &t, const MemoryLevel &l) {
  if (l.cost.readPjPerByte)
    return *l.cost.readPjPerByte;
  return l.isDram ? t.energy.dramPjPerByte : t.energy.sramReadPjPerByte * sramScale(t, l);
}

double writePjPerByte(const Target &t, const MemoryLevel &l) {
  if (l.cost.writePjPerByte)
    return *l.cost.writePjPerByte;
  return l.isDram ? t.energy.dramPjPerByte : t.energy.sramWritePjPerByte * sramScale(t, l);
}

double AreaBreakdown::total() const {
  double sum = tensorUnit + vectorUnit;
  for (double a : levels)
    sum += a;
  return sum;
}

AreaBreakdown areaOf(const Target &t) {
  const AreaTable &a = t.area;
  AreaBreakdown r;
  r.tensorUnit = double(t.tensor.peakMacsPerCycle()) * a.macMm2[int(t.tensor.operandType)];
  int special = 0;
  for (VecOp op : t.vector.ops)
    special += vecOpIsSpecial(op);
  r.vectorUnit = double(t.vector.lanes) * (a.vectorLaneMm2 + special * a.vectorSpecialLaneMm2);
  for (const MemoryLevel &l : t.levels) {
    double mm2 = 0;
    if (l.cost.areaMm2)
      mm2 = *l.cost.areaMm2;
    else if (!l.isDram)
      mm2 = double(l.size) / 1024.0 * a.sramMm2PerKib *
                (1 + a.sramExtraPortFraction * (l.ports - 1)) +
            l.banks * a.sramBankMm2;
    r.levels.push_back(mm2);
  }
  return r;
}

} // namespace npuc::isa
