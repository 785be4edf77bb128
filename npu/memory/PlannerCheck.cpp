// PlannerCheck.cpp - the independent validator of memory plans.
//
// Deliberately naive and separate from the planner (it shares no code with MemoryPlanner.cpp or
// PlannerSearch.cpp): a pairwise O(n^2) test of the definition, so that a bug in the planner's
// incremental bookkeeping cannot hide itself.
#include "npu/memory/MemoryPlanner.h"

#include <fmt/format.h>

namespace npuc::npu {

std::string checkMemoryPlan(const std::vector<BufferReq> &buffers,
                            const std::vector<int64_t> &offsets, int64_t capacity) {
  if (offsets.size() != buffers.size())
    return fmt::format("plan has {} offsets for {} buffers", offsets.size(), buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i) {
    const BufferReq &b = buffers[i];
    bool live = b.start < b.end && b.size > 0;
    if (!live)
      continue; // never occupies memory: any offset is acceptable
    if (offsets[i] < 0)
      return fmt::format("buffer {}: negative offset {}", i, offsets[i]);
    if (offsets[i] + b.size > capacity)
      return fmt::format("buffer {}: [{}, {}) exceeds capacity {}", i, offsets[i],
                         offsets[i] + b.size, capacity);
    if (b.alignment > 1 && offsets[i] % b.alignment != 0)
      return fmt::format("buffer {}: offset {} not a multiple of alignment {}", i, offsets[i],
                         b.alignment);
  }
  for (size_t i = 0; i < buffers.size(); ++i) {
    const BufferReq &a = buffers[i];
    if (a.start >= a.end || a.size <= 0)
      continue;
    for (size_t j = i + 1; j < buffers.size(); ++j) {
      const BufferReq &b = buffers[j];
      if (b.start >= b.end || b.size <= 0)
        continue;
      bool timeOverlap = a.start < b.end && b.start < a.end;
      bool spaceOverlap = offsets[i] < offsets[j] + b.size && offsets[j] < offsets[i] + a.size;
      if (timeOverlap && spaceOverlap)
        return fmt::format("buffers {} and {} overlap: times [{}, {}) and [{}, {}), addresses "
                           "[{}, {}) and [{}, {})",
                           i, j, a.start, a.end, b.start, b.end, offsets[i], offsets[i] + a.size,
                           offsets[j], offsets[j] + b.size);
    }
  }
  return "";
}

} // namespace npuc::npu
