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

// H5Ocopy of stored reference values (n elements of the file type `ftype`: H5T_STD_REF
// records or old-style H5T_STD_REF_OBJ) copied from `src` into `dst`: each target in the
// source file becomes `target(oid)` (0: a null reference); external references keep their
// target; the records a reference keeps beside it (rx/: a region, an attribute name, a
// file name) are duplicated into `dst` (batch `b`).  Old-style region references are
// refused with an error.
void copy_stored_refs(SharedFile& src, SharedFile& dst, tessera::CatalogBatch& b, hid_t ftype, uint8_t* data,
                      size_t n, const std::function<uint64_t(uint64_t)>& target);

}  // namespace tessera_vol
