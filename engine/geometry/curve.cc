// curve.cc — Morton and Hilbert indexes (curve.h).
#include "engine/geometry/curve.h"

#include <algorithm>

#include "engine/geometry/box.h"

namespace tessera {

namespace {

int bit_width(uint64_t v) { return v ? 64 - __builtin_clzll(v) : 0; }

// Interleaves the low `bits` bits of x[0..rank) (x[0] most significant in each group)
// into rank words, most significant word first.
void interleave(const uint64_t* x, int rank, int bits, uint64_t* out) {
  std::fill(out, out + rank, uint64_t{0});
  for (int level = 0; level < bits; ++level)
    for (int d = 0; d < rank; ++d) {
      if (!((x[d] >> level) & 1)) continue;
      const unsigned pos = static_cast<unsigned>(level) * rank + (rank - 1 - d);  // from the bottom
      out[rank - 1 - pos / 64] |= uint64_t{1} << (pos % 64);
    }
}

}  // namespace

void morton_words(const uint64_t* c, int rank, uint64_t* out) {
  uint64_t m = 0;
  for (int d = 0; d < rank; ++d) m |= c[d];
  interleave(c, rank, bit_width(m), out);
}

uint64_t morton_code(const uint64_t* c, int rank, unsigned bits) {
  uint64_t key = 0;
  for (unsigned i = 0; i < bits; ++i)
    for (int d = 0; d < rank; ++d) key |= ((c[d] >> i) & 1) << (i * rank + (rank - 1 - d));
  return key;
}

void hilbert_words(const uint64_t* c, int rank, uint64_t* out) {
  uint64_t x[kMaxRank];
  uint64_t m = 0;
  for (int d = 0; d < rank; ++d) m |= x[d] = c[d];
  const int b = std::max(1, bit_width(m));
  // Skilling's "inverse undo" over the 64-bit curve.  A level whose bits are all zero
  // only exchanges x[0] with x[1], then x[2], ... (the bits below it are the whole
  // values): a rotation of the axes.  The 64 - b leading zero levels are therefore the
  // rotation applied (64 - b) mod rank times, and only the b real levels are computed —
  // the index equals the full 64-level one (curve_test checks this).
  for (int k = (64 - b) % rank; k > 0; --k)
    for (int i = 1; i < rank; ++i) std::swap(x[0], x[i]);
  for (uint64_t q = uint64_t{1} << (b - 1); q > 1; q >>= 1) {
    const uint64_t p = q - 1;
    for (int i = 0; i < rank; ++i) {
      if (x[i] & q) {
        x[0] ^= p;  // invert
      } else {
        const uint64_t t = (x[0] ^ x[i]) & p;  // exchange
        x[0] ^= t;
        x[i] ^= t;
      }
    }
  }
  // Gray encode.
  for (int i = 1; i < rank; ++i) x[i] ^= x[i - 1];
  uint64_t t = 0;
  for (uint64_t q = uint64_t{1} << (b - 1); q > 1; q >>= 1)
    if (x[rank - 1] & q) t ^= q - 1;
  for (int i = 0; i < rank; ++i) x[i] ^= t;
  interleave(x, rank, b, out);
}

}  // namespace tessera
