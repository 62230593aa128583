// blob_buffer.cc — the Z-order tile index of buffered blobs (blob_buffer.h).
#include "engine/write/blob_buffer.h"

#include <algorithm>

#include "engine/geometry/curve.h"

namespace tessera {

namespace {

// A blob touching more tiles than this (tiny tiles, a long thin box) is not worth an
// index entry per tile: it goes to the always-tested list instead.
constexpr uint64_t kMaxIndexedTiles = 256;

}  // namespace

BlobBuffer::BlobBuffer(Coords tile_extent, BlobMemory* memory)
    : tile_extent_(std::move(tile_extent)), memory_(memory) {
  const unsigned r = static_cast<unsigned>(std::max<size_t>(1, tile_extent_.size()));
  bits_ = 64 / r;
}

BlobBuffer::~BlobBuffer() { clear(); }

uint64_t BlobBuffer::morton(const uint64_t* tile) const {
  // The code grows with each coordinate, so a box's tiles all have codes between its first
  // tile's and its last tile's.
  return morton_code(tile, static_cast<int>(tile_extent_.size()), bits_);
}

bool BlobBuffer::tile_range(const Box& b, Coords* lo, Coords* hi) const {
  const size_t r = tile_extent_.size();
  lo->resize(r);
  hi->resize(r);
  for (size_t d = 0; d < r; ++d) {
    (*lo)[d] = b.lo[d] / tile_extent_[d];
    (*hi)[d] = b.hi[d] / tile_extent_[d];
    if (bits_ < 64 && (*hi)[d] >> bits_) return false;
  }
  return true;
}

void BlobBuffer::add(Box box, std::vector<uint8_t> cells) {
  bytes_ += cells.size() + sizeof(Blob);
  cells_ += box.cells();
  const size_t id = blobs_.size();
  Coords lo, hi;
  uint64_t tiles = 1;
  bool exact = tile_range(box, &lo, &hi);
  for (size_t d = 0; exact && d < lo.size(); ++d) {
    tiles *= hi[d] - lo[d] + 1;
    exact = tiles <= kMaxIndexedTiles;
  }
  if (!exact) {
    wide_.push_back(id);
  } else {
    // Every tile of the box, odometer over the tile range.
    Coords t = lo;
    for (;;) {
      index_.emplace(morton(t.data()), id);
      size_t d = t.size();
      while (d-- > 0) {
        if (t[d] < hi[d]) {
          ++t[d];
          break;
        }
        t[d] = lo[d];
      }
      if (d == SIZE_MAX) break;
    }
  }
  blobs_.push_back({std::move(box), std::move(cells)});
}

std::vector<size_t> BlobBuffer::over(const Box& q) const {
  std::vector<size_t> found;
  for (size_t id : wide_)
    if (blobs_[id].box.intersects(q)) found.push_back(id);
  if (!index_.empty()) {
    Coords lo, hi;
    const size_t r = tile_extent_.size();
    bool reachable = true;
    tile_range(q, &lo, &hi);
    for (size_t d = 0; d < r && bits_ < 64; ++d) {
      const uint64_t top = (uint64_t{1} << bits_) - 1;  // indexed tiles lie within [0, top]
      reachable = reachable && lo[d] <= top;
      hi[d] = std::min(hi[d], top);
    }
    if (reachable) {
      const auto end = index_.upper_bound(morton(hi.data()));
      for (auto it = index_.lower_bound(morton(lo.data())); it != end; ++it)
        if (blobs_[it->second].box.intersects(q)) found.push_back(it->second);
    }
  }
  std::sort(found.begin(), found.end());
  found.erase(std::unique(found.begin(), found.end()), found.end());
  return found;
}

const Blob* BlobBuffer::newest_at(const uint64_t* c) const {
  const size_t r = tile_extent_.size();
  size_t best = SIZE_MAX;
  for (size_t id : wide_)
    if (blobs_[id].box.contains(c) && (best == SIZE_MAX || id > best)) best = id;
  Coords t(r);
  bool fits = true;
  for (size_t d = 0; d < r; ++d) {
    t[d] = c[d] / tile_extent_[d];
    fits = fits && (bits_ >= 64 || (t[d] >> bits_) == 0);
  }
  if (fits) {
    auto range = index_.equal_range(morton(t.data()));
    for (auto it = range.first; it != range.second; ++it)
      if (blobs_[it->second].box.contains(c) && (best == SIZE_MAX || it->second > best)) best = it->second;
  }
  return best == SIZE_MAX ? nullptr : &blobs_[best];
}

bool BlobBuffer::covers_any(const uint64_t* coords, size_t n, int rank) const {
  if (blobs_.empty()) return false;
  for (size_t i = 0; i < n; ++i)
    if (newest_at(coords + i * static_cast<size_t>(rank))) return true;
  return false;
}

void BlobBuffer::clear() {
  if (memory_)
    for (Blob& b : blobs_) memory_->give(std::move(b.cells));
  std::vector<Blob>().swap(blobs_);
  index_.clear();
  wide_.clear();
  bytes_ = cells_ = 0;
}

}  // namespace tessera
