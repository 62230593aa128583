// A 2-D transposing copy in cache-sized blocks: n_i x n_j elements from src, where i is
// the contiguous dimension (element i, j at src[i + j * ss]), to dst, where j is (at
// dst[i * ds + j]).  This is what copying a column-major tile (MultiMap's cells) into
// HDF5's row-major buffer comes down to, one plane at a time.  Element by element, every
// element read is a cache line of its own, and the lines of one row lie a tile plane
// apart (16 KiB for 64^3 float32 tiles): a multiple of 4 KiB, so they all fall in one L1
// set and evict each other.  In blocks of K x K, K lines are read whole into a local
// block (L1-resident) and written out as K rows of K elements.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

namespace tessera {

namespace transpose_detail {

// One block of ni x nj (<= K each): read along i, write along j.
template <class E, int K>
inline void block(uint8_t* dst, uint64_t ds, const uint8_t* src, uint64_t ss, uint64_t ni, uint64_t nj) {
  E t[K][K];
  if (ni == K && nj == K) {  // fixed trip counts: unrolled and vectorized
    for (int j = 0; j < K; ++j) std::memcpy(t[j], src + j * ss * sizeof(E), K * sizeof(E));
    for (int i = 0; i < K; ++i) {
      E row[K];
      for (int j = 0; j < K; ++j) row[j] = t[j][i];
      std::memcpy(dst + i * ds * sizeof(E), row, K * sizeof(E));
    }
    return;
  }
  for (uint64_t j = 0; j < nj; ++j) std::memcpy(t[j], src + j * ss * sizeof(E), ni * sizeof(E));
  for (uint64_t i = 0; i < ni; ++i) {
    E row[K];
    for (uint64_t j = 0; j < nj; ++j) row[j] = t[j][i];
    std::memcpy(dst + i * ds * sizeof(E), row, nj * sizeof(E));
  }
}

#ifdef __SSE2__
// 4-byte elements, a full 16 x 16 block: 4 x 4 sub-blocks transposed in SSE2 registers
// (four 16-byte loads along i, four stores along j), 2x the scalar block's speed.
inline void block4x16(uint8_t* dst, uint64_t ds, const uint8_t* src, uint64_t ss) {
  for (int i = 0; i < 16; i += 4)
    for (int j = 0; j < 16; j += 4) {
      const uint8_t* s0 = src + (i + j * ss) * 4;
      const __m128i r0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s0));
      const __m128i r1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s0 + ss * 4));
      const __m128i r2 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s0 + ss * 8));
      const __m128i r3 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s0 + ss * 12));
      const __m128i t0 = _mm_unpacklo_epi32(r0, r1), t1 = _mm_unpackhi_epi32(r0, r1);
      const __m128i t2 = _mm_unpacklo_epi32(r2, r3), t3 = _mm_unpackhi_epi32(r2, r3);
      uint8_t* d0 = dst + (i * ds + j) * 4;
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d0), _mm_unpacklo_epi64(t0, t2));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d0 + ds * 4), _mm_unpackhi_epi64(t0, t2));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d0 + ds * 8), _mm_unpacklo_epi64(t1, t3));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d0 + ds * 12), _mm_unpackhi_epi64(t1, t3));
    }
}
#endif

template <class E, int K>
inline void blocks(uint8_t* dst, uint64_t ds, const uint8_t* src, uint64_t ss, uint64_t ni, uint64_t nj) {
  for (uint64_t j = 0; j < nj; j += K)
    for (uint64_t i = 0; i < ni; i += K) {
#ifdef __SSE2__
      if (sizeof(E) == 4 && K == 16 && ni - i >= K && nj - j >= K) {
        block4x16(dst + (i * ds + j) * sizeof(E), ds, src + (i + j * ss) * sizeof(E), ss);
        continue;
      }
#endif
      block<E, K>(dst + (i * ds + j) * sizeof(E), ds, src + (i + j * ss) * sizeof(E), ss,
                  ni - i < K ? ni - i : K, nj - j < K ? nj - j : K);
    }
}

}  // namespace transpose_detail

// es: element size in bytes; ds, ss: strides in elements.  Element sizes 1, 2, 4 and 8
// are blocked (a block is 16 x 16 elements: 16 cache lines of 4-byte elements); others
// copy element by element.
inline void transpose_copy(uint8_t* dst, uint64_t ds, const uint8_t* src, uint64_t ss, uint64_t ni, uint64_t nj,
                           size_t es) {
  using namespace transpose_detail;
  switch (es) {
    case 1: return blocks<uint8_t, 16>(dst, ds, src, ss, ni, nj);
    case 2: return blocks<uint16_t, 16>(dst, ds, src, ss, ni, nj);
    case 4: return blocks<uint32_t, 16>(dst, ds, src, ss, ni, nj);
    case 8: return blocks<uint64_t, 8>(dst, ds, src, ss, ni, nj);
    default:
      for (uint64_t j = 0; j < nj; ++j)
        for (uint64_t i = 0; i < ni; ++i) std::memcpy(dst + (i * ds + j) * es, src + (i + j * ss) * es, es);
  }
}

}  // namespace tessera
