// The global cell order of an array (TileDB §2): tiles in tile order, cells within a tile
// in cell order.  Everything that sorts or linearizes cells goes through this class, so a
// new order (Z-order, Hilbert, MultiMap) is added here and nowhere else.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "engine/box.h"
#include "engine/schema.h"

namespace tessera {

class Layout {
 public:
  explicit Layout(const Schema& s);
  int rank() const { return rank_; }
  const Coords& tile_extent() const { return tile_extent_; }

  void tile_of(const uint64_t* cell, uint64_t* tile) const {
    for (int d = 0; d < rank_; ++d)
      tile[d] = tile_shift_[d] >= 0 ? cell[d] >> tile_shift_[d] : cell[d] / tile_extent_[d];
  }
  // The tile's box, clipped to the maximum extent where that is bounded.
  Box tile_box(const uint64_t* tile) const;
  // Orders tile coordinates by the tile order: <0, 0, >0.
  int compare_tiles(const uint64_t* a, const uint64_t* b) const;
  // Orders cells by the global order.
  int compare_cells(const uint64_t* a, const uint64_t* b) const;
  // Element strides of the cells of box `b` when stored in cell order.
  void cell_strides(const Box& b, uint64_t* strides) const;
  // The k-th cell of box `b` in cell order (the inverse of cell_strides' linearization).
  void cell_at(const Box& b, uint64_t k, uint64_t* cell) const;
  // Calls f(tile coordinates) for every tile overlapping box `b`, in tile order.
  template <class F>
  void for_each_tile(const Box& b, F f) const;
  // A cell's global-order key: key_size() words whose lexicographic order is the global
  // order (tile coordinates in tile order, then in-tile offsets in cell order).
  int key_size() const { return 2 * rank_; }
  void key_words(const uint64_t* cell, uint64_t* out) const;
  // For n cells with precomputed keys (n * key_size() words, ascending): the [first, last)
  // range of cells whose key lies in [klo, khi].  When klo/khi are the keys of the corners
  // of a box inside one tile, every cell of the box lies in that range.
  std::pair<size_t, size_t> key_range(const uint64_t* keys, size_t n, const uint64_t* klo,
                                      const uint64_t* khi) const;
  // One word per cell whose order is the global order (the key words bit-packed, widths
  // fitted to the largest coordinates of these cells); false when they need more than 64
  // bits.  `cell_bits`: how many low bits hold the in-tile offsets (key >> cell_bits names
  // the tile); `key_bits`: the bits used in all.
  bool packed_keys(const uint64_t* coords, size_t n, std::vector<uint64_t>* keys, int* cell_bits = nullptr,
                   int* key_bits = nullptr) const;
  // Stable sort of n cells (coords[n*rank]) into global order: returns the permutation.
  std::vector<uint32_t> sort_global(const uint64_t* coords, size_t n) const;

 private:
  int rank_;
  Coords tile_extent_, max_extent_;
  // log2 of each tile extent when it is a power of two (shift and mask instead of a
  // division: HDF5 chunk shapes usually are), else -1.
  int tile_shift_[kMaxRank];
  Order cell_order_, tile_order_;
};

template <class F>
void Layout::for_each_tile(const Box& b, F f) const {
  Coords t0(rank_), t1(rank_), t(rank_);
  for (int d = 0; d < rank_; ++d) {
    t0[d] = b.lo[d] / tile_extent_[d];
    t1[d] = b.hi[d] / tile_extent_[d];
  }
  t = t0;
  // The fastest-varying dimension of the tile order advances first.
  const bool row = tile_order_ == Order::kRowMajor;
  for (;;) {
    f(static_cast<const Coords&>(t));
    int i = 0;
    for (; i < rank_; ++i) {
      const int d = row ? rank_ - 1 - i : i;
      if (t[d]++ < t1[d]) break;
      t[d] = t0[d];
    }
    if (i == rank_) return;
  }
}

}  // namespace tessera
