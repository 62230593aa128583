#include "engine/write/write_buffer.h"

#include <algorithm>
#include <cstring>
#include <functional>

namespace tessera {

void WriteBuffer::add(const uint64_t* coords, const uint8_t* values, size_t n, bool scattered) {
  if (n == 0) return;
  scattered_ = scattered_ && scattered;
  coords_.insert(coords_.end(), coords, coords + n * rank_);
  values_.insert(values_.end(), values, values + n * es_);
  n_ += n;
  sorted_ = false;
  packed_ok_ = false;
  keys_valid_ = false;
}

void WriteBuffer::add(std::vector<uint64_t>&& coords, const uint8_t* values, size_t n) {
  if (n_ != 0 || n == 0 || coords.size() != n * rank_) return add(coords.data(), values, n, true);
  coords_ = std::move(coords);
  values_.assign(values, values + n * es_);
  n_ = n;
  scattered_ = true;
  sorted_ = false;
  packed_ok_ = false;
  keys_valid_ = false;
}

namespace {
// Stable LSD radix sort of n records (key, coords, value) by key, 11 bits a pass: linear,
// and it moves the records themselves, so nothing is gathered at random afterwards (for
// 100,000 scattered cells the gathers through a permutation cost more than the sort).
// CB/ES: coordinate and value bytes per cell when known at compile time (0 = use cb/es),
// so the common 2-D cells move with inlined copies instead of memcpy calls.
template <size_t CB, size_t ES>
void radix_sort(std::vector<uint64_t>& key, std::vector<uint64_t>& coords, std::vector<uint8_t>& values,
                size_t n, size_t cb, size_t es) {
  if (CB) cb = CB;
  if (ES) es = ES;
  constexpr int kDigit = 11;
  const uint64_t mask = (uint64_t{1} << kDigit) - 1;
  uint64_t all = 0;
  for (size_t i = 0; i < n; ++i) all |= key[i];
  const int total = all ? 64 - __builtin_clzll(all) : 0;
  std::vector<uint64_t> key2(n), coords2(coords.size());
  std::vector<uint8_t> values2(n * es);
  auto* cs = reinterpret_cast<uint8_t*>(coords.data());
  auto* cd = reinterpret_cast<uint8_t*>(coords2.data());
  std::vector<size_t> count(size_t{1} << kDigit);
  for (int shift = 0; shift < total; shift += kDigit) {
    std::fill(count.begin(), count.end(), 0);
    for (size_t i = 0; i < n; ++i) ++count[(key[i] >> shift) & mask];
    if (count[(key[0] >> shift) & mask] == n) continue;  // one digit value: nothing moves
    size_t sum = 0;
    for (auto& c : count) {
      size_t t = c;
      c = sum;
      sum += t;
    }
    for (size_t i = 0; i < n; ++i) {
      const size_t at = count[(key[i] >> shift) & mask]++;
      key2[at] = key[i];
      std::memcpy(cd + at * (CB ? CB : cb), cs + i * (CB ? CB : cb), CB ? CB : cb);
      std::memcpy(&values2[at * (ES ? ES : es)], &values[i * (ES ? ES : es)], ES ? ES : es);
    }
    key.swap(key2);
    coords.swap(coords2);
    values.swap(values2);
    std::swap(cs, cd);
  }
}

void sort_cells(std::vector<uint64_t>& key, std::vector<uint64_t>& coords, std::vector<uint8_t>& values,
                size_t n, size_t cb, size_t es) {
  if (cb == 16 && es == 4) radix_sort<16, 4>(key, coords, values, n, cb, es);
  else if (cb == 16 && es == 8) radix_sort<16, 8>(key, coords, values, n, cb, es);
  else if (cb == 8 && es == 4) radix_sort<8, 4>(key, coords, values, n, cb, es);
  else if (cb == 8 && es == 8) radix_sort<8, 8>(key, coords, values, n, cb, es);
  else radix_sort<0, 0>(key, coords, values, n, cb, es);
}

int bit_width(uint64_t v) { return v ? 64 - __builtin_clzll(v) : 0; }

// Stable LSD radix sort of words by their bits [lo, lo + bits).  Digits of up to 16 bits
// (fewer for few words, so the counters stay small next to the data): the usual 100,000
// cell spill with 28 key bits takes two passes.  All histograms come from one read pass.
void radix_sort_words(std::vector<uint64_t>& w, int lo, int bits) {
  const size_t n = w.size();
  if (n < 2 || bits == 0) return;
  const int dmax = std::min(16, std::max(8, bit_width(n)));
  const int passes = (bits + dmax - 1) / dmax;
  const int digit = (bits + passes - 1) / passes;
  const size_t buckets = size_t{1} << digit;
  const uint64_t mask = buckets - 1;
  std::vector<uint32_t> count(passes * buckets, 0);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t k = w[i] >> lo;
    for (int p = 0; p < passes; ++p) ++count[p * buckets + ((k >> (p * digit)) & mask)];
  }
  std::vector<uint64_t> tmp(n);
  for (int p = 0; p < passes; ++p) {
    uint32_t* c = &count[p * buckets];
    const int shift = lo + p * digit;
    if (c[(w[0] >> shift) & mask] == n) continue;  // one digit value: nothing moves
    uint32_t sum = 0;
    for (size_t b = 0; b < buckets; ++b) {
      const uint32_t t = c[b];
      c[b] = sum;
      sum += t;
    }
    for (size_t i = 0; i < n; ++i) tmp[c[(w[i] >> shift) & mask]++] = w[i];
    w.swap(tmp);
  }
}

uint64_t shr(uint64_t v, int b) { return b >= 64 ? 0 : v >> b; }

// Copies the cells named by sorted records [b, e) into nc/nv, keeping only the last
// (newest) of equal keys; with `keys`, keys[0..out) becomes the kept cells' keys (keys
// may be rec itself: out <= i, so no record still to be read is overwritten).
template <size_t CB, size_t ES>
size_t gather_unique(const uint64_t* rec, size_t b, size_t e, int ib, const uint64_t* coords,
                     const uint8_t* values, uint64_t* nc, uint8_t* nv, uint64_t* keys, size_t cb, size_t es) {
  if (CB) cb = CB;
  if (ES) es = ES;
  const uint64_t imask = (uint64_t{1} << ib) - 1;  // ib <= 32
  auto* cd = reinterpret_cast<uint8_t*>(nc);
  const auto* cs = reinterpret_cast<const uint8_t*>(coords);
  size_t out = 0;
  for (size_t i = b; i < e; ++i) {
    const uint64_t r = rec[i], k = r >> ib;
    if (i + 1 < e && (rec[i + 1] >> ib) == k) continue;  // a newer write to this cell follows
    const size_t idx = static_cast<size_t>(r & imask);
    std::memcpy(cd + out * (CB ? CB : cb), cs + idx * (CB ? CB : cb), CB ? CB : cb);
    std::memcpy(nv + out * (ES ? ES : es), values + idx * (ES ? ES : es), ES ? ES : es);
    if (keys) keys[out] = k;
    ++out;
  }
  return out;
}

size_t gather_cells(const uint64_t* rec, size_t b, size_t e, int ib, const uint64_t* coords,
                    const uint8_t* values, uint64_t* nc, uint8_t* nv, uint64_t* keys, size_t cb, size_t es) {
  if (cb == 16 && es == 4) return gather_unique<16, 4>(rec, b, e, ib, coords, values, nc, nv, keys, cb, es);
  if (cb == 16 && es == 8) return gather_unique<16, 8>(rec, b, e, ib, coords, values, nc, nv, keys, cb, es);
  if (cb == 8 && es == 4) return gather_unique<8, 4>(rec, b, e, ib, coords, values, nc, nv, keys, cb, es);
  if (cb == 8 && es == 8) return gather_unique<8, 8>(rec, b, e, ib, coords, values, nc, nv, keys, cb, es);
  return gather_unique<0, 0>(rec, b, e, ib, coords, values, nc, nv, keys, cb, es);
}
}  // namespace

WriteBuffer::Order WriteBuffer::sorted_records(std::vector<uint64_t>* rec, int* ib, int* cell_bits) const {
  int key_bits = 0;
  if (n_ == 0 || !layout_.packed_keys(coords_.data(), n_, rec, cell_bits, &key_bits)) return Order::kNone;
  *ib = bit_width(n_ - 1);
  if (*ib > 32 || key_bits + *ib > 64) return Order::kKeys;
  // (key, arrival index) words — 8 bytes a cell instead of whole cells.  The index in
  // the low bits keeps equal keys in arrival order: the newest write is last of its run.
  uint64_t* r = rec->data();
  for (size_t i = 0; i < n_; ++i) r[i] = (r[i] << *ib) | i;
  radix_sort_words(*rec, *ib, key_bits);
  return Order::kIndexed;
}

void WriteBuffer::normalize() {
  if (sorted_) return;
  packed_ok_ = false;
  keys_valid_ = false;
  if (n_ == 0) {
    clear();
    return;
  }
  size_t out = 0;
  const size_t cb = rank_ * 8;
  std::vector<uint64_t> key;
  int cell_bits = 0, ib = 0;
  const Order order = sorted_records(&key, &ib, &cell_bits);
  if (order == Order::kIndexed) {
    // Each cell is copied once, into its place.
    std::vector<uint64_t> c(n_ * rank_);
    std::vector<uint8_t> v(n_ * es_);
    out = gather_cells(key.data(), 0, n_, ib, coords_.data(), values_.data(), c.data(), v.data(), key.data(),
                       cb, es_);
    c.resize(out * rank_);
    v.resize(out * es_);
    key.resize(out);
    coords_ = std::move(c);
    values_ = std::move(v);
  } else if (order == Order::kKeys) {
    // Keys fit a word but not with the index beside them: move whole cells.
    coords_.resize(n_ * rank_);
    values_.resize(n_ * es_);
    sort_cells(key, coords_, values_, n_, cb, es_);
    // Stable: among equal keys (the same cell) the newest write is last and wins.
    for (size_t i = 0; i < n_; ++i) {
      if (i + 1 < n_ && key[i] == key[i + 1]) continue;
      if (out != i) {
        std::memcpy(&coords_[out * rank_], &coords_[i * rank_], cb);
        std::memcpy(&values_[out * es_], &values_[i * es_], es_);
      }
      key[out] = key[i];
      ++out;
    }
    coords_.resize(out * rank_);
    values_.resize(out * es_);
    key.resize(out);
  } else {
    std::vector<uint32_t> perm = layout_.sort_global(coords_.data(), n_);
    // perm is stable: among equal coordinates the newest (largest index) comes last.
    std::vector<uint64_t> c(n_ * rank_);
    std::vector<uint8_t> v(n_ * es_);
    for (size_t i = 0; i < n_; ++i) {
      const uint64_t* ci = &coords_[size_t(perm[i]) * rank_];
      if (i + 1 < n_ && std::memcmp(ci, &coords_[size_t(perm[i + 1]) * rank_], cb) == 0) continue;
      std::memcpy(&c[out * rank_], ci, cb);
      std::memcpy(&v[out * es_], &values_[size_t(perm[i]) * es_], es_);
      ++out;
    }
    c.resize(out * rank_);
    v.resize(out * es_);
    coords_ = std::move(c);
    values_ = std::move(v);
    key.clear();
  }
  packed_ = std::move(key);
  packed_ok_ = order != Order::kNone;
  cell_bits_ = cell_bits;
  n_ = out;
  sorted_ = true;
}

void WriteBuffer::for_each_tile(const TileFn& fn) {
  if (n_ == 0) return;
  std::vector<uint64_t> rec;
  int ib = 0, cell_bits = 0;
  const bool indexed = !sorted_ && sorted_records(&rec, &ib, &cell_bits) == Order::kIndexed;
  if (!indexed) {
    normalize();
    cell_bits = cell_bits_;
  }
  const size_t n = indexed ? rec.size() : n_;
  const size_t cb = rank_ * 8;
  // Tile-order keys of record i (the bits above the in-tile offset), when known.
  const uint64_t* words = indexed ? rec.data() : packed_keys();
  const int low = (indexed ? ib : 0) + cell_bits;
  std::vector<uint64_t> gc;
  std::vector<uint8_t> gv;
  uint64_t ti[kMaxRank], tj[kMaxRank];
  Box bb{Coords(rank_), Coords(rank_)};
  size_t i = 0;
  while (i < n) {
    size_t j = i + 1;
    if (words) {
      const uint64_t t = shr(words[i], low);
      while (j < n && shr(words[j], low) == t) ++j;
    } else {
      layout_.tile_of(&coords_[i * rank_], ti);
      for (; j < n; ++j) {
        layout_.tile_of(&coords_[j * rank_], tj);
        if (std::memcmp(ti, tj, cb) != 0) break;
      }
    }
    const uint64_t* cs;
    const uint8_t* vs;
    size_t m;
    if (indexed) {  // this tile's cells only: a small buffer, reused
      gc.resize((j - i) * rank_);
      gv.resize((j - i) * es_);
      m = gather_cells(rec.data(), i, j, ib, coords_.data(), values_.data(), gc.data(), gv.data(), nullptr, cb, es_);
      cs = gc.data();
      vs = gv.data();
    } else {
      cs = &coords_[i * rank_];
      vs = &values_[i * es_];
      m = j - i;
    }
    layout_.tile_of(cs, ti);
    for (int d = 0; d < rank_; ++d) bb.lo[d] = bb.hi[d] = cs[d];
    for (size_t c = 1; c < m; ++c)
      for (int d = 0; d < rank_; ++d) {
        bb.lo[d] = std::min(bb.lo[d], cs[c * rank_ + d]);
        bb.hi[d] = std::max(bb.hi[d], cs[c * rank_ + d]);
      }
    fn(ti, cs, vs, m, bb);
    i = j;
  }
}

const std::vector<uint64_t>& WriteBuffer::keys() const {
  if (!keys_valid_) {
    const int w = layout_.key_size();
    keys_.resize(n_ * w);
    for (size_t i = 0; i < n_; ++i) layout_.key_words(&coords_[i * rank_], &keys_[i * w]);
    keys_valid_ = true;
  }
  return keys_;
}

template <class Pred>
void WriteBuffer::erase_if(Pred p) {
  size_t out = 0;
  for (size_t i = 0; i < n_; ++i) {
    const uint64_t* ci = &coords_[i * rank_];
    if (p(ci)) continue;
    if (out != i) {
      std::memmove(&coords_[out * rank_], ci, rank_ * 8);
      std::memmove(&values_[out * es_], &values_[i * es_], es_);
      if (packed_ok_) packed_[out] = packed_[i];
    }
    ++out;
  }
  n_ = out;
  coords_.resize(n_ * rank_);
  values_.resize(n_ * es_);
  if (packed_ok_) packed_.resize(n_);
  keys_valid_ = false;
}

void WriteBuffer::erase_inside(const Box& b) {
  erase_if([&](const uint64_t* c) { return b.contains(c); });
}

void WriteBuffer::erase_where(const std::function<bool(const uint64_t*)>& p) { erase_if(p); }

void WriteBuffer::erase_outside(const Box& b) {
  erase_if([&](const uint64_t* c) { return !b.contains(c); });
}

void WriteBuffer::clear() {
  // Give the memory back (`v = {}` would keep the capacity: an emptied buffer of every
  // array written once would go on holding its largest size).
  std::vector<uint64_t>().swap(coords_);
  std::vector<uint8_t>().swap(values_);
  std::vector<uint64_t>().swap(keys_);
  std::vector<uint64_t>().swap(packed_);
  packed_ok_ = false;
  keys_valid_ = true;  // no cells, no keys
  n_ = 0;
  sorted_ = true;
  scattered_ = true;
}

}  // namespace tessera
