// The global cell order of an array (TileDB §2): tiles in tile order, cells within a tile
// in cell order.  Everything that sorts or linearizes cells goes through this class: the
// tile orders row-major, column-major, Z-order, Hilbert and MultiMap-style
// (docs/layouts.md) are implemented here and nowhere else.  Cell orders are row- or
// column-major (strided runs; Schema::validate).
#pragma once
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "engine/geometry/box.h"
#include "engine/schema/schema.h"

namespace tessera {

class Layout {
 public:
  // The schema's order: the one new fragments take.
  explicit Layout(const Schema& s);
  // Schema s's tiling in order `o`: a fragment's own (Fragment::layout), or a
  // conversion's target.
  Layout(const Schema& s, const StorageOrder& o);
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
  // The first tile of box `b` in tile order.  Every order but Hilbert grows with each
  // coordinate, so that is the lo corner's tile; a Hilbert curve can enter a box anywhere
  // on its border, so there every tile of the box is compared.
  void first_tile(const Box& b, uint64_t* out) const;
  // A tile's order key: tile_key_size() words whose lexicographic order is the tile order.
  int tile_key_size() const { return tile_words_; }
  void tile_key(const uint64_t* tile, uint64_t* out) const;
  Order tile_order() const { return tile_order_; }
  Order cell_order() const { return cell_order_; }
  StorageOrder order() const { return {tile_order_, cell_order_, cube_}; }
  // for_each_tile sorts the tiles of a box under a space-filling order: at most this many.
  static constexpr uint64_t kMaxSortedTiles = uint64_t{1} << 24;
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
  // order (its tile's tile_key, then in-tile offsets in cell order).
  int key_size() const { return tile_words_ + rank_; }
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
  int tile_words_;  // words of a tile key: rank, or rank + 1 for MultiMap (cube, in-cube index)
  // MultiMap: the basic cube and the dimensions fastest-first (multimap.h).
  Coords cube_;
  int mm_dims_[kMaxRank];
  [[noreturn]] static void too_many_tiles(uint64_t n);
  bool linear() const { return tile_order_ == Order::kRowMajor || tile_order_ == Order::kColMajor; }
  // packed_keys' tile part for the space-filling orders (packed_tile_bits: Z-order and
  // Hilbert only; false when it needs more than 64 bits).
  bool packed_tile_bits(const uint64_t* maxc, int* bits) const;
  uint64_t packed_tile_key(const uint64_t* tile) const;
};

template <class F>
void Layout::for_each_tile(const Box& b, F f) const {
  Coords t0(rank_), t1(rank_), t(rank_);
  uint64_t n = 1;
  for (int d = 0; d < rank_; ++d) {
    t0[d] = b.lo[d] / tile_extent_[d];
    t1[d] = b.hi[d] / tile_extent_[d];
    const uint64_t len = t1[d] - t0[d] + 1;
    n = n > kMaxSortedTiles / len ? kMaxSortedTiles + 1 : n * len;
  }
  if (!linear() && n > kMaxSortedTiles) too_many_tiles(n);
  t = t0;
  // Linear orders: the fastest-varying dimension of the tile order advances first.
  // Space-filling orders: the odometer's tiles, sorted by their keys.
  const bool row = tile_order_ != Order::kColMajor;
  std::vector<uint64_t> keyed;  // (key words, tile) per tile
  const int kw = tile_words_ + rank_;
  if (!linear()) keyed.reserve(n * kw);
  for (;;) {
    if (linear()) {
      f(static_cast<const Coords&>(t));
    } else {
      keyed.resize(keyed.size() + kw);
      uint64_t* k = &keyed[keyed.size() - kw];
      tile_key(t.data(), k);
      std::copy(t.begin(), t.end(), k + tile_words_);
    }
    int i = 0;
    for (; i < rank_; ++i) {
      const int d = row ? rank_ - 1 - i : i;
      if (t[d]++ < t1[d]) break;
      t[d] = t0[d];
    }
    if (i == rank_) break;
  }
  if (linear()) return;
  std::vector<uint32_t> idx(n);
  for (uint64_t i = 0; i < n; ++i) idx[i] = static_cast<uint32_t>(i);
  const int tw = tile_words_;
  std::sort(idx.begin(), idx.end(), [&](uint32_t x, uint32_t y) {
    return std::lexicographical_compare(&keyed[size_t(x) * kw], &keyed[size_t(x) * kw] + tw, &keyed[size_t(y) * kw],
                                        &keyed[size_t(y) * kw] + tw);
  });
  for (uint32_t i : idx) {
    std::copy(&keyed[size_t(i) * kw + tw], &keyed[size_t(i) * kw + kw], t.begin());
    f(static_cast<const Coords&>(t));
  }
}

}  // namespace tessera
