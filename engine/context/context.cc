#include "engine/context/context.h"

#include <pthread.h>

#include <algorithm>
#include <set>

namespace tessera {
namespace {

// The live contexts, for the fork handlers.  Never destroyed: a context may go during
// static destruction.
std::mutex& registry_mu() {
  static auto* mu = new std::mutex;
  return *mu;
}
std::set<Context*>& registry() {
  static auto* s = new std::set<Context*>;
  return *s;
}

}  // namespace

Context::Context(const EngineOptions& o, std::shared_ptr<Env> env)
    : opts_(o), env_(env ? std::move(env) : Env::posix_shared()), tiles_(o.tile_cache_mb << 20), budget_(o.write_memory_mb << 20) {
  static std::once_flag handlers;
  std::call_once(handlers, [] { ::pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child); });
  std::lock_guard<std::mutex> g(registry_mu());
  registry().insert(this);
}

// The child's own pools, cache and budget stay empty (no thread is ever started); it is
// registered like any context so that the fork handlers and the destructor treat all alike.
Context::Context(std::shared_ptr<Context> parent, std::shared_ptr<Env> env)
    : parent_(std::move(parent)), opts_(parent_->options()), env_(std::move(env)), tiles_(0), budget_(0) {
  std::lock_guard<std::mutex> g(registry_mu());
  registry().insert(this);
}

Context::~Context() {
  std::lock_guard<std::mutex> g(registry_mu());
  registry().erase(this);
}

// Every context's locks, in one order (the order code that nests them takes them in: a
// blob memory's lock before its budget's); the registry's first, so no context comes or
// goes meanwhile.
void Context::before_fork() {
  registry_mu().lock();
  for (Context* c : registry()) c->lock_for_fork();
}

void Context::after_fork_in_parent() {
  for (Context* c : registry()) c->unlock_after_fork(false);
  registry_mu().unlock();
}

void Context::after_fork_in_child() {
  for (Context* c : registry()) c->unlock_after_fork(true);
  registry_mu().unlock();
}

void Context::lock_for_fork() {
  filters_.mu.lock();
  io_.mu.lock();
  tiles_.lock_for_fork();
  blob_memory_.lock_for_fork();
  budget_.lock_for_fork();
  merges_.lock_for_fork();  // a leaf: held by nothing that takes another of these
}

void Context::unlock_after_fork(bool child) {
  if (child) merges_.reset_in_child();
  else merges_.unlock_in_parent();
  if (child) {
    budget_.reset_in_child();
    // The parent's pools have no threads here: leaked, never joined; new ones start at
    // first use.
    filters_.pool = io_.pool = nullptr;
  } else {
    budget_.unlock_in_parent();
  }
  blob_memory_.unlock_after_fork();
  tiles_.unlock_after_fork();
  io_.mu.unlock();
  filters_.mu.unlock();
}

ThreadPool& Context::LazyPool::get(unsigned threads) {
  std::lock_guard<std::mutex> g(mu);
  if (!pool) pool = new ThreadPool(threads);
  return *pool;
}

ThreadPool& Context::filters() {
  if (parent_) return parent_->filters();
  unsigned n = opts_.threads ? opts_.threads : ThreadPool::usable_cores();
  return filters_.get(n ? n : 2);
}

ThreadPool& Context::io() { return parent_ ? parent_->io() : io_.get(std::max(1u, opts_.io_threads)); }

const std::shared_ptr<Context>& Context::process() {
  static const auto* p = new std::shared_ptr<Context>(std::make_shared<Context>(process_options()));
  return *p;
}

}  // namespace tessera
