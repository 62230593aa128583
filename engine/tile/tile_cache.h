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
  // Records a warm re-read of the `bytes` of tile `k` and says whether the same tile was
  // read within the last budget() bytes of such reads (its reuse distance fits the cache).
  // Caching a tile pays only then: a loop over more tiles than the cache holds would
  // otherwise allocate and fill an entry on every read and never hit one (LRU's worst case).
  bool reread_recently(const Key& k, uint64_t bytes);
  // Around a fork (context.cc's handlers): the lock is taken before it, so the child's
  // copy is never caught mid-change by a thread it does not have, and released after it.
  void lock_for_fork() { mu_.lock(); }
  void unlock_after_fork() { mu_.unlock(); }

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
  // Warm re-reads seen (reread_recently): the read clock, in bytes, and each tile's time of
  // its last read.  Bounded: entries older than the budget are useless and pruned.
  uint64_t clock_ = 0;
  std::map<Key, uint64_t> last_read_;
};

}  // namespace tessera
