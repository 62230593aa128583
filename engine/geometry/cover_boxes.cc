// cover_boxes.cc — see cover_boxes.h.
#include "engine/geometry/cover_boxes.h"

#include <algorithm>

#include "engine/geometry/odometer.h"

namespace tessera {

namespace {

// Calls f(offset) for the first cell of every run of box [lo, hi] (relative to bb) along
// dimension `fast`; a run's cells are `stride[fast]` apart.
template <class F>
void for_each_run(int r, int fast, const uint64_t* lo, const uint64_t* hi, const uint64_t* stride, F&& f) {
  uint64_t counts[kMaxRank];
  for (int d = 0; d < r; ++d) counts[d] = d == fast ? 1 : hi[d] - lo[d] + 1;
  for_each_index(r, counts, [&](const uint64_t* idx) {
    uint64_t off = 0;
    for (int d = 0; d < r; ++d) off += (lo[d] + idx[d]) * stride[d];
    f(off);
  });
}

// Whether every cell of the box [lo, hi] (relative to bb) has mask byte 1.
bool all_covered(int r, int fast, const uint64_t* lo, const uint64_t* hi, const uint64_t* stride,
                 const uint8_t* mask) {
  const uint64_t len = hi[fast] - lo[fast] + 1, step = stride[fast];
  bool ok = true;
  for_each_run(r, fast, lo, hi, stride, [&](uint64_t off) {
    for (uint64_t i = 0; ok && i < len; ++i) ok = mask[off + i * step] == 1;
  });
  return ok;
}

}  // namespace

bool cover_boxes(const Box& bb, const uint64_t* stride, std::vector<uint8_t>& mask, size_t max_boxes,
                 std::vector<Box>* out) {
  out->clear();
  const int r = bb.rank();
  uint64_t ext[kMaxRank];
  for (int d = 0; d < r; ++d) ext[d] = bb.hi[d] - bb.lo[d] + 1;
  // Dimensions from the fastest (smallest stride; of equal strides, one has extent 1) to
  // the slowest.
  int ord[kMaxRank] = {};
  for (int d = 0; d < r; ++d) ord[d] = d;
  std::sort(ord, ord + r, [&](int a, int b) { return stride[a] != stride[b] ? stride[a] < stride[b] : ext[a] > ext[b]; });
  const uint64_t n = mask.size();
  for (uint64_t k = 0; k < n; ++k) {
    if (mask[k] != 1) continue;
    if (out->size() == max_boxes) return false;
    uint64_t lo[kMaxRank] = {}, hi[kMaxRank] = {};
    for (int d = 0; d < r; ++d) lo[d] = hi[d] = k / stride[d] % ext[d];  // (ties of extent 1 included)
    const int fast = ord[0];
    for (int j = 0; j < r; ++j) {
      const int d = ord[j];
      if (j == 0) {  // along the fastest dimension: a plain scan
        while (hi[d] + 1 < ext[d] && mask[k + (hi[d] + 1 - lo[d]) * stride[d]] == 1) ++hi[d];
        continue;
      }
      uint64_t slo[kMaxRank], shi[kMaxRank];
      std::copy(lo, lo + r, slo);
      std::copy(hi, hi + r, shi);
      while (hi[d] + 1 < ext[d]) {
        slo[d] = shi[d] = hi[d] + 1;
        if (!all_covered(r, fast, slo, shi, stride, mask.data())) break;
        ++hi[d];
      }
    }
    const uint64_t len = hi[fast] - lo[fast] + 1, step = stride[fast];
    for_each_run(r, fast, lo, hi, stride, [&](uint64_t off) {
      for (uint64_t i = 0; i < len; ++i) mask[off + i * step] = 2;
    });
    Box b(Coords(bb.lo), Coords(bb.lo));
    for (int d = 0; d < r; ++d) {
      b.lo[d] = bb.lo[d] + lo[d];
      b.hi[d] = bb.lo[d] + hi[d];
    }
    out->push_back(std::move(b));
  }
  return true;
}

}  // namespace tessera
