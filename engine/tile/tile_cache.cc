#include "engine/tile/tile_cache.h"

#include <cstdlib>
#include <iterator>

namespace tessera {

uint64_t TileCache::used() {
  std::lock_guard<std::mutex> g(mu_);
  return used_;
}

std::shared_ptr<const void> TileCache::get(const Key& k) {
  std::lock_guard<std::mutex> g(mu_);
  auto it = map_.find(k);
  if (it == map_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->value;
}

void TileCache::put(const Key& k, std::shared_ptr<const void> v, uint64_t bytes) {
  if (bytes > max_entry()) return;
  std::lock_guard<std::mutex> g(mu_);
  if (map_.count(k)) return;
  lru_.push_front({k, std::move(v), bytes});
  map_[k] = lru_.begin();
  used_ += bytes;
  while (used_ > budget_ && !lru_.empty()) {
    used_ -= lru_.back().bytes;
    map_.erase(lru_.back().key);
    lru_.pop_back();
  }
}

bool TileCache::reread_recently(const Key& k, uint64_t bytes) {
  // Enough stamps to remember every tile of a full cache of 4 KiB tiles; past it, the
  // stamps older than the budget go (they could only say "not recently" anyway).
  const size_t max_stamps = static_cast<size_t>(budget_ / 4096) + 64;
  std::lock_guard<std::mutex> g(mu_);
  clock_ += bytes;
  auto [it, fresh] = last_read_.try_emplace(k, clock_);
  const uint64_t before = it->second;
  it->second = clock_;
  if (last_read_.size() > max_stamps) {
    for (auto s = last_read_.begin(); s != last_read_.end();)
      s = clock_ - s->second > budget_ ? last_read_.erase(s) : std::next(s);
    if (last_read_.size() > max_stamps) last_read_.clear();
  }
  return !fresh && clock_ - before <= budget_;
}

void TileCache::drop(uint64_t serial) {
  std::lock_guard<std::mutex> g(mu_);
  last_read_.erase(last_read_.lower_bound(Key{serial, 0}), last_read_.lower_bound(Key{serial + 1, 0}));
  auto it = map_.lower_bound(Key{serial, 0});
  while (it != map_.end() && it->first.serial == serial) {
    used_ -= it->second->bytes;
    lru_.erase(it->second);
    it = map_.erase(it);
  }
}

}  // namespace tessera
