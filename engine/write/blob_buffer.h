// blob_buffer.h — box-shaped writes kept whole in memory until the next spill (NDBlaze's
// blobs; docs/engine.md "Blobs").  A box write of a few KiB to a few MiB costs its values
// here — not 8 bytes of coordinates per cell as in the WriteBuffer, and not a fragment
// file of its own: the spill paints every blob and buffered cell of a tile together, so
// n rewrites of a tile cost one tile write and a tile the blobs cover becomes one dense
// piece (Array::fill_spill).  Blobs are newer than every fragment and older than every
// buffered cell written after them (cells a blob covers are dropped when it arrives), and
// among themselves the later wins; reads apply them in that order (read_planner.h).
//
// The blobs are indexed by the tiles they touch, keyed by the tiles' Z-order (Morton)
// code, as NDBlaze keys its cuboids: a box's tiles lie between the codes of its first and
// last tile, so finding the blobs over a read, a point or a newer write is one range of
// the index, not a pass over every blob — with thousands of small blobs buffered, a point
// read used to test each of them.
//
// A spilled blob's memory goes back to the context's BlobMemory for the next blobs.
#pragma once
#include <cstdint>
#include <map>
#include <vector>

#include "engine/write/blob_memory.h"
#include "engine/geometry/box.h"

namespace tessera {

struct Blob {
  Box box;
  std::vector<uint8_t> cells;  // the box's cells in the array's cell order (Layout::cell_strides)
};

class BlobBuffer {
 public:
  // memory: where spilled blobs' memory goes (null: freed).
  BlobBuffer(Coords tile_extent, BlobMemory* memory);
  ~BlobBuffer();
  BlobBuffer(const BlobBuffer&) = delete;
  BlobBuffer& operator=(const BlobBuffer&) = delete;

  void add(Box box, std::vector<uint8_t> cells);
  const std::vector<Blob>& blobs() const { return blobs_; }  // oldest first
  bool empty() const { return blobs_.empty(); }
  uint64_t bytes() const { return bytes_; }
  uint64_t cells() const { return cells_; }

  // The indexes (into blobs(), ascending: oldest first) of the blobs intersecting q.
  std::vector<size_t> over(const Box& q) const;
  bool intersects(const Box& q) const { return !over(q).empty(); }
  // The newest blob holding cell c, or null.
  const Blob* newest_at(const uint64_t* c) const;
  // Whether any of n cells (n * rank coordinates) lies in a blob.
  bool covers_any(const uint64_t* coords, size_t n, int rank) const;
  void clear();

 private:
  // The tile range of b, and whether its codes are exact (every tile coordinate fits the
  // key's bits per dimension; otherwise the blob is kept in wide_ and always tested).
  bool tile_range(const Box& b, Coords* lo, Coords* hi) const;
  uint64_t morton(const uint64_t* tile) const;

  Coords tile_extent_;
  BlobMemory* memory_;
  unsigned bits_;  // bits of each dimension's tile coordinate in a key
  std::vector<Blob> blobs_;
  std::multimap<uint64_t, size_t> index_;  // Z-order code of a tile -> a blob touching it
  std::vector<size_t> wide_;               // blobs not in index_ (see tile_range)
  uint64_t bytes_ = 0, cells_ = 0;
};

}  // namespace tessera
