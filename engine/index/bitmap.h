// bitmap.h — a compressed set of 64-bit positions: CRoaring bitmaps (libroaring, C API),
// one per 2^32 positions ("segment"), kept in a sorted vector.
//
// Value indexes (index_format.h) store one per (chunk, bin) and query results (query.h)
// are one per term; both are mostly runs (neighbouring cells of smooth data fall in the
// same bin), which roaring's run containers hold in 4 bytes per run, and scattered hits
// in 2 bytes each.  CRoaring 0.2.66 (Debian 12) has 32-bit bitmaps only and its C++
// Roaring64Map throws and lacks ranges: this wrapper adds what the engine needs and
// nothing else.  Move-only; a failed allocation throws std::bad_alloc (the engine's
// guard() turns it into a Status).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

struct roaring_bitmap_s;

namespace tessera {

class Bitmap {
 public:
  Bitmap() = default;
  ~Bitmap();
  Bitmap(Bitmap&& o) noexcept : segs_(std::move(o.segs_)) { o.segs_.clear(); }
  Bitmap& operator=(Bitmap&& o) noexcept;
  Bitmap(const Bitmap&) = delete;
  Bitmap& operator=(const Bitmap&) = delete;
  Bitmap copy() const;

  void add(uint64_t x);
  // Adds [lo, hi) (nothing when hi <= lo).
  void add_range(uint64_t lo, uint64_t hi);
  // Adds n positions given in ascending order (cheapest way to add scattered hits).
  void add_sorted(const uint64_t* xs, size_t n);
  // The same for positions below 2^32.
  void add_sorted(const uint32_t* xs, size_t n);
  bool contains(uint64_t x) const;

  // The union of many at once (roaring's or_many: one pass, not a growing bitmap
  // rebuilt per operand).
  static Bitmap union_of(const std::vector<const Bitmap*>& parts);
  void and_with(const Bitmap& o);     // this &= o
  void or_with(const Bitmap& o);      // this |= o
  void andnot_with(const Bitmap& o);  // this -= o
  // Complements the positions in [lo, hi).
  void flip(uint64_t lo, uint64_t hi);
  void clear();

  uint64_t cardinality() const;
  // The largest position (0 when empty).
  uint64_t maximum() const;
  // Positions in [lo, hi).
  uint64_t range_cardinality(uint64_t lo, uint64_t hi) const;
  uint64_t and_cardinality(const Bitmap& o) const;
  bool empty() const;
  // Converts runs of positions to run containers where that is smaller (before storing).
  void run_optimize();

  // Calls fn(first, count) for every maximal run of consecutive positions, ascending.
  void for_each_run(const std::function<void(uint64_t, uint64_t)>& fn) const;
  // Calls fn(xs, n) with the positions in ascending order, in batches.
  void for_each_batch(const std::function<void(const uint64_t*, size_t)>& fn) const;

  // Stored form (docs/format.md, "Index files"): u32 segments, then per segment u32 key
  // (position >> 32), u32 byte length and CRoaring's portable serialization.
  std::vector<uint8_t> serialize() const;
  // Throws kCorrupt naming `what` for anything that is not exactly such bytes.
  static Bitmap deserialize(const uint8_t* p, size_t n, const char* what);
  size_t serialized_bytes() const;

 private:
  roaring_bitmap_s* seg(uint32_t key, bool create);
  const roaring_bitmap_s* find(uint32_t key) const;
  void drop_empty();
  struct Seg {
    uint32_t key;
    roaring_bitmap_s* r;
  };
  std::vector<Seg> segs_;  // ascending keys
};

}  // namespace tessera
