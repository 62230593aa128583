// array_census.cc — Array::written_tiles: which tiles hold written cells.
//
// HDF5 reports allocation per chunk (H5Dget_space_status, H5Dget_storage_size, and the
// chunk queries); a tessera tile is the dataset's chunk.  A tile counts once any
// fragment or the write buffer holds a cell of it; a fill entry (an extent change's
// erasure) covering the whole tile inside the extent forgets it again, as HDF5 deletes
// chunks a shrink leaves outside the dataset.  Sparse fragments are read for their
// coordinates, so the census costs a read of every sparse tile's coordinates: it is
// meant for the rare calls that ask, not for the I/O path.
#include <algorithm>
#include <map>

#include "engine/array.h"
#include "engine/layout.h"
#include "engine/write_buffer.h"

namespace tessera {

namespace {

struct TileLess {
  const Layout* layout;
  bool operator()(const Coords& a, const Coords& b) const { return layout->compare_tiles(a.data(), b.data()) < 0; }
};

}  // namespace

Status Array::written_tiles(std::vector<Coords>* tiles) {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] {
    tiles->clear();
    finish_parked();
    const Layout layout(schema_);
    const int rank = static_cast<int>(schema_.rank());
    const Coords& extent = schema_.extent;
    std::map<Coords, bool, TileLess> seen(TileLess{&layout});
    Coords tile(static_cast<size_t>(rank));
    auto add_cells = [&](const uint64_t* coords, size_t cells) {
      for (size_t c = 0; c < cells; ++c) {
        layout.tile_of(coords + c * static_cast<size_t>(rank), tile.data());
        seen[tile] = true;
      }
    };
    for (const auto& f : frags_) {
      const FragmentMeta& m = f->meta();
      // Fill entries (an extent change's erasure; one fragment's boxes are disjoint, and
      // a tile may be erased by several) forget a tile once they cover all of it that
      // lies inside the extent.
      std::map<Coords, uint64_t, TileLess> erased(TileLess{&layout});
      for (const DenseEntry& e : m.dense) {
        if (e.kind == DenseEntry::kData) {
          seen[e.tile] = true;
          continue;
        }
        Box inside = layout.tile_box(e.tile.data()), part = e.box;
        bool empty = false;
        for (int d = 0; d < rank; ++d) {
          inside.hi[d] = std::min(inside.hi[d], extent[d] == 0 ? 0 : extent[d] - 1);
          part.lo[d] = std::max(part.lo[d], inside.lo[d]);
          part.hi[d] = std::min(part.hi[d], inside.hi[d]);
          empty |= extent[d] == 0 || inside.lo[d] > inside.hi[d] || part.lo[d] > part.hi[d];
        }
        if (!empty) erased[e.tile] += part.cells();
      }
      for (const auto& [t, cells] : erased) {
        Box inside = layout.tile_box(t.data());
        for (int d = 0; d < rank; ++d) inside.hi[d] = std::min(inside.hi[d], extent[d] - 1);
        if (cells >= inside.cells()) seen.erase(t);
      }
      for (size_t i = 0; i < m.sparse.size(); ++i) {
        auto data = f->sparse_tile(i, layout);
        add_cells(data->coords.data(), data->coords.size() / static_cast<size_t>(rank));
      }
    }
    if (buffer_ && !buffer_->empty()) add_cells(buffer_->coords().data(), buffer_->cells());
    for (const auto& [t, _] : seen) {
      bool in = true;
      for (int d = 0; d < rank; ++d) in &= t[d] * schema_.tile_extent[d] < extent[d];
      if (in) tiles->push_back(t);
    }
  });
}

}  // namespace tessera
