// type_conv.h — datatype conversion between a dataset's file type and a memory type.
//
// The VOL connector, not HDF5, converts types: H5Tconvert works in place on a buffer of
// max(src, dst) * n bytes.  Compound types need a background buffer (H5T_BKG_YES): the
// members the source lacks are taken from it — for writes the current file data, for
// reads the caller's memory buffer — which is how h5py writes and reads compound subsets.
#pragma once

#include <hdf5.h>

#include <cstddef>

namespace tessera_vol {

// True when converting between these types needs a background buffer.
bool needs_background(hid_t src, hid_t dst);

// Converts n elements in place: `buf` holds n src elements and must have room for
// n * max(src, dst) bytes; `bkg` (n dst elements) may be null unless needs_background.
// Throws VolError naming both types' classes if HDF5 has no conversion path.
void convert(hid_t src, hid_t dst, size_t n, void* buf, void* bkg, hid_t dxpl);

}  // namespace tessera_vol
