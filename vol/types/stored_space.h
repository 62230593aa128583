// stored_space.h — dataspaces kept as their H5Sencode2 bytes (object and attribute
// records), decoded once per distinct encoding for the whole process.
//
// Reopening a file of 10,000 small datasets with three attributes each decodes the same
// few encodings ~70,000 times (a handle's space, an attribute's space, H5Aiterate's
// sizes); every H5Sdecode builds and zeroes a scratch file structure inside HDF5, most
// of its cost.  The cache keeps one decoded ID per encoding; callers get an H5Scopy of
// it (the same extent, selection and encoding version) or just its number of elements.
// Bounded; cleared when the connector terminates (IDs die with the library).
#pragma once

#include <hdf5.h>

#include <string>
#include <string_view>

namespace tessera_vol {

// A dataspace's extent: its class, rank (-1: an invalid ID), dims and maximum dims, read
// with two API calls.  A create reads it once for the schema and the stored encoding.
struct SpaceExtent {
  H5S_class_t cls = H5S_NO_CLASS;
  int rank = -1;
  hsize_t dims[H5S_MAX_RANK], maxdims[H5S_MAX_RANK];
  bool operator==(const SpaceExtent& o) const;
};
SpaceExtent read_extent(hid_t space);

// A new dataspace ID decoded from `enc`, owned by the caller; H5I_INVALID_HID if `enc`
// does not decode.
hid_t decode_space(std::string_view enc);
// The number of elements of the dataspace `enc` encodes; -1 if it does not decode or
// has 2^63 elements or more (a chunked dataset may: HDF5 allows extents whose count
// overflows 64 bits; decode_space decodes those).
hssize_t space_npoints(std::string_view enc);
// H5Sencode2 of `space` (the records' form); throws VolError if it cannot be encoded.
// Remembered per dataspace ID for IDs selecting everything, checked against the ID's
// extent on every use: an application creating attributes with one scalar space encodes
// it once (the encoding is a third of H5Acreate; IDs are never reused while the library
// runs, and an extent changed since is encoded again).
// npoints, when given: the extent's number of elements (no further call); -1 for 2^63
// or more.
std::string encode_space(hid_t space, hssize_t* npoints = nullptr);
// The same with `space`'s extent already read (read_extent).
std::string encode_space(hid_t space, const SpaceExtent& x, hssize_t* npoints = nullptr);
// Closes the cached IDs (connector terminate).
void clear_space_caches();

}  // namespace tessera_vol
