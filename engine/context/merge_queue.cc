// merge_queue.cc — see merge_queue.h.
#include "engine/context/merge_queue.h"

#include <algorithm>
#include <new>

namespace tessera {

MergeQueue::~MergeQueue() {
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = true;
  }
  work_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void MergeQueue::start_locked() {
  if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
}

void MergeQueue::request(MergeOwner* o) {
  if (!o) return;
  std::lock_guard<std::mutex> g(mu_);
  if (stop_ || std::find(queue_.begin(), queue_.end(), o) != queue_.end()) return;
  queue_.push_back(o);
  start_locked();
  work_.notify_one();
}

void MergeQueue::forget(MergeOwner* o) {
  std::unique_lock<std::mutex> lk(mu_);
  queue_.erase(std::remove(queue_.begin(), queue_.end(), o), queue_.end());
  done_.wait(lk, [&] { return running_ != o; });
  // Requeued while it ran (request during its own run): gone for good now.
  queue_.erase(std::remove(queue_.begin(), queue_.end(), o), queue_.end());
}

void MergeQueue::wait_idle(MergeOwner* o) {
  std::unique_lock<std::mutex> lk(mu_);
  done_.wait(lk, [&] { return running_ != o && std::find(queue_.begin(), queue_.end(), o) == queue_.end(); });
}

uint64_t MergeQueue::runs() const {
  std::lock_guard<std::mutex> g(mu_);
  return runs_;
}

void MergeQueue::reset_in_child() {
  // New objects over the old ones, never destroyed: destroying a condition variable with
  // waiters, or a joinable thread, is what must not happen to them.
  new (&thread_) std::thread();
  new (&work_) std::condition_variable();
  new (&done_) std::condition_variable();
  queue_.clear();
  running_ = nullptr;
  mu_.unlock();
}

void MergeQueue::run() {
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    work_.wait(lk, [&] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    MergeOwner* o = queue_.front();
    queue_.pop_front();
    running_ = o;
    lk.unlock();
    o->merge_in_background();  // noexcept; takes the owner's own lock
    lk.lock();
    running_ = nullptr;
    ++runs_;
    done_.notify_all();
  }
}

}  // namespace tessera
