#include "engine/context/context.h"

#include <unistd.h>

#include <algorithm>

namespace tessera {

Context::Context(const EngineOptions& o, std::shared_ptr<Env> env)
    : opts_(o), env_(env ? std::move(env) : Env::posix_shared()), tiles_(o.tile_cache_mb << 20), budget_(o.write_memory_mb << 20) {}

// The child's own pools, cache and budget stay empty (no thread is ever started).
Context::Context(std::shared_ptr<Context> parent, std::shared_ptr<Env> env)
    : parent_(std::move(parent)), opts_(parent_->options()), env_(std::move(env)), tiles_(0), budget_(0) {}

Context::~Context() = default;

ThreadPool& Context::LazyPool::get(unsigned threads) {
  std::lock_guard<std::mutex> g(mu);
  if (!pool || owner != ::getpid()) {
    pool = new ThreadPool(threads);  // a forked child's inherited pool is leaked: no threads to join
    owner = ::getpid();
  }
  return *pool;
}

Context::LazyPool::~LazyPool() {
  if (pool && owner == ::getpid()) delete pool;
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
