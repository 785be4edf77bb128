// StatsSum.cpp - summing SimStats (contract in StatsSum.h).
#include "simulator/StatsSum.h"

namespace npuc::sim {

void addStats(SimStats &total, const SimStats &s) {
  total.totalCycles += s.totalCycles;
  total.macs += s.macs;
  total.dramBytesRead += s.dramBytesRead;
  total.dramBytesWritten += s.dramBytesWritten;
  total.bankConflictStallCycles += s.bankConflictStallCycles;
  total.criticalPathOtherCycles += s.criticalPathOtherCycles;
  for (size_t c = 0; c < kDramClasses; ++c) {
    total.dramByClass.read[c] += s.dramByClass.read[c];
    total.dramByClass.written[c] += s.dramByClass.written[c];
  }
  for (size_t op = 0; op < s.vectorElements.size(); ++op)
    total.vectorElements[op] += s.vectorElements[op];
  if (total.engines.size() < s.engines.size())
    total.engines.resize(s.engines.size());
  for (size_t i = 0; i < s.engines.size(); ++i) {
    EngineStats &a = total.engines[i];
    const EngineStats &b = s.engines[i];
    a.name = b.name;
    a.busyCycles += b.busyCycles;
    a.instructions += b.instructions;
    a.tokenWaitCycles += b.tokenWaitCycles;
    a.idleCycles += b.idleCycles;
    a.bankConflictStallCycles += b.bankConflictStallCycles;
    a.criticalPathCycles += b.criticalPathCycles;
  }
  if (total.levels.size() < s.levels.size())
    total.levels.resize(s.levels.size());
  for (size_t i = 0; i < s.levels.size(); ++i) {
    LevelStats &a = total.levels[i];
    const LevelStats &b = s.levels[i];
    a.name = b.name;
    a.bankConflictStallCycles += b.bankConflictStallCycles;
    a.bytesRead += b.bytesRead;
    a.bytesWritten += b.bytesWritten;
  }
}

} // namespace npuc::sim
