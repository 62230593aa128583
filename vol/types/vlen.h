// vlen.h — variable-length data (vlen strings, vlen sequences, nested in compounds and
// arrays) as bytes in the catalog.
//
// In memory HDF5 represents such data by pointers (char* for strings, hvl_t for
// sequences), so the bytes the application hands us cannot be stored as they are.  We
// walk the datatype and write a self-describing stream instead: fixed-size parts as their
// bytes, each variable-length part as a u64 length (kNull for a NULL string) followed by
// its elements, serialized recursively.  Reading rebuilds the memory form, allocating
// with the transfer plist's vlen allocator (H5Pset_vlen_mem_manager) or malloc — h5py
// frees what it reads with free().
#pragma once

#include <hdf5.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tessera_vol {

// True if the type holds a vlen sequence or a variable-length string anywhere.
bool type_has_vlen(hid_t type);

// The allocator for vlen data read into application memory.
struct VlenAlloc {
  H5MM_allocate_t alloc = nullptr;  // nullptr: malloc
  void* info = nullptr;
  void* operator()(size_t n) const;
};
VlenAlloc vlen_allocator(hid_t dxpl);

// Serializes n elements of `type` (memory layout) at buf.
std::string vlen_serialize(hid_t type, size_t n, const void* buf);
// Rebuilds n elements of `type` at buf from a stream vlen_serialize wrote.  Throws on a
// stream that does not match the type (corrupt catalog).
void vlen_deserialize(hid_t type, size_t n, const std::string& bytes, void* buf, const VlenAlloc& alloc);

// Size per element HDF5 reports for the type once stored in a file (H5Aget_info's
// data_size): a vlen or vlen string takes 16 bytes there (length + global heap id).
size_t file_type_size(hid_t type);

// Where the 1.12-style references (H5T_STD_REF, 64 bytes each) inside compound, array
// and variable-length types sit, so reference.h can store and rebuild them (issue 45):
// byte offsets within one element of a type without variable-length parts,
std::vector<size_t> fixed_ref_offsets(hid_t type);
// and byte offsets in a stream vlen_serialize wrote for n elements, starting at `from`
// (empty when the type holds no reference).
std::vector<size_t> stream_ref_offsets(hid_t type, size_t n, const uint8_t* stream, size_t size, size_t from = 0);

}  // namespace tessera_vol
