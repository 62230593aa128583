#include "engine/layout.h"

#include <algorithm>
#include <utility>

#include "engine/error.h"

namespace tessera {

Layout::Layout(const Schema& s)
    : rank_(s.rank()), tile_extent_(s.tile_extent), max_extent_(s.max_extent),
      cell_order_(s.cell_order), tile_order_(s.tile_order) {
  for (int d = 0; d < rank_; ++d) {
    const uint64_t t = tile_extent_[d];
    tile_shift_[d] = t != 0 && (t & (t - 1)) == 0 ? __builtin_ctzll(t) : -1;
  }
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

int Layout::compare_tiles(const uint64_t* a, const uint64_t* b) const {
  if (tile_order_ == Order::kRowMajor) {
    for (int d = 0; d < rank_; ++d)
      if (a[d] != b[d]) return a[d] < b[d] ? -1 : 1;
  } else {
    for (int d = rank_ - 1; d >= 0; --d)
      if (a[d] != b[d]) return a[d] < b[d] ? -1 : 1;
  }
  return 0;
}

void Layout::key_words(const uint64_t* c, uint64_t* out) const {
  // Words 0..rank-1: tile coordinates in tile order; rank..2rank-1: in-tile offsets in
  // cell order.  Lexicographic order of the words is the global order.
  for (int i = 0; i < rank_; ++i) {
    int d = tile_order_ == Order::kRowMajor ? i : rank_ - 1 - i;
    out[i] = tile_shift_[d] >= 0 ? c[d] >> tile_shift_[d] : c[d] / tile_extent_[d];
    int e = cell_order_ == Order::kRowMajor ? i : rank_ - 1 - i;
    out[rank_ + i] = tile_shift_[e] >= 0 ? c[e] & (tile_extent_[e] - 1) : c[e] % tile_extent_[e];
  }
}

int Layout::compare_cells(const uint64_t* a, const uint64_t* b) const {
  uint64_t ka[2 * kMaxRank], kb[2 * kMaxRank];
  key_words(a, ka);
  key_words(b, kb);
  for (int i = 0; i < 2 * rank_; ++i)
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
  const int w = 2 * rank_;
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
    tdim[i] = tile_order_ == Order::kRowMajor ? i : r - 1 - i;
    cdim[i] = cell_order_ == Order::kRowMajor ? i : r - 1 - i;
  }
  for (int i = 0; i < r; ++i) {
    tbits[i] = bit_width(maxc[tdim[i]] / tile_extent_[tdim[i]]);
    cbits[i] = bit_width(std::min(maxc[cdim[i]], tile_extent_[cdim[i]] - 1));
    total += tbits[i] + cbits[i];
    low += cbits[i];
  }
  if (total > 64) return false;
  if (cell_bits) *cell_bits = low;
  if (key_bits) *key_bits = total;
  keys->resize(n);
  uint64_t* out = keys->data();
  uint64_t q[kMaxRank], rem[kMaxRank];
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
    for (int j = 0; j < r; ++j) k = shl(k, tbits[j]) | q[tdim[j]];
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
  const int w = 2 * rank_;
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
