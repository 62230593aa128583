// blob_buffer.h — box-shaped writes kept whole in memory until the next spill (NDBlaze's
// blobs; docs/engine.md "Blobs").  A box write of a few KiB to a few MiB costs its values
// here — not 8 bytes of coordinates per cell as in the WriteBuffer, and not a fragment
// file of its own: the spill paints every blob and buffered cell of a tile together, so
// n rewrites of a tile cost one tile write and a tile the blobs cover becomes one dense
// piece (Array::fill_spill).  Blobs are newer than every fragment and older than every
// buffered cell written after them (cells a blob covers are dropped when it arrives), and
// among themselves the later wins; reads apply them in that order (read_planner.h).
#pragma once
#include <cstdint>
#include <vector>

#include "engine/box.h"

namespace tessera {

struct Blob {
  Box box;
  std::vector<uint8_t> cells;  // the box's cells in the array's cell order (Layout::cell_strides)
};

class BlobBuffer {
 public:
  void add(Box box, std::vector<uint8_t> cells) {
    bytes_ += cells.size() + sizeof(Blob);
    cells_ += box.cells();
    blobs_.push_back({std::move(box), std::move(cells)});
  }
  const std::vector<Blob>& blobs() const { return blobs_; }  // oldest first
  bool empty() const { return blobs_.empty(); }
  uint64_t bytes() const { return bytes_; }
  uint64_t cells() const { return cells_; }
  bool intersects(const Box& b) const {
    for (const Blob& x : blobs_)
      if (x.box.intersects(b)) return true;
    return false;
  }
  // Whether any of n cells (n * rank coordinates) lies in a blob.
  bool covers_any(const uint64_t* coords, size_t n, int rank) const {
    for (const Blob& x : blobs_)
      for (size_t i = 0; i < n; ++i)
        if (x.box.contains(coords + i * static_cast<size_t>(rank))) return true;
    return false;
  }
  void clear() {
    std::vector<Blob>().swap(blobs_);
    bytes_ = cells_ = 0;
  }

 private:
  std::vector<Blob> blobs_;
  uint64_t bytes_ = 0, cells_ = 0;
};

}  // namespace tessera
