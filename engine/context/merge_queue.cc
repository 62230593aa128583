// merge_queue.cc — see merge_queue.h.
#include "engine/context/merge_queue.h"

#include <unistd.h>

#include <algorithm>
#include <new>

namespace tessera {

void MergeQueue::adopt_after_fork() {
  if (sync_pid_.load() == ::getpid()) return;
  sync_pid_ = ::getpid();
  new (&mu_) std::mutex();
  new (&work_) std::condition_variable();
  new (&done_) std::condition_variable();
  queue_.clear();  // the parent's arrays' work, not this process's
  running_ = nullptr;
}

MergeQueue::~MergeQueue() {
  adopt_after_fork();
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = true;
  }
  work_.notify_all();
  if (thread_.joinable()) {
    if (owner_pid_ == ::getpid()) thread_.join();
    else thread_.detach();  // a forked child never had that thread
  }
}

void MergeQueue::start_locked() {
  // A forked child inherits the object but not the thread: it starts its own.
  if (thread_.joinable() && owner_pid_ == ::getpid()) return;
  if (thread_.joinable()) thread_.detach();
  owner_pid_ = ::getpid();
  thread_ = std::thread([this] { run(); });
}

void MergeQueue::request(MergeOwner* o) {
  if (!o) return;
  adopt_after_fork();
  std::lock_guard<std::mutex> g(mu_);
  if (stop_ || std::find(queue_.begin(), queue_.end(), o) != queue_.end()) return;
  queue_.push_back(o);
  start_locked();
  work_.notify_one();
}

void MergeQueue::forget(MergeOwner* o) {
  adopt_after_fork();
  std::unique_lock<std::mutex> lk(mu_);
  queue_.erase(std::remove(queue_.begin(), queue_.end(), o), queue_.end());
  done_.wait(lk, [&] { return running_ != o; });
  // Requeued while it ran (request during its own run): gone for good now.
  queue_.erase(std::remove(queue_.begin(), queue_.end(), o), queue_.end());
}

void MergeQueue::wait_idle(MergeOwner* o) {
  adopt_after_fork();
  std::unique_lock<std::mutex> lk(mu_);
  done_.wait(lk, [&] { return running_ != o && std::find(queue_.begin(), queue_.end(), o) == queue_.end(); });
}

uint64_t MergeQueue::runs() const {
  const_cast<MergeQueue*>(this)->adopt_after_fork();
  std::lock_guard<std::mutex> g(mu_);
  return runs_;
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
