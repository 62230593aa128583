// multimap.h — the MultiMap-style tile order (Shao et al., "MultiMap: Preserving disk
// locality for multidimensional datasets", ICDE 2007), adapted from disk tracks to files.
//
// The paper maps Dim0 along a disk track (sequential), and each further dimension to
// successive *adjacent blocks* — blocks on nearby tracks reachable for a settle time, with
// no rotational latency — inside a *basic cube* small enough that all its tracks are
// adjacent; basic cubes are then laid out one after another.  A file has no tracks:
//   - the unit is the tile (HDF5 chunk), the smallest piece a read locates;
//   - a "track" is a run of tiles read as one sequential extent: kTrackBytes of tiles,
//     so a read along it moves megabytes per request and the request's latency vanishes
//     in the transfer (the kernel's readahead and the read planner's 1 MiB jobs merge it);
//   - "adjacent blocks" are tiles a few tracks away, inside the same basic cube: a beam
//     across the cube touches K tiles within the cube's span, which the read planner
//     hands to the kernel together (POSIX_FADV_WILLNEED) so the device serves them in
//     one sweep, the analogue of the disk's semi-sequential path.
// Dim0 of the paper — the track dimension — is the dimension along which a beam reads the
// most bytes of each tile: the slowest dimension of the cell order (dimension 0 for
// row-major cells, whose beams read a cell from every 64 KiB block of the tile, while a
// beam along the last dimension reads one block).
// Inside a tile the paper's mapping applies to cells: Dim0 fastest, then Dim1, ... —
// column-major cells, the MultiMap layout's default cell order (schema.h,
// default_cell_order).  A 64 KiB block of a 64^3 float32 tile then holds 64 x 64 x 4
// cells, so beams along dimensions 0 and 1 read one block per tile and only beams along
// the last dimension read whole tiles — the dimension the track then runs along.
// docs/layouts.md has the numbers.
#pragma once
#include <cstdint>

#include "engine/schema/schema.h"

namespace tessera {

// Bytes of tiles in one "track" (the sequential extent of the paper's Dim0).
constexpr uint64_t kMultiMapTrackBytes = 4 << 20;
// Tiles of the basic cube along each other dimension (the paper's adjacency bound D).
constexpr uint64_t kMultiMapAdjacent = 8;

// The basic cube for this schema (tiles per dimension), stored in Schema::multimap_cube.
Coords choose_multimap_cube(const Schema& s);

// The dimensions from fastest- to slowest-varying in a MultiMap tile order, inside a
// basic cube and among cubes: the track dimension first.
void multimap_dims(Order cell_order, int rank, int* fast_first);

}  // namespace tessera
