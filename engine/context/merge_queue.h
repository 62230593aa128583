// merge_queue.h — the thread of a context (the process, by default) that runs automatic
// consolidation (engine/array/auto_merge.h) in the background of the writing process:
// an array whose commit leaves a merge due (or replaced files due to retire) queues
// itself here and goes on; the thread runs one owner's merge at a time.  One thread for
// all arrays: merges are disk work, and on a small machine two at once would only
// compete with each other and with the writers they are meant to stay out of the way of.
//
// The queue only schedules; what a merge does and how it stays safe beside the array's
// own writers and readers is the owner's (Array::merge_in_background).
#pragma once
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>

namespace tessera {

// What the queue runs (an Array).
class MergeOwner {
 public:
  // Runs on the queue's thread: do the maintenance that is due (or nothing).  Must not
  // throw.
  virtual void merge_in_background() noexcept = 0;

 protected:
  ~MergeOwner() = default;
};

class MergeQueue {
 public:
  MergeQueue() = default;
  ~MergeQueue();  // stops and joins the thread
  MergeQueue(const MergeQueue&) = delete;
  MergeQueue& operator=(const MergeQueue&) = delete;

  // Queues o (once: an owner already queued is not queued twice; one that is running is
  // queued again, so work that became due meanwhile is not lost).
  void request(MergeOwner* o);
  // o goes away: it leaves the queue, and a run of it that is under way finishes first.
  void forget(MergeOwner* o);
  // Waits until o is neither queued nor running.
  void wait_idle(MergeOwner* o);
  // Runs finished so far (tests).
  uint64_t runs() const;
  // Around a fork (context.cc's pthread_atfork handlers), as the write budget: before,
  // the lock is taken; after, the parent releases it, and the child forgets the parent's
  // thread and queue (the arrays there are the parent's to merge) and re-creates the
  // condition variables (the parent's thread waits in them, and a signal would wait for
  // it forever); its own thread starts at its first request.
  void lock_for_fork() { mu_.lock(); }
  void unlock_in_parent() { mu_.unlock(); }
  void reset_in_child();

 private:
  void run();
  void start_locked();
  mutable std::mutex mu_;
  std::condition_variable work_, done_;
  std::deque<MergeOwner*> queue_;
  MergeOwner* running_ = nullptr;
  uint64_t runs_ = 0;
  std::thread thread_;
  bool stop_ = false;
};

}  // namespace tessera
