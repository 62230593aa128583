// The per-array write buffer (the NDBlaze idea, TileDB's unsorted writes): small and
// scattered writes land here instead of becoming one tiny fragment each.  Cells are kept
// in arrival order and sorted into global order, newest write winning, only when needed
// (a read, a spill); a spill turns the whole buffer into one fragment.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "engine/geometry/box.h"
#include "engine/schema/layout.h"
#include "engine/schema/schema.h"

namespace tessera {

class WriteBuffer {
 public:
  explicit WriteBuffer(const Schema& s) : layout_(s), rank_(s.rank()), es_(s.elem_size) {}

  // Appends cells; later cells win over earlier ones at the same coordinates.
  // `scattered`: the cells are points (H5Sselect_elements), not pieces of boxes.
  void add(const uint64_t* coords, const uint8_t* values, size_t n, bool scattered = false);
  // Every cell since the last clear() came from point writes (a spill then stores the
  // values with a fast codec: FragmentWriter::set_values_pipeline).
  bool scattered() const { return scattered_; }
  // Point writes taking over `coords` (n * rank words): an empty buffer adopts them.
  void add(std::vector<uint64_t>&& coords, const uint8_t* values, size_t n);
  size_t cells() const { return n_; }
  bool empty() const { return n_ == 0; }
  // Approximate memory held, in bytes.
  uint64_t bytes() const {
    return coords_.capacity() * 8 + values_.capacity() + packed_.capacity() * 8 + keys_.capacity() * 8;
  }

  // Sorts into global order and removes overwritten duplicates (idempotent, cheap when
  // already normalized).  After it, coords()/values() list unique cells in global order.
  void normalize();
  const std::vector<uint64_t>& coords() const { return coords_; }
  const std::vector<uint8_t>& values() const { return values_; }
  // Global-order keys of the normalized cells (layout.key_size() words each).  Computed
  // on first use: a spill never needs them.
  const std::vector<uint64_t>& keys() const;
  // After normalize(): one word per cell in global order (Layout::packed_keys), and the
  // number of low bits that hold the in-tile offset, so `key >> cell_bits()` names the
  // tile; null when the cells' keys do not fit one word.
  const uint64_t* packed_keys() const { return packed_ok_ ? packed_.data() : nullptr; }
  int cell_bits() const { return cell_bits_; }

  // For a spill: calls fn(tile, coords, values, n, bbox) for each tile holding cells, in
  // tile order, with that tile's unique cells (newest write winning) in global order and
  // their bounding box.  Unsorted cells are not moved: their order is computed on the
  // side and each tile's cells are copied into a small reused buffer, so spilling
  // 100,000 scattered cells touches no second copy of the whole buffer (fresh pages cost
  // more than the sort here).  The buffer is left as it was, or normalized.
  using TileFn = std::function<void(const uint64_t* tile, const uint64_t* coords, const uint8_t* values, size_t n,
                                    const Box& bbox)>;
  void for_each_tile(const TileFn& fn);

  // Drops every cell inside `b` (a newer dense write replaced them).
  void erase_inside(const Box& b);
  // Drops every cell `p` (its coordinates) says to (an erase of scattered cells).
  void erase_where(const std::function<bool(const uint64_t*)>& p);
  // Drops every cell outside `b` (the extent shrank).
  void erase_outside(const Box& b);
  void clear();
  // A new layout after a schema change (tiling never changes, extents may).
  void reset_layout(const Schema& s) {
    layout_ = Layout(s);
    keys_valid_ = false;
  }

 private:
  template <class Pred>
  void erase_if(Pred p);
  // The cells' packed keys sorted stably: kIndexed = each word is (key << ib | arrival
  // index); kKeys = the keys fit a word but not beside the index (rec holds them unsorted);
  // kNone = they do not fit a word.
  enum class Order { kNone, kKeys, kIndexed };
  Order sorted_records(std::vector<uint64_t>* rec, int* ib, int* cell_bits) const;
  Layout layout_;
  int rank_;
  uint32_t es_;
  std::vector<uint64_t> coords_;
  std::vector<uint8_t> values_;
  std::vector<uint64_t> packed_;        // valid while sorted_ && packed_ok_
  mutable std::vector<uint64_t> keys_;  // valid while sorted_ && keys_valid_
  mutable bool keys_valid_ = true;
  bool packed_ok_ = false;
  int cell_bits_ = 0;
  size_t n_ = 0;
  bool sorted_ = true;
  bool scattered_ = true;
};

}  // namespace tessera
