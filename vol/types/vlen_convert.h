// vlen_convert.h — type conversion for variable-length datasets.
//
// A variable-length dataset's cells hold vlen.h streams of the FILE type's memory form.
// When the application's memory type differs (a C struct of native ints and a char*
// written to a compound of big-endian integers and a vlen string — HDF5's h5ex_t_cmpd),
// the elements go through H5Tconvert between the two memory forms, which allocates the
// destination's variable-length parts (HDF5 never converts vlen data shallowly:
// variable-length types force a real conversion).  Whoever owns the source side's
// allocations frees them afterwards, so nothing leaks and nothing is freed twice:
//
//   write: the application's elements are copied, converted to the file type, serialized,
//          and the conversion's allocations released.  Compound members the memory type
//          lacks keep the cell's stored value (HDF5's rule for member subsets): the
//          stored values are read as the background, and released separately from the
//          members the conversion filled.
//   read:  stored elements are rebuilt in the file type, converted to the memory type
//          (allocating with the transfer plist's vlen allocator, as HDF5 does), and the
//          rebuilt elements released; members the file type lacks keep the caller's
//          values.
#pragma once

#include <hdf5.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tessera_vol {

// Converts n application elements (`in`, packed, memory type `mtype`) to vlen.h streams
// of file type `ftype`: out_lengths[i] bytes each, concatenated into *out.  `stored`
// yields the cells' current streams (only called for compound member subsets).
void vlen_write_converted(hid_t mtype, hid_t ftype, size_t n, const uint8_t* in,
                          const std::function<void(std::vector<uint64_t>*, std::vector<uint8_t>*)>& stored,
                          std::vector<uint64_t>* out_lengths, std::string* out);

// Splits a stream of n elements of `type` (vlen_serialize's output for n elements, as an
// attribute stores its value) into per-element lengths and bytes, the form `stored`
// above yields.  An empty stream (never written) gives n zero lengths.
void vlen_split(hid_t type, size_t n, const std::string& stream, std::vector<uint64_t>* lengths,
                std::vector<uint8_t>* data);

// Rebuilds n cells (lengths/data as read_selection_var returns them) of file type
// `ftype` and converts them into `packed` (n elements of memory type `mtype`, which on
// entry holds the caller's values for the background).
void vlen_read_converted(hid_t ftype, hid_t mtype, size_t n, const std::vector<uint64_t>& lengths,
                        const std::vector<uint8_t>& data, hid_t dxpl, uint8_t* packed);

}  // namespace tessera_vol
