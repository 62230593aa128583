// An LRU cache of decoded tiles and of verified unfiltered tiles re-read by warm reads,
// bounded in bytes (a Context's: TESSERA_TILE_CACHE_MB, default 256).  Keys are (serial
// number of the opened Fragment, blob offset): fragments are immutable, so entries never
// go stale, and serials are never reused (inode numbers are, once consolidation unlinks
// files).  A closed fragment drops its entries (drop): they could never be hit again.
#pragma once
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <map>

namespace tessera {

class TileCache {
 public:
  struct Key {
    uint64_t serial, offset;
    bool operator==(const Key& o) const { return serial == o.serial && offset == o.offset; }
    bool operator<(const Key& o) const { return serial != o.serial ? serial < o.serial : offset < o.offset; }
  };
  explicit TileCache(uint64_t budget) : budget_(budget) {}
  std::shared_ptr<const void> get(const Key& k);
  void put(const Key& k, std::shared_ptr<const void> v, uint64_t bytes);
  uint64_t budget() const { return budget_; }
  uint64_t used();  // bytes of the tiles held now
  // The largest entry put() accepts: one tile may not evict most of the cache.
  uint64_t max_entry() const { return budget_ / 4; }
  // Removes every entry of fragment `serial` (the fragment is being closed).
  void drop(uint64_t serial);

 private:
  struct Item {
    Key key;
    std::shared_ptr<const void> value;
    uint64_t bytes;
  };
  std::mutex mu_;
  uint64_t budget_, used_ = 0;
  std::list<Item> lru_;  // front = most recent
  // Ordered by serial first: drop() erases one fragment's entries as one range.
  std::map<Key, std::list<Item>::iterator> map_;
};

}  // namespace tessera
