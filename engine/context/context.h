// context.h — what the arrays of a process share: the filter pool (tile compression and
// decompression), the I/O pool (cold reads in parallel, writeback hints), the
// decoded-tile cache, the write budget (one memory bound for all write buffers, with
// the background flusher) and the thread of automatic consolidation, sized from one
// EngineOptions.  The engine takes them from the
// context an array was opened with (ArrayOptions::context), never from statics, so a
// test or a tool can run arrays with their own pool sizes and cache next to others.
// Arrays opened without one use Context::process(), built at first use from the
// process's options (options.h configure_process: the connector's first file).
// The context also carries the Env all their file-system calls go through (env.h):
// POSIX unless a test passes one that injects faults.
//
// Fork without exec (Python's multiprocessing 'fork', Dask and joblib workers): every
// live context is made safe to use in the child by pthread_atfork handlers (context.cc).
// Before the fork they take each context's locks, so no copy is caught mid-change by a
// thread the child does not have; in the child, the pools and the budget's flusher start
// afresh at first use (so does the merge thread).  Arrays and containers the parent had
// open are the parent's: a child opens its own.
#pragma once
#include <memory>
#include <mutex>

#include "engine/write/blob_memory.h"
#include "engine/util/env.h"
#include "engine/context/options.h"
#include "engine/context/read_observer.h"
#include "engine/util/thread_pool.h"
#include "engine/tile/tile_cache.h"
#include "engine/write/write_budget.h"
#include "engine/context/merge_queue.h"

namespace tessera {

class Context {
 public:
  // env null: the POSIX one.
  explicit Context(const EngineOptions& o, std::shared_ptr<Env> env = nullptr);
  // Everything of `parent` (pools, tile cache, write budget, settings, read observer)
  // with file-system calls through `env` instead: a container stored in one file gives
  // its arrays the pack's Env this way (engine/pack/), sharing the rest with the opener.
  Context(std::shared_ptr<Context> parent, std::shared_ptr<Env> env);
  ~Context();  // joins the pools' threads
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  ThreadPool& filters();  // EngineOptions::threads workers (0: the usable cores)
  ThreadPool& io();       // EngineOptions::io_threads workers: they mostly wait for the disk
  TileCache& tiles() { return parent_ ? parent_->tiles() : tiles_; }
  // The memory bound of all write buffers, and their background flusher.
  WriteBudget& budget() { return parent_ ? parent_->budget() : budget_; }
  // Spilled blobs' memory kept for the next blobs, within the budget (blob_memory.h).
  BlobMemory& blob_memory() { return parent_ ? parent_->blob_memory() : blob_memory_; }
  // The thread of automatic consolidation (merge_queue.h, engine/array/auto_merge.h).
  MergeQueue& merges() { return parent_ ? parent_->merges() : merges_; }
  const EngineOptions& options() const { return opts_; }
  Env& env() const { return *env_; }
  const std::shared_ptr<Env>& env_shared() const { return env_; }
  // Told which way each read ran (null: nobody).  Set before the context's first read;
  // the observer outlives the context.
  void set_read_observer(ReadObserver* o) { read_observer_ = o; }
  ReadObserver* read_observer() const {
    return read_observer_ || !parent_ ? read_observer_ : parent_->read_observer();
  }

  // The process's default context.  Never destroyed: pool threads may still be running
  // (a writeback hint) while static destructors and HDF5's plugin unloading run.
  static const std::shared_ptr<Context>& process();
  // ctx, or the process's context when ctx is null.
  static std::shared_ptr<Context> or_process(std::shared_ptr<Context> ctx) { return ctx ? ctx : process(); }

 private:
  // A pool is started at first use, and again in a forked child, which inherits the
  // object but none of its threads (the parent's pool is then left alone, never joined).
  struct LazyPool {
    std::mutex mu;
    ThreadPool* pool = nullptr;
    ThreadPool& get(unsigned threads);
    ~LazyPool() { delete pool; }
  };
  // The pthread_atfork handlers, over every live context (context.cc's registry), and
  // what each does to one context.
  static void before_fork();
  static void after_fork_in_parent();
  static void after_fork_in_child();
  void lock_for_fork();
  void unlock_after_fork(bool child);
  std::shared_ptr<Context> parent_;  // null, or the context this one shares all but its Env with
  EngineOptions opts_;
  std::shared_ptr<Env> env_;
  ReadObserver* read_observer_ = nullptr;
  LazyPool filters_, io_;
  TileCache tiles_;
  WriteBudget budget_;  // after the pools: its flusher thread stops before they do
  BlobMemory blob_memory_{budget_};  // leaves the budget (forget) before it stops
  // Last: its thread runs arrays' merges, which use the pools and the cache, so it stops
  // before any of them.
  MergeQueue merges_;
};

}  // namespace tessera
