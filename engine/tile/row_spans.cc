#include "engine/tile/row_spans.h"

#include "engine/geometry/odometer.h"

namespace tessera {

bool row_spans(int rank, const uint64_t* shape, const uint8_t* src, const uint64_t* sstride,
               const uint64_t* dstride, size_t es, std::vector<ByteSpan>* out) {
  const int last = rank - 1;
  if (rank < 1 || sstride[last] != 1 || dstride[last] != 1) return false;
  for (int d = last - 1; d >= 0; --d)
    if (dstride[d] != dstride[d + 1] * shape[d + 1]) return false;  // not the row-major image
  const uint64_t row = shape[last] * es;
  if (row < kMinSpanRowBytes) return false;
  out->clear();
  for_each_index(last, shape, [&](const uint64_t* idx) {  // every row, in row-major order
    uint64_t so = 0;
    for (int d = 0; d < last; ++d) so += idx[d] * sstride[d];
    const uint8_t* p = src + so * es;
    if (!out->empty() && static_cast<const uint8_t*>(out->back().data) + out->back().len == p)
      out->back().len += row;
    else
      out->push_back({p, row});
  });
  return true;
}

}  // namespace tessera
