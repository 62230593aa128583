#include "engine/write_buffer.h"

#include <cstring>

namespace tessera {

void WriteBuffer::add(const uint64_t* coords, const uint8_t* values, size_t n) {
  if (n == 0) return;
  coords_.insert(coords_.end(), coords, coords + n * rank_);
  values_.insert(values_.end(), values, values + n * es_);
  n_ += n;
  sorted_ = false;
}

void WriteBuffer::normalize() {
  if (sorted_) return;
  std::vector<uint32_t> perm = layout_.sort_global(coords_.data(), n_);
  // perm is stable: among equal coordinates the newest (largest index) comes last.
  std::vector<uint64_t> c;
  std::vector<uint8_t> v;
  c.reserve(n_ * rank_);
  v.reserve(n_ * es_);
  size_t out = 0;
  for (size_t i = 0; i < n_; ++i) {
    const uint64_t* ci = &coords_[size_t(perm[i]) * rank_];
    if (i + 1 < n_ && std::memcmp(ci, &coords_[size_t(perm[i + 1]) * rank_], rank_ * 8) == 0) continue;
    c.insert(c.end(), ci, ci + rank_);
    const uint8_t* vi = &values_[size_t(perm[i]) * es_];
    v.insert(v.end(), vi, vi + es_);
    ++out;
  }
  coords_ = std::move(c);
  values_ = std::move(v);
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
