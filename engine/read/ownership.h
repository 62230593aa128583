// ownership.h — which source holds the newest value of every cell of a region: the read
// planner's precedence (read_planner.h, TileDB §4.1) computed from footers and sparse
// coordinates alone, without reading a value.
//
// Per space tile, dense boxes claim cells newest first (a data box holds their values, a
// fill box — an extent shrink or an erase — says they read as the fill value); a sparse
// or erased cell then decides its cell when no dense box newer than its fragment claims
// it, the newest such cell winning; the write buffer's cells are newest of all.  A cell
// claim therefore always overrides the dense claim it lies in (that claim is older), and
// a cell neither claims reads as the fill value.
//
// Two users: DefinedPlanner (defined_cells.h: which cells are defined) and value queries
// (query_term.h: which fragment's index or values answer for each cell).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/geometry/box.h"
#include "engine/fragment/fragment.h"
#include "engine/read/read_planner.h"

namespace tessera {

// A dense box's share of the region: cells it owns.
struct DenseClaim {
  size_t frag;   // index into the view's fragments
  size_t entry;  // dense entry of that fragment (DenseEntry::kData or kFill)
  Box box;       // inside the entry's box and the region; disjoint from every other claim
};

// Where winning cells come from: one sparse or erased tile, or the write buffer.
struct CellSource {
  static constexpr size_t kBuffer = SIZE_MAX;
  size_t frag;  // index into the view's fragments, or kBuffer
  size_t tile;  // sparse (or erased) tile of that fragment
  bool erased;
  std::shared_ptr<const SparseTileData> data;  // its coordinates (null for the buffer)
  size_t cells;
};

// One winning cell: the `index`-th cell of `source`.
struct CellClaim {
  uint32_t source;
  uint64_t index;
};

struct Ownership {
  std::vector<DenseClaim> dense;   // newest first per tile, tiles in tile order
  std::vector<CellSource> sources;
  std::vector<CellClaim> cells;    // at most one per coordinate, inside the region
  int rank = 0;
  const ReadView* view = nullptr;
  const uint64_t* coords(const CellClaim& c) const;
};

// region: disjoint boxes inside the extent.
void plan_ownership(const Schema& s, const ReadView& view, const std::vector<Box>& region, Ownership* out);

}  // namespace tessera
