// WorkQueue.cpp - runTasks (contract in WorkQueue.h).
#include "support/WorkQueue.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <system_error>
#include <thread>
#include <vector>

namespace npuc {

void runTasks(size_t n, int jobs, const std::function<void(size_t)> &task) {
  std::atomic<size_t> next{0};
  std::vector<std::exception_ptr> errors(n);
  auto work = [&] {
    for (size_t i = next++; i < n; i = next++) {
      try {
        task(i);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  const size_t threads = std::min(n, size_t(std::max(jobs, 1)));
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) {
    try {
      pool.emplace_back(work);
    } catch (const std::system_error &) {
      break; // the system refuses more threads: the ones running share out all the work
    }
  }
  work();
  for (std::thread &th : pool)
    th.join();
  for (const std::exception_ptr &e : errors)
    if (e)
      std::rethrow_exception(e);
}

} // namespace npuc
