// native_chunk.h — one chunk through HDF5's own filter pipeline.
//
// A scratch native dataset of exactly one chunk in an in-memory file (core driver, no
// backing store, no chunk cache), with a dataset's dcpl filters and file type: what
// passes through it is filtered by HDF5's code and any plugin on HDF5_PLUGIN_PATH, never
// by tessera's.  Used where tessera must produce or consume the bytes or values native
// HDF5 would: value-changing filters (value_filters.h: decode(encode(chunk))), and direct
// chunk I/O on datasets whose pipeline the engine does not share (chunk_io.h).
// Runs on the caller's thread (HDF5 is not thread-safe).
#pragma once

#include <hdf5.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/geometry/box.h"

namespace tessera_vol {

class NativeChunk {
 public:
  // Throws VolError as native H5Dcreate fails (a filter's can_apply or set_local
  // refusing the type).
  NativeChunk(hid_t ftype, hid_t dcpl, const tessera::Coords& chunk);
  ~NativeChunk();
  NativeChunk(const NativeChunk&) = delete;
  NativeChunk& operator=(const NativeChunk&) = delete;

  // `chunk` (the whole chunk's cells, row-major, file type) replaced by what native
  // reads back after writing it: decode(encode(chunk)).
  void round_trip(void* chunk);
  // The chunk's cells encoded by the pipeline, and the filter mask HDF5 reports.
  void encode(const void* chunk, std::vector<uint8_t>* bytes, uint32_t* mask);
  // Encoded bytes (filters in `mask` skipped) decoded into the chunk's cells.
  void decode(const void* bytes, size_t n, uint32_t mask, void* chunk);

 private:
  void open();
  void close();
  void maybe_renew();

  hid_t ftype_ = H5I_INVALID_HID, dcpl_ = H5I_INVALID_HID;
  tessera::Coords chunk_;
  hid_t file_ = H5I_INVALID_HID, dset_ = H5I_INVALID_HID;
  size_t trips_ = 0;
};

}  // namespace tessera_vol
