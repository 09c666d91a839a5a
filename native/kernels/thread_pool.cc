#include "kernels/thread_pool.h"

#include <algorithm>
#include <cstdlib>

#include "kernels/usable_cpus.h"

namespace pjrt_score {

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { Work(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

const ThreadPool::Sizing& ThreadPool::SharedSizing() {
  static const Sizing sizing = [] {
    const char* env = std::getenv("PJRT_SCORE_KERNEL_THREADS");
    const long n = env ? std::strtol(env, nullptr, 10) : 0;
    if (n >= 1 && n <= 256) return Sizing{static_cast<int>(n), "PJRT_SCORE_KERNEL_THREADS"};
    const UsableCpus cpus = ReadUsableCpus();
    return Sizing{std::min(cpus.usable, 256), cpus.source};
  }();
  return sizing;
}

ThreadPool& ThreadPool::Shared() {
  // Never destroyed: at exit the plugin's threads may still be inside a
  // custom call that uses the pool, after static destructors have run.
  static ThreadPool* pool = new ThreadPool(SharedSizing().threads);
  return *pool;
}

void ThreadPool::Drain() {
  for (int64_t i = next_.fetch_add(1); i < count_; i = next_.fetch_add(1)) (*fn_)(i);
}

void ThreadPool::Work() {
  uint64_t seen = 0;
  for (;;) {
    std::unique_lock<std::mutex> lock(mu_);
    start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    lock.unlock();
    Drain();
    lock.lock();
    if (--active_ == 0) done_cv_.notify_all();
  }
}

void ThreadPool::ParallelFor(int64_t count, const std::function<void(int64_t)>& fn) {
  std::lock_guard<std::mutex> run(run_mu_);
  if (workers_.empty() || count <= 1) {
    for (int64_t i = 0; i < count; ++i) fn(i);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    fn_ = &fn;
    count_ = count;
    next_.store(0);
    active_ = static_cast<int>(workers_.size());
    ++generation_;
  }
  start_cv_.notify_all();
  Drain();
  std::unique_lock<std::mutex> lock(mu_);
  // Every worker passes through each generation once before the next starts.
  done_cv_.wait(lock, [&] { return active_ == 0; });
  fn_ = nullptr;
}

}  // namespace pjrt_score
