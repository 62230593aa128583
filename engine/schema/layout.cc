#include "engine/schema/layout.h"

#include <algorithm>
#include <string>
#include <utility>

#include "engine/geometry/curve.h"
#include "engine/util/error.h"
#include "engine/schema/multimap.h"

namespace tessera {

Layout::Layout(const Schema& s) : Layout(s, s.order()) {}

Layout::Layout(const Schema& s, const StorageOrder& o)
    : rank_(s.rank()), tile_extent_(s.tile_extent), max_extent_(s.max_extent),
      cell_order_(o.cell), tile_order_(o.tile),
      tile_words_(o.tile == Order::kMultiMap ? s.rank() + 1 : s.rank()), cube_(o.cube) {
  for (int d = 0; d < rank_; ++d) {
    const uint64_t t = tile_extent_[d];
    tile_shift_[d] = t != 0 && (t & (t - 1)) == 0 ? __builtin_ctzll(t) : -1;
  }
  multimap_dims(cell_order_, rank_, mm_dims_);
  if (tile_order_ == Order::kMultiMap && cube_.size() != static_cast<size_t>(rank_))
    throw_error(Errc::kInvalidArgument, "multimap tile order without a basic cube");
}

void Layout::too_many_tiles(uint64_t n) {
  throw_error(Errc::kUnsupported, "a box over " + std::to_string(n) +
                                      " tiles is too large to order by a space-filling tile order at once (at most " +
                                      std::to_string(kMaxSortedTiles) + ")");
}

Box Layout::tile_box(const uint64_t* tile) const {
  Box b;
  b.lo.resize(rank_);
  b.hi.resize(rank_);
  for (int d = 0; d < rank_; ++d) {
    b.lo[d] = tile[d] * tile_extent_[d];
    b.hi[d] = b.lo[d] + tile_extent_[d] - 1;
    if (max_extent_[d] != kUnlimited && max_extent_[d] > 0) b.hi[d] = std::min(b.hi[d], max_extent_[d] - 1);
  }
  return b;
}

void Layout::tile_key(const uint64_t* t, uint64_t* out) const {
  switch (tile_order_) {
    case Order::kRowMajor:
      for (int i = 0; i < rank_; ++i) out[i] = t[i];
      return;
    case Order::kColMajor:
      for (int i = 0; i < rank_; ++i) out[i] = t[rank_ - 1 - i];
      return;
    case Order::kZOrder:
      morton_words(t, rank_, out);
      return;
    case Order::kHilbert:
      hilbert_words(t, rank_, out);
      return;
    case Order::kMultiMap: {
      // The basic cube's coordinates, slowest dimension first; then the tile's index in
      // its cube, the track dimension fastest (multimap.h).
      uint64_t in = 0, stride = 1;
      for (int i = 0; i < rank_; ++i) {
        const int d = mm_dims_[i];
        out[rank_ - 1 - i] = t[d] / cube_[d];
        in += (t[d] % cube_[d]) * stride;
        stride *= cube_[d];
      }
      out[rank_] = in;
      return;
    }
  }
}

int Layout::compare_tiles(const uint64_t* a, const uint64_t* b) const {
  if (tile_order_ == Order::kRowMajor) {
    for (int d = 0; d < rank_; ++d)
      if (a[d] != b[d]) return a[d] < b[d] ? -1 : 1;
    return 0;
  }
  if (tile_order_ == Order::kColMajor) {
    for (int d = rank_ - 1; d >= 0; --d)
      if (a[d] != b[d]) return a[d] < b[d] ? -1 : 1;
    return 0;
  }
  uint64_t ka[kMaxRank + 1], kb[kMaxRank + 1];
  tile_key(a, ka);
  tile_key(b, kb);
  for (int i = 0; i < tile_words_; ++i)
    if (ka[i] != kb[i]) return ka[i] < kb[i] ? -1 : 1;
  return 0;
}

void Layout::first_tile(const Box& b, uint64_t* out) const {
  tile_of(b.lo.data(), out);
  if (tile_order_ != Order::kHilbert) return;
  uint64_t hi[kMaxRank], t[kMaxRank], best[kMaxRank + 1], k[kMaxRank + 1];
  tile_of(b.hi.data(), hi);
  std::copy(out, out + rank_, t);
  tile_key(t, best);
  for (;;) {  // the box's tiles in row-major order: only their keys' minimum matters
    int d = rank_ - 1;
    for (; d >= 0; --d) {
      if (t[d]++ < hi[d]) break;
      t[d] = b.lo[d] / tile_extent_[d];
    }
    if (d < 0) return;
    tile_key(t, k);
    if (std::lexicographical_compare(k, k + tile_words_, best, best + tile_words_)) {
      std::copy(k, k + tile_words_, best);
      std::copy(t, t + rank_, out);
    }
  }
}

void Layout::key_words(const uint64_t* c, uint64_t* out) const {
  // Words 0..tile_words-1: the tile's key; then the in-tile offsets in cell order.
  // Lexicographic order of the words is the global order.
  uint64_t t[kMaxRank];
  tile_of(c, t);
  tile_key(t, out);
  for (int i = 0; i < rank_; ++i) {
    int e = cell_order_ == Order::kRowMajor ? i : rank_ - 1 - i;
    out[tile_words_ + i] = tile_shift_[e] >= 0 ? c[e] & (tile_extent_[e] - 1) : c[e] % tile_extent_[e];
  }
}

int Layout::compare_cells(const uint64_t* a, const uint64_t* b) const {
  uint64_t ka[3 * kMaxRank], kb[3 * kMaxRank];
  key_words(a, ka);
  key_words(b, kb);
  for (int i = 0; i < key_size(); ++i)
    if (ka[i] != kb[i]) return ka[i] < kb[i] ? -1 : 1;
  return 0;
}

void Layout::cell_strides(const Box& b, uint64_t* strides) const {
  uint64_t s = 1;
  if (cell_order_ == Order::kRowMajor) {
    for (int d = rank_ - 1; d >= 0; --d) {
      strides[d] = s;
      s *= b.hi[d] - b.lo[d] + 1;
    }
  } else {
    for (int d = 0; d < rank_; ++d) {
      strides[d] = s;
      s *= b.hi[d] - b.lo[d] + 1;
    }
  }
}

void Layout::cell_at(const Box& b, uint64_t k, uint64_t* cell) const {
  // The fastest-varying dimension of the cell order holds the remainder.
  const bool row = cell_order_ == Order::kRowMajor;
  for (int i = 0; i < rank_; ++i) {
    const int d = row ? rank_ - 1 - i : i;
    const uint64_t len = b.hi[d] - b.lo[d] + 1;
    cell[d] = b.lo[d] + k % len;
    k /= len;
  }
}

std::pair<size_t, size_t> Layout::key_range(const uint64_t* keys, size_t n, const uint64_t* klo,
                                            const uint64_t* khi) const {
  const int w = key_size();
  auto less = [w](const uint64_t* a, const uint64_t* b) {
    for (int j = 0; j < w; ++j)
      if (a[j] != b[j]) return a[j] < b[j];
    return false;
  };
  size_t a = 0, b = n;
  while (a < b) {  // first key >= klo
    size_t mid = (a + b) / 2;
    if (less(keys + mid * w, klo)) a = mid + 1;
    else b = mid;
  }
  size_t first = a;
  b = n;
  while (a < b) {  // first key > khi
    size_t mid = (a + b) / 2;
    if (!less(khi, keys + mid * w)) a = mid + 1;
    else b = mid;
  }
  return {first, a};
}

namespace {
int bit_width(uint64_t v) { return v ? 64 - __builtin_clzll(v) : 0; }
uint64_t shl(uint64_t v, int b) { return b >= 64 ? 0 : v << b; }
}  // namespace

bool Layout::packed_tile_bits(const uint64_t* maxt, int* bits) const {
  // Z-order, Hilbert: tile coordinates of at most b bits have curve indexes of at most
  // rank * b bits.
  int b = 0;
  for (int d = 0; d < rank_; ++d) b = std::max(b, bit_width(maxt[d]));
  *bits = b * rank_;
  return *bits <= 64;
}

uint64_t Layout::packed_tile_key(const uint64_t* t) const {
  uint64_t w[kMaxRank + 1];
  tile_key(t, w);
  // Z-order, Hilbert: the leading words are zero (packed_tile_bits).  MultiMap: the
  // in-cube index (packed_keys puts the cube coordinates above it).
  return tile_order_ == Order::kMultiMap ? w[rank_] : w[rank_ - 1];
}

bool Layout::packed_keys(const uint64_t* coords, size_t n, std::vector<uint64_t>* keys, int* cell_bits,
                         int* key_bits) const {
  // Field widths from the largest coordinate per dimension: one cheap pass, and then each
  // key is built with one division (or shift) per dimension, straight into `keys`.
  const int r = rank_;
  uint64_t maxc[kMaxRank] = {};
  for (size_t i = 0; i < n; ++i)
    for (int d = 0; d < r; ++d) maxc[d] = std::max(maxc[d], coords[i * r + d]);
  int tdim[kMaxRank], cdim[kMaxRank], tbits[kMaxRank], cbits[kMaxRank];
  int total = 0, low = 0;
  for (int i = 0; i < r; ++i) {
    tdim[i] = tile_order_ == Order::kColMajor ? r - 1 - i : i;
    cdim[i] = cell_order_ == Order::kRowMajor ? i : r - 1 - i;
  }
  uint64_t maxt[kMaxRank];
  for (int d = 0; d < r; ++d) maxt[d] = maxc[d] / tile_extent_[d];
  // MultiMap: widths of the cube coordinates, slowest dimension first (tile_key's words).
  int mbits[kMaxRank] = {}, mdim[kMaxRank] = {}, inbits = 0;
  for (int i = 0; i < r; ++i) {
    cbits[i] = bit_width(std::min(maxc[cdim[i]], tile_extent_[cdim[i]] - 1));
    low += cbits[i];
  }
  if (linear()) {
    for (int i = 0; i < r; ++i) total += tbits[i] = bit_width(maxt[tdim[i]]);
  } else if (tile_order_ == Order::kMultiMap) {
    uint64_t vol = 1;
    for (int i = 0; i < r; ++i) {
      mdim[i] = mm_dims_[r - 1 - i];
      total += mbits[i] = bit_width(maxt[mdim[i]] / cube_[mdim[i]]);
      vol *= cube_[mdim[i]];
    }
    total += inbits = bit_width(vol - 1);
  } else if (!packed_tile_bits(maxt, &total)) {
    return false;
  }
  total += low;
  if (total > 64) return false;
  if (cell_bits) *cell_bits = low;
  if (key_bits) *key_bits = total;
  keys->resize(n);
  uint64_t* out = keys->data();
  uint64_t q[kMaxRank], rem[kMaxRank], last_q[kMaxRank];
  uint64_t last_tile = 0;
  bool have_last = false;
  for (size_t i = 0; i < n; ++i) {
    const uint64_t* c = coords + i * r;
    for (int d = 0; d < r; ++d) {
      if (tile_shift_[d] >= 0) {
        q[d] = c[d] >> tile_shift_[d];
        rem[d] = c[d] & (tile_extent_[d] - 1);
      } else {
        q[d] = c[d] / tile_extent_[d];
        rem[d] = c[d] - q[d] * tile_extent_[d];
      }
    }
    uint64_t k = 0;
    if (linear()) {
      for (int j = 0; j < r; ++j) k = shl(k, tbits[j]) | q[tdim[j]];
    } else {
      // Cells come in runs of one tile: a curve index is computed once per run.
      if (!have_last || !std::equal(q, q + r, last_q)) {
        if (tile_order_ == Order::kMultiMap) {
          last_tile = 0;
          for (int j = 0; j < r; ++j) last_tile = shl(last_tile, mbits[j]) | q[mdim[j]] / cube_[mdim[j]];
          last_tile = shl(last_tile, inbits) | packed_tile_key(q);
        } else {
          last_tile = packed_tile_key(q);
        }
        std::copy(q, q + r, last_q);
        have_last = true;
      }
      k = last_tile;
    }
    for (int j = 0; j < r; ++j) k = shl(k, cbits[j]) | rem[cdim[j]];
    out[i] = k;
  }
  return true;
}

std::vector<uint32_t> Layout::sort_global(const uint64_t* coords, size_t n) const {
  if (n > UINT32_MAX) throw_error(Errc::kInvalidArgument, "too many cells to sort at once");
  std::vector<uint32_t> perm(n);
  for (size_t i = 0; i < n; ++i) perm[i] = static_cast<uint32_t>(i);
  std::vector<uint64_t> packed;
  if (packed_keys(coords, n, &packed)) {
    std::stable_sort(perm.begin(), perm.end(), [&](uint32_t a, uint32_t b) { return packed[a] < packed[b]; });
    return perm;
  }
  const int w = key_size();
  std::vector<uint64_t> words(n * w);
  for (size_t i = 0; i < n; ++i) key_words(coords + i * rank_, &words[i * w]);
  std::stable_sort(perm.begin(), perm.end(), [&](uint32_t a, uint32_t b) {
    const uint64_t* ka = &words[size_t(a) * w];
    const uint64_t* kb = &words[size_t(b) * w];
    for (int j = 0; j < w; ++j)
      if (ka[j] != kb[j]) return ka[j] < kb[j];
    return false;
  });
  return perm;
}

}  // namespace tessera
