// npuc/thread_pool.h - the fixed-size thread pool behind parallel loops in npuc's CPU code.
//
// Generated CPU code (JIT or ahead-of-time) runs a TIR `parallel` loop by calling the function
// stored in the module's hook variable `npuc_parallel_for_hook` (see cpu_fallback/Codegen.h):
//   void hook(void (*body)(void *closure, int64_t begin, int64_t end), void *closure, int64_t n)
// When the hook is null the loop runs serially, so a module never depends on this pool.
// Hosts (the `npuc run` runtime and the deployment runtime in npuc/runtime.h) install
// ThreadPool::parallelFor. Header-only so that the deployment runtime needs no npuc library.
//
// The pool splits [0, n) into one contiguous chunk per thread (static schedule: the loops it runs
// are uniform tiles of one operator), and the calling thread takes chunk 0 instead of idling.
// Nested parallel loops (a parallel loop inside a chunk) run serially on the calling worker.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace npuc::rt {

using ParallelBody = void (*)(void *closure, int64_t begin, int64_t end);
using ParallelForFn = void (*)(ParallelBody body, void *closure, int64_t n);

class ThreadPool {
public:
  /// The most threads a pool, a package or a command-line option may ask for: every thread
  /// count npuc accepts is checked against this one bound.
  static constexpr int kMaxThreads = 1024;

  /// `threads` counts the calling thread: 1 runs everything inline. Throws std::system_error
  /// when a thread cannot be created, after stopping the ones that were.
  explicit ThreadPool(int threads) : threads_(threads < 1 ? 1 : threads) {
    try {
      for (int i = 1; i < threads_; ++i)
        workers_.emplace_back([this, i] { workerLoop(i); });
    } catch (...) {
      // The destructor does not run for a constructor that throws; without this the members
      // would be destroyed under running workers (a condition variable destroyed while they
      // wait on it blocks forever in pthread_cond_destroy).
      stopWorkers();
      throw;
    }
  }
  ~ThreadPool() { stopWorkers(); }
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  int threads() const { return threads_; }

  /// Runs body over [0, n) split into threads() chunks; returns when every chunk is done.
  void run(ParallelBody body, void *closure, int64_t n) {
    if (n <= 0)
      return;
    if (threads_ == 1 || n == 1 || insideWorker()) {
      body(closure, 0, n);
      return;
    }
    std::unique_lock<std::mutex> lock(mu_);
    body_ = body;
    closure_ = closure;
    n_ = n;
    pending_ = threads_ - 1;
    ++generation_;
    lock.unlock();
    wake_.notify_all();
    runChunk(0);
    lock.lock();
    done_.wait(lock, [this] { return pending_ == 0; });
  }

  /// The process-wide pool the hook uses; setThreads() replaces it (not while a model runs).
  static ThreadPool &global() { return *globalSlot(); }
  /// Throws std::system_error when the threads cannot be created; the global pool is then
  /// empty and the next parallelFor runs on one thread.
  static void setThreads(int threads) {
    if (globalSlot() && globalSlot()->threads() == threads)
      return;
    delete globalSlot(); // before the new pool starts: both together may exceed the limit
    globalSlot() = nullptr;
    globalSlot() = new ThreadPool(threads);
  }
  /// The function generated code calls through `npuc_parallel_for_hook`.
  static void parallelFor(ParallelBody body, void *closure, int64_t n) {
    if (!globalSlot())
      setThreads(1);
    global().run(body, closure, n);
  }

private:
  int threads_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable wake_, done_;
  ParallelBody body_ = nullptr;
  void *closure_ = nullptr;
  int64_t n_ = 0;
  int pending_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;

  void stopWorkers() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread &t : workers_)
      t.join();
  }

  static ThreadPool *&globalSlot() {
    static ThreadPool *pool = nullptr;
    return pool;
  }
  static bool &insideWorker() {
    thread_local bool inside = false;
    return inside;
  }

  void runChunk(int i) {
    int64_t begin = n_ * i / threads_, end = n_ * (i + 1) / threads_;
    if (begin < end) {
      insideWorker() = true;
      body_(closure_, begin, end);
      insideWorker() = false;
    }
  }

  void workerLoop(int i) {
    uint64_t seen = 0;
    for (;;) {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_)
        return;
      seen = generation_;
      lock.unlock();
      runChunk(i);
      lock.lock();
      if (--pending_ == 0)
        done_.notify_one();
    }
  }
};

} // namespace npuc::rt
