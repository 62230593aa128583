// array_sparse.cc — Array::defined, defined_points, erase, erase_points (docs/sparse.md).
//
// An erase is a fragment like a write: fill boxes (DenseEntry::kFill, the same entries an
// extent shrink writes) for boxes of at least kFillBoxCells cells, clipped to their tiles,
// and an erased tile of coordinates for the rest (a box over very many tiles: only where
// it is defined, kMaxFillTiles).  It gets the next fragment id, so it is
// newer than every write before it and older than every write after it; buffered cells it
// covers are dropped from the write buffer first (they are older and would otherwise be
// spilled into a fragment newer than the erase).
#include <algorithm>
#include <numeric>
#include <optional>
#include <unordered_set>

#include "engine/array/array.h"
#include "engine/read/defined_cells.h"
#include "engine/util/checked.h"
#include "engine/schema/layout.h"

namespace tessera {

namespace {

// Smaller boxes are erased cell by cell (8 bytes per coordinate beat a ~100-byte footer
// entry per box).
constexpr uint64_t kFillBoxCells = 16;

// A box over more tiles than this is erased only where it is defined (undefined cells
// need nothing): a fill piece per tile of a dataset of 2^64 elements or more cannot be
// written at all (issue 45), and a box that large is mostly never written.
constexpr uint64_t kMaxFillTiles = uint64_t{1} << 16;

// The number of tiles box b overlaps, saturating at UINT64_MAX.
uint64_t tiles_over(const Box& b, const Coords& tile) {
  uint64_t n = 1;
  for (size_t d = 0; d < tile.size(); ++d) {
    const std::optional<uint64_t> m = checked_mul(n, b.hi[d] / tile[d] - b.lo[d] / tile[d] + 1);
    if (!m) return UINT64_MAX;
    n = *m;
  }
  return n;
}

}  // namespace

Status Array::defined(const std::vector<Box>& region, std::vector<Box>* out) {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] { defined_locked(region, out); });
}

void Array::defined_locked(const std::vector<Box>& region, std::vector<Box>* out) {
  out->clear();
  for (const Box& b : region) check_selection(Selection::from_box(b));
  if (compact_) {  // one record: every cell defined once written, none before
    if (compact_->storage_bytes() > 0) *out = region;
    std::sort(out->begin(), out->end(), [](const Box& a, const Box& b) { return a.lo < b.lo; });
    return;
  }
  write_.close_direct();
  finish_parked();
  if (!write_.blobs_->empty()) write_.spill();  // DefinedPlanner reads fragments and cells, not blobs
  write_.buffer_->normalize();
  ReadView view{frags_.live().snapshot(), write_.buffer_.get(), ctx_.get(), write_.blobs_.get()};
  DefinedPlanner(schema_, view).defined(region, out);
}

Status Array::defined_points(const uint64_t* coords, size_t n, std::vector<uint8_t>* out) {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] {
    check_points(coords, n);
    out->assign(n, 0);
    if (compact_) {
      if (compact_->storage_bytes() > 0) out->assign(n, 1);
      return;
    }
    write_.close_direct();
    finish_parked();
    if (!write_.blobs_->empty()) write_.spill();
    write_.buffer_->normalize();
    ReadView view{frags_.live().snapshot(), write_.buffer_.get(), ctx_.get(), write_.blobs_.get()};
    DefinedPlanner(schema_, view).defined_points(coords, n, out->data());
  });
}

Status Array::erase(const std::vector<Box>& boxes) {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] { erase_impl(boxes, nullptr, 0); });
}

Status Array::erase_points(const uint64_t* coords, size_t n) {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] { erase_impl({}, coords, n); });
}

void Array::erase_impl(const std::vector<Box>& asked, const uint64_t* points, size_t n) {
  require_writable();
  for (const Box& b : asked) check_selection(Selection::from_box(b));
  check_points(points, n);
  if (compact_)
    throw_error(Errc::kUnsupported,
                "cells of a compact array (a contiguous or compact dataset of at most 64 KiB) cannot be erased: "
                "it is stored as one record; use a chunked dataset");
  std::vector<Box> boxes;
  for (const Box& b : asked) {
    if (tiles_over(b, schema_.tile_extent) <= kMaxFillTiles) {
      boxes.push_back(b);
      continue;
    }
    std::vector<Box> found;
    defined_locked({b}, &found);
    boxes.insert(boxes.end(), found.begin(), found.end());
  }
  if (boxes.empty() && n == 0) return;
  write_.close_direct();
  // Blobs are read after every fragment: those the erase touches go to a fragment first.
  bool hit = write_.blobs_->covers_any(points, n, schema_.rank());
  for (const Box& b : boxes) hit = hit || write_.blobs_->intersects(b);
  if (hit) write_.spill();
  const Layout layout(schema_);
  const int r = schema_.rank();
  // Large boxes become fill boxes per tile; small ones and points, erased cells.
  std::vector<std::pair<Coords, Box>> fills;
  std::vector<uint64_t> cells(points, points + n * r);
  for (const Box& b : boxes) {
    if (b.cells() >= kFillBoxCells) {
      write_.buffer_->erase_inside(b);
      layout.for_each_tile(b, [&](const Coords& t) {
        Box piece;
        if (intersect(layout.tile_box(t.data()), b, &piece)) fills.push_back({t, std::move(piece)});
      });
      continue;
    }
    Coords c = b.lo;
    for (uint64_t k = 0, m = b.cells(); k < m; ++k) {
      cells.insert(cells.end(), c.begin(), c.end());
      for (int d = r - 1; d >= 0; --d) {  // next cell of b, row-major
        if (++c[d] <= b.hi[d]) break;
        c[d] = b.lo[d];
      }
    }
  }
  std::stable_sort(fills.begin(), fills.end(),
                   [&](auto& x, auto& y) { return layout.compare_tiles(x.first.data(), y.first.data()) < 0; });
  // Erased cells in global order, each once.
  const size_t ncells = cells.size() / r;
  std::vector<uint64_t> sorted;
  if (ncells > 0) {
    std::vector<uint32_t> perm = layout.sort_global(cells.data(), ncells);
    sorted.reserve(cells.size());
    for (size_t i = 0; i < ncells; ++i) {
      const uint64_t* c = &cells[size_t{perm[i]} * r];
      if (!sorted.empty() && std::equal(c, c + r, sorted.end() - r)) continue;
      sorted.insert(sorted.end(), c, c + r);
    }
    if (!write_.buffer_->empty()) {
      struct Hash {
        size_t operator()(const Coords& c) const {
          size_t h = 0;
          for (uint64_t v : c) h = h * 1000003u ^ std::hash<uint64_t>()(v);
          return h;
        }
      };
      std::unordered_set<Coords, Hash> gone;
      for (size_t i = 0; i < sorted.size(); i += r) gone.insert(Coords(&sorted[i], &sorted[i] + r));
      Coords key(r);
      write_.buffer_->erase_where([&](const uint64_t* c) {
        key.assign(c, c + r);
        return gone.count(key) > 0;
      });
    }
  }
  auto w = make_writer(next_id());
  for (auto& [t, piece] : fills) w->add_fill_tile(t.data(), piece);
  w->add_erased_cells(sorted.data(), sorted.size() / r);
  pub_.park(std::move(w));
}

}  // namespace tessera
