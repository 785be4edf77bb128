// Energy.cpp - action counting and the energy model (contract in Energy.h).
#include "simulator/Energy.h"

#include "support/Error.h"
#include "support/IntMath.h"

namespace npuc::sim {

namespace {

void read(SimStats &s, int level, int64_t bytes) {
  s.levels[size_t(level)].bytesRead += bytes;
}

void written(SimStats &s, int level, int64_t bytes) {
  s.levels[size_t(level)].bytesWritten += bytes;
}

void countMatmul(const isa::Target &t, const MatmulOp &mm, SimStats &s) {
  const isa::TensorUnit &tu = t.tensor;
  const int64_t op = isa::elemBytes(tu.operandType), acc = isa::elemBytes(tu.accType);
  const int64_t rowBlocks = ceilDiv(mm.k, tu.rows), colBlocks = ceilDiv(mm.n, tu.cols);
  read(s, tu.bLevel, mm.k * mm.n * op);
  read(s, tu.aLevel, mm.m * mm.k * colBlocks * op);
  const int64_t c = mm.m * mm.n * acc;
  written(s, tu.accLevel, c * rowBlocks);
  read(s, tu.accLevel, c * (rowBlocks - 1 + (mm.accumulate ? 1 : 0)));
}

void countVector(const VectorOp &v, int64_t elements, SimStats &s) {
  s.vectorElements[size_t(v.op)] += elements;
  read(s, v.src1.level, elements * v.src1.elemBytes);
  if (isa::vecOpReadsSrc2(v.op))
    read(s, v.src2.level, elements * v.src2.elemBytes);
  if (isa::vecOpReadsDst(v.op))
    read(s, v.dst.level, elements * v.dst.elemBytes);
  written(s, v.dst.level, elements * v.dst.elemBytes);
}

} // namespace

void countActions(const isa::Target &t, const Decoded &d, SimStats &s) {
  NPUC_ASSERT(s.levels.size() == t.levels.size(), "the run sizes its level stats to the target");
  switch (d.sem) {
  case isa::Semantics::Dma:
    read(s, d.dma.src.level, d.dma.readElems * d.dma.src.elemBytes);
    written(s, d.dma.dst.level, d.bytes);
    break;
  case isa::Semantics::Matmul:
    countMatmul(t, d.mm, s);
    break;
  case isa::Semantics::Vector:
    countVector(d.vec, d.elements, s);
    break;
  case isa::Semantics::Finish:
    break;
  }
}

double EnergyBreakdown::total() const {
  double sum = mac + vector + leakage;
  for (double e : levels)
    sum += e;
  return sum;
}

EnergyBreakdown energyOf(const isa::Target &t, const SimStats &s) {
  EnergyBreakdown e;
  e.mac = double(s.macs) * t.energy.macPj[int(t.tensor.operandType)];
  for (isa::VecOp op : isa::kAllVecOps)
    e.vector += double(s.vectorElements[size_t(op)]) * isa::vecOpPj(t.energy, op);
  for (const isa::MemoryLevel &l : t.levels) {
    const size_t i = size_t(l.index);
    const LevelStats none;
    const LevelStats &ls = i < s.levels.size() ? s.levels[i] : none;
    e.levels.push_back(double(ls.bytesRead) * isa::readPjPerByte(t, l) +
                       double(ls.bytesWritten) * isa::writePjPerByte(t, l));
  }
  // mW * ns = pJ: cycles / GHz is the run's time in ns.
  e.leakage =
      t.energy.leakageMwPerMm2 * isa::areaOf(t).total() * double(s.totalCycles) / t.clockGhz;
  return e;
}

} // namespace npuc::sim
