// A small pool of std::threads for the addon's own kernels (the prefix
// attention custom call). XLA's CPU threads wait while a custom call runs,
// so the kernel brings its own workers to keep every core busy.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace pjrt_score {

class ThreadPool {
 public:
  // `threads` in all: threads - 1 workers plus the caller of ParallelFor.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Runs fn(i) for every i in [0, count) on the workers and the calling
  // thread; returns when all are done. fn must not throw. Calls from several
  // threads run one after another.
  void ParallelFor(int64_t count, const std::function<void(int64_t)>& fn);

  int threads() const { return static_cast<int>(workers_.size()) + 1; }

  // The process's pool: one thread per CPU this process may use (usable_cpus.h: the affinity
  // mask capped by the cgroup CPU quota), or PJRT_SCORE_KERNEL_THREADS (1..256) where set, at most
  // 256. Sized once, on first use; lives until the process ends.
  static ThreadPool& Shared();

  // The shared pool's size and what set it ("affinity", "cgroup quota (<file>)" or
  // "PJRT_SCORE_KERNEL_THREADS"), without starting its threads.
  struct Sizing {
    int threads;
    std::string source;
  };
  static const Sizing& SharedSizing();

 private:
  void Work();
  void Drain();

  std::mutex run_mu_;  // one ParallelFor at a time
  std::mutex mu_;
  std::condition_variable start_cv_;
  std::condition_variable done_cv_;
  std::vector<std::thread> workers_;
  const std::function<void(int64_t)>* fn_ = nullptr;
  int64_t count_ = 0;
  std::atomic<int64_t> next_{0};
  int active_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

}  // namespace pjrt_score
