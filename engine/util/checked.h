// checked.h — size arithmetic that says when it overflows instead of wrapping.
//
// HDF5 allows extents whose element count does not fit in 64 bits (netCDF's tst_chunks2
// has 2.6e27 elements), so a product of extents, a count times an element size or a
// coordinate plus a count may overflow: every such computation goes through these.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>

namespace tessera {

// a * b and a + b, nullopt when the result does not fit in 64 bits.
inline std::optional<uint64_t> checked_mul(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}
inline std::optional<uint64_t> checked_add(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// The product of n values (1 for none), nullopt when it does not fit in 64 bits.  A zero
// anywhere makes the product 0 even if the others overflow.
inline std::optional<uint64_t> checked_product(const uint64_t* v, size_t n) {
  uint64_t p = 1;
  bool over = false;
  for (size_t i = 0; i < n; ++i) {
    if (v[i] == 0) return 0;
    if (!over && __builtin_mul_overflow(p, v[i], &p)) over = true;
  }
  if (over) return std::nullopt;
  return p;
}

}  // namespace tessera
