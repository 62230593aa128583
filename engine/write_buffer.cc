#include "engine/write_buffer.h"

#include <algorithm>
#include <cstring>

namespace tessera {

void WriteBuffer::add(const uint64_t* coords, const uint8_t* values, size_t n) {
  if (n == 0) return;
  coords_.insert(coords_.end(), coords, coords + n * rank_);
  values_.insert(values_.end(), values, values + n * es_);
  n_ += n;
  sorted_ = false;
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
}  // namespace

void WriteBuffer::normalize() {
  if (sorted_) return;
  size_t out = 0;
  const size_t cb = rank_ * 8;
  std::vector<uint64_t> key;
  if (n_ > 1 && layout_.packed_keys(coords_.data(), n_, &key)) {
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
      ++out;
    }
    coords_.resize(out * rank_);
    values_.resize(out * es_);
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
  }
  n_ = out;
  compute_keys();
  sorted_ = true;
}

void WriteBuffer::compute_keys() {
  const int w = layout_.key_size();
  keys_.resize(n_ * w);
  for (size_t i = 0; i < n_; ++i) layout_.key_words(&coords_[i * rank_], &keys_[i * w]);
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
    }
    ++out;
  }
  n_ = out;
  coords_.resize(n_ * rank_);
  values_.resize(n_ * es_);
  if (sorted_) compute_keys();
}

void WriteBuffer::erase_inside(const Box& b) {
  erase_if([&](const uint64_t* c) { return b.contains(c); });
}

void WriteBuffer::erase_outside(const Box& b) {
  erase_if([&](const uint64_t* c) { return !b.contains(c); });
}

void WriteBuffer::clear() {
  coords_ = {};
  values_ = {};
  keys_ = {};
  n_ = 0;
  sorted_ = true;
}

}  // namespace tessera
