// curve.h — space-filling curves over unsigned coordinates: Z-order (Morton) and Hilbert.
// One implementation for everything that orders by a curve: the tile orders of layout.h
// (docs/layouts.md) and the blob index of blob_buffer.h.
//
// A curve index of `rank` 64-bit coordinates has 64 * rank bits; the *_words functions
// write it as `rank` words, most significant first, so comparing the words
// lexicographically compares the indexes.  Both curves are canonical over the whole
// 64-bit space: an index does not depend on how large the other coordinates of a dataset
// are, so it can be stored and compared across fragments.  When every coordinate has at
// most b bits the index has at most rank * b bits (its leading words are zero), which is
// what lets callers pack it into one word (Layout::packed_keys).
#pragma once
#include <cstdint>

namespace tessera {

// Morton code: bit i of dimension d goes to bit i * rank + (rank - 1 - d), so the LAST
// dimension varies fastest, as in row-major order.
void morton_words(const uint64_t* c, int rank, uint64_t* out);
// The Morton code of coordinates of at most `bits` bits each (rank * bits <= 64).
uint64_t morton_code(const uint64_t* c, int rank, unsigned bits);

// Hilbert index (Skilling's transpose algorithm, "Programming the Hilbert curve", 2004)
// of the 64-bit-per-dimension curve; adjacent indexes are adjacent cells.
void hilbert_words(const uint64_t* c, int rank, uint64_t* out);

}  // namespace tessera
