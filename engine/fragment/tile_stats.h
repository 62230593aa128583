// Per-tile statistics kept in fragment footers: cell count and, for numeric elements,
// min and max.  They cost one pass over data already in cache and let readers and value
// queries skip tiles.  NaNs are ignored for min/max.
#pragma once
#include <cstdint>
#include <cstring>

#include "engine/util/bytes.h"
#include "engine/schema/schema.h"

namespace tessera {

struct TileStats {
  uint64_t count = 0;
  bool has_minmax = false;
  // min/max as the element's own bytes (little-endian host order), elem_size <= 8.
  uint8_t min[8] = {}, max[8] = {};

  void serialize(ByteWriter& w) const;
  static TileStats deserialize(ByteReader& r);
};

TileStats compute_stats(const Schema& s, const uint8_t* data, uint64_t n);
// Folds the statistics of a part of a tile into `acc` (a tile whose rows are visited one
// at a time): min/max of both, counts added.  Equal to compute_stats over the whole tile,
// except that between two equal values (a float's -0 and +0) either may be kept.
void merge_stats(const Schema& s, TileStats* acc, const TileStats& part);

}  // namespace tessera
