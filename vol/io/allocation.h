// allocation.h — H5Dget_space_status and H5Dget_storage_size as native HDF5 reports them.
//
// Native HDF5 allocates a dataset's storage at creation (alloc time EARLY; always for
// compact datasets), at the first write (LATE, contiguous) or chunk by chunk as chunks
// are written (INCR, chunked), and reports: contiguous/compact — allocated or not, and
// the full size once allocated; chunked — not/partly/fully allocated by the number of
// allocated chunks, and their bytes.  Tessera's tiles are the chunks; nothing is
// pre-allocated on disk, so the answers are computed from the alloc time, the layout,
// and which tiles hold written cells (tessera::Array::written_tiles):
//
//   layout       EARLY                        LATE / INCR
//   compact      allocated, n * size          (always EARLY in HDF5)
//   contiguous   allocated, n * size          allocated once written, n * size
//   chunked      all chunks of the extent     written tiles (partly or fully)
//
// LATE for a chunked dataset allocates every chunk of the extent at the first write,
// later chunks as they are written, and a shrink frees the chunks it cuts off: the
// region allocated at the first write is kept in the catalog (`ae/<hex16 oid>`: the
// extent then, narrowed by every later shrink; docs/format.md).
//
// where n is the number of elements and size the element's size in the file (16 bytes
// for variable-length data, HDF5's heap reference).  Chunked, unfiltered: allocated
// chunks × chunk bytes, as native — unless the dataset allocates incrementally (INCR,
// chunked's default) and tessera holds fewer bytes for it (sparse chunks: only their
// written cells are stored, docs/sparse.md): then those.  (EARLY and LATE ask for whole
// chunks up front: native's numbers.)
// Chunked with filters: tessera's compressed tile bytes (native's are its own filters'
// output, which tessera does not produce).  "Allocated" chunks are the tiles holding a
// defined cell: an erase that undefines a whole chunk deallocates it.
#pragma once

#include <hdf5.h>

#include <vector>

#include "engine/geometry/box.h"
#include "engine/catalog/catalog.h"

namespace tessera_vol {

struct DatasetObj;

H5D_space_status_t space_status(DatasetObj& d);
hsize_t storage_size(DatasetObj& d);

// Chunked datasets: the chunks native would have allocated (tile coordinates), in
// row-major chunk order — what its chunk index lists (H5Dget_num_chunks, H5Dchunk_iter).
std::vector<tessera::Coords> allocated_chunk_list(DatasetObj& d);
// Their number, without listing them (saturates at 2^64-1).
uint64_t allocated_chunk_count(DatasetObj& d);

// Hooks for the LATE chunked record: before a write, and after an extent change.
void allocation_before_write(DatasetObj& d);
void allocation_extent_changed(DatasetObj& d, tessera::CatalogBatch& b);

}  // namespace tessera_vol
