// Copies an N-d block of elements between two strided layouts (strides in elements).
// Used to gather a write's cells into a tile and to paint tiles during consolidation;
// runs that are contiguous on both sides become one memcpy.
#pragma once
#include <cstdint>
#include <cstring>

#include "engine/geometry/odometer.h"

namespace tessera {

inline void strided_copy(int rank, const uint64_t* shape, const uint8_t* src, const uint64_t* sstride,
                         uint8_t* dst, const uint64_t* dstride, size_t es) {
  for (int d = 0; d < rank; ++d)
    if (shape[d] == 0) return;
  const int last = rank - 1;
  const bool contiguous = sstride[last] == 1 && dstride[last] == 1;
  for_each_index(last, shape, [&](const uint64_t* idx) {  // every row
    uint64_t so = 0, d0 = 0;
    for (int d = 0; d < last; ++d) {
      so += idx[d] * sstride[d];
      d0 += idx[d] * dstride[d];
    }
    if (contiguous) {
      std::memcpy(dst + d0 * es, src + so * es, shape[last] * es);
    } else {
      for (uint64_t k = 0; k < shape[last]; ++k)
        std::memcpy(dst + (d0 + k * dstride[last]) * es, src + (so + k * sstride[last]) * es, es);
    }
  });
}

}  // namespace tessera
