// odometer.h — the one N-dimensional walk: every index vector of a shape in row-major
// order (the last dimension fastest).  Copies walk the rows of a block with it (all
// dimensions but the last), selections the combinations of their per-dimension
// intervals.  (The read planner's walk over per-dimension runs of a tile is its own:
// it advances run and offset together.)
#pragma once
#include <cstdint>

#include "engine/geometry/box.h"  // kMaxRank

namespace tessera {

// Calls f(idx) for idx over [0, counts[0]) x ... x [0, counts[dims-1]), row-major; nothing
// when a count is 0, once (with no index) when dims is 0.  dims <= kMaxRank.
template <class F>
void for_each_index(int dims, const uint64_t* counts, F&& f) {
  for (int d = 0; d < dims; ++d)
    if (counts[d] == 0) return;
  uint64_t idx[kMaxRank] = {};
  for (;;) {
    f(static_cast<const uint64_t*>(idx));
    int d = dims - 1;
    for (; d >= 0; --d) {
      if (++idx[d] < counts[d]) break;
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

}  // namespace tessera
