// An LRU cache of decoded tiles, bounded in bytes (a Context's: TESSERA_TILE_CACHE_MB,
// default 256).  Keys are (serial number of the opened Fragment, blob offset): fragments
// are immutable, so entries never go stale, and serials are never reused (inode numbers
// are, once consolidation unlinks files).
#pragma once
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace tessera {

class TileCache {
 public:
  struct Key {
    uint64_t serial, offset;
    bool operator==(const Key& o) const { return serial == o.serial && offset == o.offset; }
  };
  explicit TileCache(uint64_t budget) : budget_(budget) {}
  std::shared_ptr<const void> get(const Key& k);
  void put(const Key& k, std::shared_ptr<const void> v, uint64_t bytes);
  uint64_t budget() const { return budget_; }
  uint64_t used();  // bytes of the tiles held now

 private:
  struct Hash {
    size_t operator()(const Key& k) const { return (k.serial * 0x9E3779B97F4A7C15ULL) ^ k.offset; }
  };
  struct Item {
    Key key;
    std::shared_ptr<const void> value;
    uint64_t bytes;
  };
  std::mutex mu_;
  uint64_t budget_, used_ = 0;
  std::list<Item> lru_;  // front = most recent
  std::unordered_map<Key, std::list<Item>::iterator, Hash> map_;
};

}  // namespace tessera
