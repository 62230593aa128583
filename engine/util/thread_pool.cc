#include "engine/util/thread_pool.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>


namespace tessera {
namespace {
thread_local const ThreadPool* current_pool = nullptr;  // the pool whose worker this thread is
}  // namespace

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

bool ThreadPool::on_worker() const { return current_pool == this; }

void ThreadPool::run() {
  current_pool = this;
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

unsigned ThreadPool::usable_cores() {
  // The CPUs this process may run on, not the machine's: mpirun binds each rank to one
  // core by default, and more filter threads than that core only add context switches.
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return static_cast<unsigned>(n);
  }
  return std::thread::hardware_concurrency();
}

}  // namespace tessera
