#include "engine/thread_pool.h"

#include <cstdlib>

namespace tessera {

ThreadPool::ThreadPool(unsigned threads) {
  if (threads == 0) threads = 1;
  for (unsigned i = 0; i < threads; ++i) workers_.emplace_back([this] { run(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait(l, [this] { return stop_ || !q_.empty(); });
      if (q_.empty()) return;
      job = std::move(q_.front());
      q_.pop_front();
    }
    job();
  }
}

ThreadPool& ThreadPool::shared() {
  // Intentionally leaked: worker threads must outlive static destructors of users.
  static ThreadPool* pool = [] {
    unsigned n = std::thread::hardware_concurrency();
    if (const char* e = std::getenv("TESSERA_THREADS")) n = static_cast<unsigned>(std::atoi(e));
    return new ThreadPool(n ? n : 2);
  }();
  return *pool;
}

}  // namespace tessera
