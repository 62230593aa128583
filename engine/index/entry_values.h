// entry_values.h — the values of one fragment entry (a dense data piece or a sparse
// tile) in its position order: what index building bins and queries check.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/fragment/fragment.h"
#include "engine/schema/layout.h"

namespace tessera {

struct EntryValues {
  std::shared_ptr<const std::vector<uint8_t>> dense;  // keeps a decoded dense tile alive
  std::shared_ptr<const SparseTileData> sparse;       // or a sparse tile
  const uint8_t* p = nullptr;                         // n values, elem_size bytes each
  uint64_t n = 0;
};

// Dense entry e (nothing for a fill entry), or sparse tile e.  `scratch` (optional): an
// unfiltered tile is read into it (block-verified) instead of through the tile cache —
// a pass over a whole fragment (an index build) neither evicts what reads cached nor
// allocates a tile's memory per tile.
inline EntryValues entry_values(const Fragment& f, const Layout& layout, bool dense, uint64_t e,
                                std::vector<uint8_t>* scratch = nullptr) {
  EntryValues v;
  if (dense) {
    const DenseEntry& d = f.meta().dense[e];
    if (d.kind != DenseEntry::kData) return v;
    v.n = d.box.cells();
    if (scratch && f.partial_reads(e) && d.blob.raw_size > 0) {
      scratch->resize(d.blob.raw_size);
      f.read_dense_runs(e, {ByteRun{0, d.blob.raw_size, scratch->data()}});
      v.p = scratch->data();
      return v;
    }
    v.dense = f.dense_tile(e);
    v.p = v.dense->data();
  } else {
    v.sparse = f.sparse_tile(e, layout);
    v.p = v.sparse->values.data();
    v.n = f.meta().sparse[e].cells;
  }
  return v;
}

}  // namespace tessera
