// A fragment's footer: what the fragment holds and where each tile is in its file.
//
// A fragment holds dense tile pieces and/or sparse data tiles:
//  * a DenseEntry is one box inside one space tile, its cells stored in cell order (or a
//    "fill" entry with no bytes: the box reads as the fill value — extent shrinks use it);
//  * a SparseEntry is a data tile of up to `capacity` cells in global order, with explicit
//    coordinates, an MBR and its first/last coordinates (TileDB §3);
//  * an erased tile is the same with coordinates only: cells the
//    fragment makes undefined again (Array::erase; docs/sparse.md).  They read as the fill
//    value and hide older data, like a fill entry, but cost 8 bytes per coordinate
//    instead of a footer entry per cell.
// Within one fragment the dense boxes, the sparse cells and the erased cells never overlap.
// Byte layout: docs/format.md, "Fragment files".
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/geometry/box.h"
#include "engine/tile/filter.h"
#include "engine/fragment/fragment_id.h"
#include "engine/schema/layout.h"
#include "engine/fragment/tile_stats.h"

namespace tessera {

struct BlobRef {
  uint64_t offset = 0, stored_size = 0, raw_size = 0, checksum = 0;
};

struct DenseEntry {
  enum : uint8_t { kData = 0, kFill = 1 };
  uint8_t kind = kData;
  Coords tile;
  Box box;
  BlobRef blob;  // unused for kFill
  TileStats stats;
  // XXH3-64 of each check_block bytes of the blob (the last block may be shorter), when
  // the fragment has check_block != 0; blob.checksum is then 0.
  std::vector<uint64_t> block_checks;
};

struct SparseEntry {
  uint64_t cells = 0;
  Box mbr;
  Coords first, last;
  BlobRef coords, values;  // an erased tile has no values (values stays zero)
  TileStats stats;
};

struct FragmentMeta {
  FragmentId id;
  uint32_t rank = 0;
  uint32_t elem_size = 0;
  FilterPipeline values_filters, coords_filters;
  // Non-zero (values unfiltered only): dense data tiles are checksummed
  // in blocks of this many bytes instead of whole, so part of a tile can be read alone.
  uint64_t check_block = 0;
  bool has_domain = false;
  Box domain;  // bounding box of every cell the fragment holds
  std::vector<DenseEntry> dense;    // non-decreasing tile order; boxes disjoint
  std::vector<SparseEntry> sparse;  // global order
  std::vector<SparseEntry> erased;  // global order; coordinates only
  std::vector<FragmentId> replaces; // fragments this one consolidated
  // An extent change this fragment commits (its fill entries erase what the change cut
  // off): the array's extent is `extent` unless the schema records a newer change.
  bool sets_extent = false;
  Coords extent;
  uint64_t cells = 0;               // cells held (dense + sparse + erased)
  // The tile and cell order of this fragment's tiles and cells (the writer's schema's
  // order).  Readers take it through Fragment::layout, never the schema's order.
  StorageOrder order;

  std::vector<uint8_t> serialize() const;
  static FragmentMeta deserialize(const uint8_t* p, size_t n, const std::string& what);
  static uint64_t block_count(uint64_t bytes, uint64_t block) { return bytes / block + (bytes % block != 0); }
  // The [first, last) range of dense entries in `tile` (several disjoint boxes may share
  // a tile: an extent shrink can cut an L-shaped region out of one).
  std::pair<size_t, size_t> dense_range(const Layout& layout, const uint64_t* tile) const;
  // The dense entry of `tile` containing cell c, or -1.
  long dense_at(const Layout& layout, const uint64_t* tile, const uint64_t* c) const;
  void extend_domain(const Box& b);
};

}  // namespace tessera
