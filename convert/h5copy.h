// h5copy.h — copying a whole HDF5 file's contents from one open file to another with
// HDF5's C API, whatever connector each is opened with: `tessera export` (a tessera
// container to a native HDF5 file) and `tessera import` (the reverse) are this copy with
// the two ends swapped, and so are the connector's file images (vol/model/file_image.h).  HDF5's own H5Ocopy cannot copy between files of different
// connectors.
//
// What is copied: every group (with its creation properties: link creation order, link
// storage thresholds), every hard link (an object reached twice is linked, not copied
// twice), soft and external links, committed datatypes (datasets and attributes created
// with one keep using it), every attribute (in creation order where tracked), object
// comments, datasets with their creation property lists (layout, chunking, filters,
// fill value and its allocation time, object time tracking) and their data, and the
// file's creation properties and library version bounds.
//
// Data is streamed with bounded memory: chunked datasets whose filters tessera and HDF5
// share (deflate, shuffle) move their stored chunks unchanged (H5Dchunk_iter,
// H5Dread_chunk, H5Dwrite_chunk: nothing is decompressed); other datasets move in slabs of
// whole chunks (or rows) of at most kSlabBytes.  Variable-length data and references are
// converted through memory (references re-created in the target: object, region and
// attribute references; old-style object references, also inside compound, array and
// variable-length types, as dimension scales keep them); virtual datasets and datasets with
// external storage keep their mappings / raw files, whose data is not in the file.
#pragma once
#include <hdf5.h>

#include <cstdint>
#include <functional>
#include <string>

namespace tool {

struct CopyStats {
  uint64_t groups = 0, datasets = 0, datatypes = 0, links = 0, attributes = 0;
  uint64_t bytes = 0;          // logical bytes of dataset data moved
  uint64_t stored_chunks = 0;  // chunks moved as stored (unchanged) bytes
};

struct CopyOptions {
  // Called with (logical bytes copied, logical bytes in all) as data moves.
  std::function<void(uint64_t, uint64_t)> progress;
  uint64_t slab_bytes = 64ull << 20;  // the most one read/write holds (fixed-size data)
};

// Copies everything under src's root group into dst's (an empty file).  Throws Failure
// naming the object that could not be copied.
CopyStats copy_file(hid_t src, hid_t dst, const CopyOptions& opts);

// The logical bytes of all datasets' data (for a progress total).
uint64_t logical_bytes(hid_t file);

}  // namespace tool
