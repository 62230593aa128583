// chunk_io.h — HDF5's chunk-level dataset operations on tessera tiles (a chunk is a
// tile): H5Dwrite_chunk, H5Dread_chunk, H5Dget_chunk_storage_size, H5Dget_num_chunks,
// H5Dget_chunk_info, H5Dget_chunk_info_by_coord, H5Dchunk_iter, H5Dget_chunk_index_type,
// plus H5Dget_offset and H5Dformat_convert (the native dataset optional operations).
//
// Bytes: when the dataset's HDF5 filters are ones the engine applies byte for byte as
// HDF5 does (shuffle, deflate; no filters at all), a written chunk's bytes are stored as
// the tile's encoded bytes and a read returns stored bytes unchanged (engine
// Array::write_tile_encoded / read_tile_encoded).  Any other pipeline (fletcher32, szip,
// scale-offset, n-bit, plugins) goes through HDF5's own filters on a one-chunk native
// scratch dataset (native_chunk.h): a write is decoded to values, a read encodes the
// values — bytes native would accept, equal to what was written when the filters are
// deterministic.  The filter mask reported is that of the filters the stored bytes skip.
//
// Chunk index: the allocated chunks (allocation.h) in row-major chunk order.  Addresses
// are tessera's own (the chunk's position if the dataset's chunks lay back to back in
// that order, unfiltered); sizes are the sizes H5Dread_chunk returns.  Details:
// docs/vol-datasets.md, "Direct chunk I/O and chunk queries".
#pragma once

#include <hdf5.h>

namespace tessera_vol {

struct DatasetObj;

// A native dataset optional operation (H5VL_NATIVE_DATASET_*): its result (H5Dchunk_iter:
// the callback's value that stopped the iteration, else 0).  Throws VolError.
herr_t dataset_native_optional(DatasetObj& d, H5VL_optional_args_t* args);

}  // namespace tessera_vol
