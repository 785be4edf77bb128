// WorkQueue.h - independent tasks of uneven cost spread over threads: the tuner's measurements
// (tune/Measure.h) and the design-space explorer's points (explore/Explore.h).
#pragma once

#include <cstddef>
#include <functional>

namespace npuc {

/// Runs task(i) for every i in [0, n) on up to `jobs` threads, the calling thread among them;
/// each thread takes the next index when it finishes one, so uneven tasks balance. An exception
/// a task throws is rethrown on the calling thread once every task has run (the lowest index's
/// first). When the system refuses more threads, the running ones share out all the work.
void runTasks(size_t n, int jobs, const std::function<void(size_t)> &task);

} // namespace npuc
