// array_info.h — what an Array reports (array.h): its fragments, its value indexes and
// an index build's work, and what a vacuum removed.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/fragment/fragment.h"
#include "engine/geometry/box.h"
#include "engine/schema/schema.h"

namespace tessera {

// What an array's value indexes cover (Array::index_info).
struct IndexInfo {
  uint64_t fragments = 0;         // file fragments (inline ones are always scanned)
  uint64_t indexed = 0;           // of those, with an index file
  uint64_t inline_fragments = 0;
  uint64_t data_bytes = 0;        // bytes of the file fragments
  uint64_t indexed_data_bytes = 0;  // bytes of the indexed ones
  uint64_t index_bytes = 0;       // bytes of their index files
  uint64_t unindexed_cells = 0;   // data cells a query would scan (file fragments without an index)
};

// An index build's work and result (Array::build_index).
struct IndexBuild {
  uint32_t part = 0, parts = 1;  // MPI: this rank builds fragment i when i % parts == part
  bool rebuild = false;          // also rebuild indexes that exist
  // Only fragments every rank sees (MPI: published ones, in the same order everywhere);
  // nothing is spilled.  Otherwise the write buffer is spilled first and every file
  // fragment, published or not, is indexed.
  bool published_only = false;
  // Called on the building thread as chunks finish: cells done, cells to do in all.
  std::function<void(uint64_t done, uint64_t total)> progress;
  // Out: fragments indexed, their cells, bytes of index written.
  uint64_t built = 0, cells = 0, bytes = 0;
};

struct FragmentInfo {
  FragmentId id;
  std::string path;  // the file, or for an inline fragment its catalog record's label
  uint64_t file_size = 0, cells = 0, dense_tiles = 0, sparse_tiles = 0;
  bool has_domain = false;
  Box domain;
  uint64_t fill_boxes = 0, erased_tiles = 0;  // dense entries that are fill boxes; erased tiles
  bool is_inline = false;
  bool sets_extent = false;
  std::vector<FragmentId> replaces;  // the fragments a consolidation merged into this one
  StorageOrder order;  // its tiles' and cells' order (Fragment::order): the schema's unless converted since
  static FragmentInfo of(const Fragment& f);
};

// What Array::vacuum removed.
struct VacuumResult {
  uint64_t fragments = 0, bytes = 0;
};

}  // namespace tessera
