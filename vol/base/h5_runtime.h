// h5_runtime.h — the HDF5 library the connector runs inside, and the calls whose form
// depends on its version.
//
// The connector is compiled against HDF5 1.14's headers but runs inside whatever HDF5
// 1.14 or 2.x the process holds (vol/loader/tessera_loader.c finds it and hands its
// handle to tessera_vol_class).  The VOL class (version 3), the callback argument
// structs and the enums the connector uses are the same in both; what differs is a few
// functions: versioned ones (H5Tdecode, H5Dread_chunk), macros that expand to
// different symbols (H5FD_SEC2, H5VL_NATIVE: h5_shims.cc), the parallel-only ones
// (H5Pget_fapl_mpio), and two callback structs that changed (native chunk read and write).  Each of
// those goes through here, resolved from the running library by name.
#pragma once

#include <hdf5.h>

#include <cstddef>
#include <cstdint>

namespace tessera_vol {

struct H5Runtime {
  void* handle = nullptr;  // dlopen handle of the running libhdf5 (never loads another)
  unsigned major = 0, minor = 0, release = 0;
};

// The library tessera_vol_class was given (zeros before that).
const H5Runtime& h5_runtime();
inline bool h5_is_2x() { return h5_runtime().major >= 2; }

// A symbol of the running libhdf5, or nullptr.
void* h5_symbol(const char* name);

// H5Tdecode of an encoded datatype of `size` bytes: H5Tdecode2 (2.x, bounds-checked),
// else 1.14's H5Tdecode.
hid_t decode_type(const void* buf, size_t size);

// H5Dread_chunk into a buffer of *buf_size bytes: H5Dread_chunk2 (2.x; too small a
// buffer fails with *buf_size set to the size needed), else 1.14's H5Dread_chunk.
herr_t read_chunk_bytes(hid_t dset, hid_t dxpl, const hsize_t* offset, uint32_t* filters, void* buf,
                        size_t* buf_size);

// The 2.x layout of the native "chunk read" optional callback's arguments
// (H5VLnative.h): 1.14's struct plus the caller's buffer size.
struct NativeChunkRead2 {
  const hsize_t* offset;
  uint32_t filters;
  void* buf;
  size_t* buf_size;  // in: bytes available at buf; out: the chunk's size
};

// The 2.x layout of the native "chunk write" optional callback's arguments: the size
// became a size_t (H5Dwrite_chunk's data_size), which moves `buf` too.
struct NativeChunkWrite2 {
  const hsize_t* offset;
  uint32_t filters;
  size_t size;
  const void* buf;
};

}  // namespace tessera_vol
