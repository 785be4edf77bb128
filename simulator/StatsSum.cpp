// StatsSum.cpp - summing SimStats (contract in StatsSum.h).
#include "simulator/StatsSum.h"

namespace npuc::sim {

void addStats(SimStats &total, const SimStats &s, int64_t times) {
  total.totalCycles += times * s.totalCycles;
  total.macs += times * s.macs;
  total.dramBytesRead += times * s.dramBytesRead;
  total.dramBytesWritten += times * s.dramBytesWritten;
  total.bankConflictStallCycles += times * s.bankConflictStallCycles;
  total.criticalPathOtherCycles += times * s.criticalPathOtherCycles;
  for (size_t c = 0; c < kDramClasses; ++c) {
    total.dramByClass.read[c] += times * s.dramByClass.read[c];
    total.dramByClass.written[c] += times * s.dramByClass.written[c];
  }
  for (size_t op = 0; op < s.vectorElements.size(); ++op)
    total.vectorElements[op] += times * s.vectorElements[op];
  if (total.engines.size() < s.engines.size())
    total.engines.resize(s.engines.size());
  for (size_t i = 0; i < s.engines.size(); ++i) {
    EngineStats &a = total.engines[i];
    const EngineStats &b = s.engines[i];
    a.name = b.name;
    a.busyCycles += times * b.busyCycles;
    a.instructions += times * b.instructions;
    a.tokenWaitCycles += times * b.tokenWaitCycles;
    a.idleCycles += times * b.idleCycles;
    a.bankConflictStallCycles += times * b.bankConflictStallCycles;
    a.criticalPathCycles += times * b.criticalPathCycles;
  }
  if (total.levels.size() < s.levels.size())
    total.levels.resize(s.levels.size());
  for (size_t i = 0; i < s.levels.size(); ++i) {
    LevelStats &a = total.levels[i];
    const LevelStats &b = s.levels[i];
    a.name = b.name;
    a.bankConflictStallCycles += times * b.bankConflictStallCycles;
    a.bytesRead += times * b.bytesRead;
    a.bytesWritten += times * b.bytesWritten;
  }
}

} // namespace npuc::sim
