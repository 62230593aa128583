// multimap.cc — choosing the MultiMap basic cube (multimap.h).
#include "engine/schema/multimap.h"

#include <algorithm>

namespace tessera {

void multimap_dims(Order cell_order, int rank, int* fast_first) {
  for (int i = 0; i < rank; ++i) fast_first[i] = cell_order == Order::kColMajor ? rank - 1 - i : i;
}

Coords choose_multimap_cube(const Schema& s) {
  const int r = s.rank();
  uint64_t tile_bytes = s.elem_size;
  for (uint64_t t : s.tile_extent) tile_bytes *= t;
  int dims[kMaxRank];
  multimap_dims(s.cell_order, r, dims);
  Coords cube(r);
  for (int i = 0; i < r; ++i) {
    const int d = dims[i];
    // Tiles along d when its maximum is fixed (a cube never needs to be longer).
    uint64_t tiles = UINT64_MAX;
    if (s.max_extent[d] != kUnlimited && s.max_extent[d] > 0)
      tiles = (s.max_extent[d] + s.tile_extent[d] - 1) / s.tile_extent[d];
    const uint64_t want = i == 0 ? std::max<uint64_t>(1, kMultiMapTrackBytes / std::max<uint64_t>(1, tile_bytes))
                                 : kMultiMapAdjacent;
    cube[d] = std::max<uint64_t>(1, std::min(tiles, want));
  }
  return cube;
}

}  // namespace tessera
