#include "engine/tile_cache.h"

#include <cstdlib>

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

void TileCache::drop(uint64_t serial) {
  std::lock_guard<std::mutex> g(mu_);
  auto it = map_.lower_bound(Key{serial, 0});
  while (it != map_.end() && it->first.serial == serial) {
    used_ -= it->second->bytes;
    lru_.erase(it->second);
    it = map_.erase(it);
  }
}

}  // namespace tessera
