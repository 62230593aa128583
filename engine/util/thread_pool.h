// A fixed-size thread pool.  The engine's pools (tile filtering, cold reads) belong to a
// Context (context.h), which sizes them from the options: TESSERA_THREADS filter threads
// (default: the cores the process may run on, its CPU affinity mask — one under mpirun's
// default binding), TESSERA_IO_THREADS for the disk.
#pragma once
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace tessera {

class ThreadPool {
 public:
  explicit ThreadPool(unsigned threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  template <class F>
  auto submit(F f) -> std::future<decltype(f())> {
    auto task = std::make_shared<std::packaged_task<decltype(f())()>>(std::move(f));
    auto fut = task->get_future();
    {
      std::lock_guard<std::mutex> g(mu_);
      q_.emplace_back([task] { (*task)(); });
    }
    cv_.notify_one();
    return fut;
  }
  unsigned size() const { return static_cast<unsigned>(workers_.size()); }
  // Whether the calling thread is one of this pool's workers: a task that would wait for
  // more tasks of its own pool must not (with every worker waiting, none is left to run them).
  bool on_worker() const;
  // CPUs in the process's affinity mask (sched_getaffinity), else the machine's cores.
  static unsigned usable_cores();

 private:
  void run();
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> q_;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace tessera
