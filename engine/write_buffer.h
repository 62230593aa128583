// The per-array write buffer (the NDBlaze idea, TileDB's unsorted writes): small and
// scattered writes land here instead of becoming one tiny fragment each.  Cells are kept
// in arrival order and sorted into global order, newest write winning, only when needed
// (a read, a spill); a spill turns the whole buffer into one fragment.
#pragma once
#include <cstdint>
#include <vector>

#include "engine/box.h"
#include "engine/layout.h"
#include "engine/schema.h"

namespace tessera {

class WriteBuffer {
 public:
  explicit WriteBuffer(const Schema& s) : layout_(s), rank_(s.rank()), es_(s.elem_size) {}

  // Appends cells; later cells win over earlier ones at the same coordinates.
  void add(const uint64_t* coords, const uint8_t* values, size_t n);
  size_t cells() const { return n_; }
  bool empty() const { return n_ == 0; }
  // Approximate memory held, in bytes.
  uint64_t bytes() const { return coords_.capacity() * 8 + values_.capacity(); }

  // Sorts into global order and removes overwritten duplicates (idempotent, cheap when
  // already normalized).  After it, coords()/values() list unique cells in global order.
  void normalize();
  const std::vector<uint64_t>& coords() const { return coords_; }
  const std::vector<uint8_t>& values() const { return values_; }
  // Global-order keys of the normalized cells (layout.key_size() words each).
  const std::vector<uint64_t>& keys() const { return keys_; }

  // Drops every cell inside `b` (a newer dense write replaced them).
  void erase_inside(const Box& b);
  // Drops every cell outside `b` (the extent shrank).
  void erase_outside(const Box& b);
  void clear();
  // A new layout after a schema change (tiling never changes, extents may).
  void reset_layout(const Schema& s) {
    layout_ = Layout(s);
    if (sorted_) compute_keys();
  }

 private:
  template <class Pred>
  void erase_if(Pred p);
  void compute_keys();
  Layout layout_;
  int rank_;
  uint32_t es_;
  std::vector<uint64_t> coords_;
  std::vector<uint8_t> values_;
  std::vector<uint64_t> keys_;  // valid while sorted_
  size_t n_ = 0;
  bool sorted_ = true;
};

}  // namespace tessera
