// reference.h — HDF5 1.12-style references (H5R_ref_t, H5T_STD_REF) in tessera datasets
// and attributes.
//
// In memory an H5R_ref_t holds process-local things: the ID of the file it was made in
// and pointers to a file name, a selection or an attribute name.  Stored as they are,
// those bytes would be garbage in any later process (and crash whoever dereferences
// them).  So each reference is stored as a 64-byte record of what identifies its
// target (docs/format.md, "References"):
//
//   byte 0 'R', byte 1 version 1, byte 2 the H5R_type_t, bytes 8..23 the object token,
//   bytes 24..31 the id of an "rx/<hex16 id>" catalog record holding the file name of an
//   external reference, the encoded selection of a region reference (H5Sencode2) or the
//   name of an attribute reference (0: none);
//   64 zero bytes: a reference never set.
//
// and rebuilt through HDF5's public API on read (H5Oopen_by_token, then
// H5Rcreate_object / _region / _attr), so the application gets a reference as valid as
// native's, which it releases with H5Rdestroy.  Old-style object references
// (hobj_ref_t, H5T_STD_REF_OBJ: the object id, docs/compat.md) read as H5T_STD_REF are
// converted the same way, as native converts them (h5dump reads them so).
#pragma once

#include <hdf5.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/catalog/catalog.h"

namespace tessera_vol {

class SharedFile;
struct Obj;


// n H5R_ref_t of the application -> n stored records (out: n * 64 bytes).
void refs_to_stored(const std::shared_ptr<SharedFile>& f, const void* refs, size_t n, uint8_t* out);
// Reading: `at` is the dataset or attribute being read; the references' targets in its
// container are opened through it.
// n stored records -> n H5R_ref_t (the caller's buffer; each one to be H5Rdestroy'ed).
void stored_to_refs(Obj* at, const uint8_t* stored, size_t n, void* refs);
// n old-style dataset-region references (hdset_reg_ref_t, region_ops.h) -> n H5R_ref_t.
void dsetregs_to_refs(Obj* at, const uint8_t* regrefs, size_t n, void* refs);
// n old-style object references (hobj_ref_t) -> n H5R_ref_t.
void objrefs_to_refs(Obj* at, const uint8_t* objrefs, size_t n, void* refs);

// References inside compound, array and variable-length types (issue 45: HDF5's
// dimension scales store new-style references in vlen and compound attributes whenever
// the connector is not native): each one at byte offset at[i] of `buf`, replaced in
// place by the 64-byte record above (the two have the same size, so a compound's or a
// stream's layout is unchanged), and back.  Rebuilt references belong to the caller
// (H5Rdestroy, or H5Treclaim of the whole buffer).
void refs_to_stored_at(const std::shared_ptr<SharedFile>& f, uint8_t* buf, const std::vector<size_t>& at);
void stored_to_refs_at(Obj* obj, uint8_t* buf, const std::vector<size_t>& at);
// n elements of a type without variable-length parts, of `elem` bytes each, whose
// references sit at offsets `offsets` of each element: the positions of all of them.
std::vector<size_t> element_ref_offsets(const std::vector<size_t>& offsets, size_t elem, size_t n);

// A transfer of references themselves (either type a reference type), as opposed to
// values with references inside.
bool plain_ref_transfer(hid_t ftype, hid_t mtype);
// Reads n stored references of file type `ftype` into n H5R_ref_t (`mtype` must be
// H5T_STD_REF): 1.12-style records, old-style object references (hobj_ref_t) and
// old-style region references, as native converts them.  Anything else is refused.
void read_plain_refs(Obj* at, hid_t ftype, hid_t mtype, const uint8_t* stored, size_t n, void* refs);

// An attribute's or a value's stored bytes (n elements of `ftype`; a vlen.h stream when
// the type has variable-length parts) with the references nested in it rebuilt, for a
// read into `mtype` (which must hold references where ftype does, or none: then the
// records are left for the conversion to drop).  Variable-length values convert only
// to an equal type.
std::string nested_refs_read(Obj* at, hid_t ftype, hid_t mtype, bool vlen, const std::string& stored, size_t n);
// The value the application wrote (n elements of `ftype`'s form, already converted from
// `mtype`) with its nested references stored as records; `mtype` must hold all of them.
void nested_refs_write(const std::shared_ptr<SharedFile>& f, hid_t ftype, hid_t mtype, bool vlen, std::string* value,
                       size_t n);

// H5Ocopy of stored reference values (n elements of the file type `ftype`: H5T_STD_REF
// records or old-style H5T_STD_REF_OBJ) copied from `src` into `dst`: each target in the
// source file becomes `target(oid)` (0: a null reference); external references keep their
// target; the records a reference keeps beside it (rx/: a region, an attribute name, a
// file name) are duplicated into `dst` (batch `b`).  Old-style region references are
// refused with an error.
void copy_stored_refs(SharedFile& src, SharedFile& dst, tessera::CatalogBatch& b, hid_t ftype, uint8_t* data,
                      size_t n, const std::function<uint64_t(uint64_t)>& target);
// The same for stored records at byte offsets `at` of `data` (references nested in
// compound, array and variable-length values).
void copy_stored_refs_at(SharedFile& src, SharedFile& dst, tessera::CatalogBatch& b, uint8_t* data,
                         const std::vector<size_t>& at, const std::function<uint64_t(uint64_t)>& target);

}  // namespace tessera_vol
