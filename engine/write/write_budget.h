// write_budget.h — one memory bound for the write buffers of every array of a context
// (the process, by default), and the thread that flushes them in the background (the
// NDBlaze idea: writes land in memory and return; a background job sorts and writes
// them as fragments; docs/engine.md "The write budget").
//
// Every array reports the bytes its write buffer holds (plus the buffer a background
// flush is writing).  When an array's buffer passes its own cap (write_buffer_mb), or the
// context's total passes the limit (write_memory_mb), a buffer is queued for the flusher:
// the array's own, or the largest in the context.  The flusher swaps that buffer out
// (writes go on into a fresh one) and turns it into a fragment on its own thread.
// Back-pressure: a writer returns only when the total is within the limit again, or
// nothing is queued or running that could bring it there — so when writers outrun the
// disk, H5Dwrite waits instead of memory growing.  The limit bounds buffered cells; a
// single write larger than the limit still lands whole (then waits).
#pragma once
#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

namespace tessera {

// What the budget can ask to flush (an Array).
class BufferOwner {
 public:
  // Runs on the flusher thread: turn the buffered cells into a fragment (or do nothing
  // when there is nothing to flush).  Must not throw.
  virtual void flush_in_background() noexcept = 0;

 protected:
  ~BufferOwner() = default;
};

class WriteBudget {
 public:
  explicit WriteBudget(uint64_t limit_bytes) : limit_(limit_bytes) {}
  ~WriteBudget();  // stops and joins the flusher
  WriteBudget(const WriteBudget&) = delete;
  WriteBudget& operator=(const WriteBudget&) = delete;

  uint64_t limit() const { return limit_; }
  uint64_t used() const;
  uint64_t peak() const;  // the largest total reported so far (tests, benchmarks)
  // o now holds `bytes`.  True when the total is past the limit (the caller then asks
  // for a flush: request(largest())) .
  bool report(BufferOwner* o, uint64_t bytes);
  BufferOwner* largest() const;
  // Queues o for the flusher (once: a queued owner is not queued twice).
  void request(BufferOwner* o);
  // o goes away: it leaves the queue, and a flush of it that is running finishes first.
  void forget(BufferOwner* o);
  // Back-pressure: returns when the total is within the limit, or when no queued or
  // running flush could lower it.  Call it holding no array's lock.
  void wait_for_room();
  // Waits until o is neither queued nor being flushed.
  void wait_idle(BufferOwner* o);
  // Around a fork (context.cc's pthread_atfork handlers).  Before: takes the lock, so the
  // child's copy is consistent.  After, in the parent: releases it.  After, in the child:
  // forgets the parent's flusher (a thread the child does not have; its own starts at the
  // next request), re-creates the condition variables (the parent's threads are recorded
  // in them as waiters, and signalling one would wait for those forever), and starts
  // with nothing queued or counted: the buffers of arrays the parent had open are the
  // parent's to flush, and flushing them from the child would commit them twice.
  void lock_for_fork() { mu_.lock(); }
  void unlock_in_parent() { mu_.unlock(); }
  void reset_in_child();

 private:
  void run();
  void start_locked();
  BufferOwner* largest_locked(const BufferOwner* skip) const;  // mu_ held
  const uint64_t limit_;
  mutable std::mutex mu_;
  std::condition_variable work_, done_;
  std::map<BufferOwner*, uint64_t> bytes_;
  uint64_t used_ = 0, peak_ = 0;
  std::deque<BufferOwner*> queue_;
  BufferOwner* running_ = nullptr;
  std::thread thread_;
  bool stop_ = false;
};

}  // namespace tessera
