// array_census.cc — Array::written_tiles: which tiles hold defined cells.
//
// HDF5 reports allocation per chunk (H5Dget_space_status, H5Dget_storage_size, and the
// chunk queries); a tessera tile is the dataset's chunk.  A tile counts while it holds a
// defined cell (DefinedPlanner over the whole extent): written and neither erased nor cut
// off by an extent change since — as HDF5 deletes chunks a shrink leaves outside the
// dataset.  The census reads every sparse and erased tile's coordinates and holds the
// defined scattered cells once in memory: it is meant for the rare calls that ask, not
// for the I/O path.
#include <algorithm>
#include <set>

#include "engine/array/array.h"
#include "engine/read/defined_cells.h"
#include "engine/schema/layout.h"

namespace tessera {

Status Array::written_tiles(std::vector<Coords>* tiles) {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] {
    tiles->clear();
    const Box extent = schema_.domain();
    if (extent.cells() == 0) return;
    std::vector<Box> all;
    defined_locked({extent}, &all);
    const Layout layout(schema_);
    auto less = [&](const Coords& a, const Coords& b) { return layout.compare_tiles(a.data(), b.data()) < 0; };
    std::set<Coords, decltype(less)> seen(less);
    for (const Box& b : all) layout.for_each_tile(b, [&](const Coords& t) { seen.insert(t); });
    tiles->assign(seen.begin(), seen.end());
  });
}

}  // namespace tessera
