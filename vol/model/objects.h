// objects.h — the objects tessera hands to HDF5 as `void*`, and the glue every callback
// uses: exception-to-error-stack translation and location resolution.
//
// Every object points at its container's SharedFile (object_model.h).  HDF5 passes the
// objects back to callbacks; `obj->type` tells which kind it is.  IDs the connector
// creates (spaces, plists) are owned by the object and closed in its destructor; datatypes
// are kept as encodings (StoredType), since HDF5 counts datatype IDs as open objects.
#pragma once

#include <hdf5.h>

#include <functional>
#include <set>
#include <H5VLconnector.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>

#include "vol/base/error.h"
#include "vol/model/object_model.h"
#include "vol/types/stored_type.h"

namespace tessera_vol {

struct Obj {
  H5I_type_t type;
  std::shared_ptr<SharedFile> file;
  uint64_t oid = kRootOid;  // the object (files: the root group)
  std::string path;         // absolute path it was opened by ("/" for files)
  // The file handle (FileObj serial) the object was opened through, for H5F_OBJ_LOCAL
  // in H5Fget_obj_count/ids; 0 = unknown.  Set it from the location object's handle.
  uint64_t handle = 0;
  Obj(H5I_type_t t, std::shared_ptr<SharedFile> f, uint64_t o, std::string p);
  virtual ~Obj();
  Obj(const Obj&) = delete;
  Obj& operator=(const Obj&) = delete;
};

struct FileObj : Obj {
  using Obj::Obj;
  // Opened without an MPI-IO fapl while the container is open in parallel in this
  // process (it shares that SharedFile): one rank alone holds it, so its flush and close
  // must not start the collective epoch commit (docs/parallel.md).
  bool serial_view = false;
};

struct GroupObj : Obj {
  using Obj::Obj;
};

class ValueFilters;
class NativeChunk;
class VirtualDataset;
class ExternalStorage;

struct DatasetObj : Obj {
  using Obj::Obj;
  ~DatasetObj() override;
  StoredType ftype;                // file datatype (an encoding, no ID: stored_type.h)
  uint64_t committed_type = 0;     // the committed type it was created with, 0: none
  hid_t space = H5I_INVALID_HID;  // current dataspace
  // Its class (simple, scalar or null), which no extent change alters: asked once.
  H5S_class_t space_class() const;
  hid_t dcpl = H5I_INVALID_HID;
  // H5Pget_layout(dcpl), asked once: the handle's dcpl does not change after the create
  // or open that set it (three to six asks per created dataset before; issue 20).
  H5D_layout_t layout() const;
  void set_layout(H5D_layout_t l) { layout_ = l; }  // known from the dcpl's facts
  // Whether the dcpl names external files (external_storage.h), asked once; known from
  // the dcpl's facts at a create or an open (plist_cache.h).
  bool uses_external() const;
  void set_uses_external(bool e) { external_ = e ? 1 : 0; }
  hid_t dapl = H5I_INVALID_HID;
  // `dapl` is only set for a virtual dataset, whose mappings read it after the open: its
  // own copy of the dapl of the open (dataset.cc set_access); other handles hold none.  Every handle keeps here what native keeps from the dapl of
  // the open: H5Dget_access_plist reports these over a copy of the default as it is then
  // (dataset.cc access_plist), as native does.
  struct KeptAccess {
    size_t nslots = 0, nbytes = 0;
    double w0 = 0;
    H5D_vds_view_t view = H5D_VDS_LAST_AVAILABLE;
    hsize_t gap = 0;
    std::string vds_prefix, efile_prefix;
  };
  std::shared_ptr<const KeptAccess> kept_access;  // set by set_access; shared by clones
  std::shared_ptr<tessera::Array> array;
  uint64_t array_id = 0;  // the id SharedFile::array knows it by (0: not known)
  // Variable-length datasets with a user fill value: the value as a vlen.h stream of the
  // file type, read for never-written cells (vlen_fill.h).  Empty: no such fill value.
  std::string vlen_fill;
  bool late_checked = false;  // allocation.h: the LATE chunked record is up to date
  // Filters that change values (value_filters.h); null when the dcpl has none, or
  // until the first write of an opened dataset.
  std::shared_ptr<ValueFilters> value_filters;
  bool value_filters_checked = false;
  // Direct chunk I/O through HDF5's filters (chunk_io.h); made on first use.
  std::shared_ptr<NativeChunk> native_chunk;
  // A virtual dataset's mappings and open sources (virtual_dataset.h); null otherwise.
  std::shared_ptr<VirtualDataset> vds;
  // Raw data in external files (external_storage.h) and the prefix their relative names
  // resolve against; null otherwise.
  std::shared_ptr<ExternalStorage> external;
  std::string efile_prefix;

 private:
  mutable H5D_layout_t layout_ = H5D_LAYOUT_ERROR;
  mutable int8_t external_ = -1;  // -1: not asked yet
  mutable H5S_class_t space_class_ = H5S_NO_CLASS;
};

struct DatatypeObj : Obj {
  using Obj::Obj;
  ~DatatypeObj() override;
  StoredType ftype;
  hid_t tcpl = H5I_INVALID_HID;
};

struct AttrObj : Obj {
  using Obj::Obj;  // oid = the owner object
  ~AttrObj() override;
  std::string name;
  StoredType ftype;
  // The dataspace as its record stores it, and its number of elements.  An ID is made
  // only for the calls that need one (space_id(); H5Aget_space decodes its own copy):
  // an H5Scopy and an H5Sclose per handle were most of the dataspace calls of creating
  // or iterating 30,000 attributes (issue 20).
  std::string space_enc;
  size_t npoints = 0;
  hid_t space_id();  // decoded on first use, closed with the handle; throws if unreadable
  // The acpl H5Aget_create_plist copies: SharedFile::shared_acpl(cset), looked up then
  // (an ID held per handle was an H5Iinc_ref and an H5Pclose per attribute).
  H5T_cset_t cset = H5T_CSET_ASCII;

 private:
  hid_t space_ = H5I_INVALID_HID;
};

// The object HDF5 passes to a callback; throws for NULL.
Obj* as_obj(void* p);

// Joins a parent path and a name into an absolute path.
std::string join(const std::string& parent, const std::string& name);

// Resolves a VOL location to an object id.  BY_SELF: obj itself; BY_NAME: the name
// relative to obj; BY_IDX: the n-th link of the named group; BY_TOKEN: the token.
// `path_out`, if given, receives the object's absolute path when known.
uint64_t locate(Obj* obj, const H5VL_loc_params_t* lp, std::string* path_out = nullptr);

// Orders (name, record) pairs that arrive sorted by name for BY_IDX access and
// iteration: by name or by the records' creation order, increasing or decreasing.
template <class Record>
void order_by_index(std::vector<std::pair<std::string, Record>>& v, H5_index_t idx, H5_iter_order_t order) {
  if (idx == H5_INDEX_CRT_ORDER)
    std::stable_sort(v.begin(), v.end(), [](auto& a, auto& b) { return a.second.corder < b.second.corder; });
  else if (idx != H5_INDEX_NAME)
    fail_arg("unknown index type");
  if (order == H5_ITER_DEC) std::reverse(v.begin(), v.end());
}

// The links of a group ordered for BY_IDX access (name or creation order, inc/dec).
std::vector<std::pair<std::string, LinkRecord>> ordered_links(SharedFile& f, uint64_t group, H5_index_t idx,
                                                              H5_iter_order_t order);

// Walks the group graph below `group` in H5Lvisit / H5Ovisit order (link.cc): each link of
// a group, ordered by `idx`/`order` (by name where the group does not track creation
// order), goes to `fn(path, link, group_tracks_corder)`; a nonzero result stops the walk
// and is returned.  After a link, a group it hard-links to is descended into, once per
// walk (`descended` holds the groups already walked, the start group included).  Link
// visits report every link; object visits keep their own set of objects reported.
herr_t walk_links(SharedFile& f, uint64_t group, H5_index_t idx, H5_iter_order_t order, std::set<uint64_t>& descended,
                  const std::function<herr_t(const std::string&, const LinkRecord&, bool)>& fn,
                  const std::string& prefix = "", int depth = 0);

void oid_to_token(uint64_t oid, H5O_token_t* token);
// An object's times as H5Oget_info reports them (object.cc).
void object_times(SharedFile& f, uint64_t oid, const ObjectRecord& r, H5O_info2_t* info);
uint64_t token_to_oid(const H5O_token_t* token);

// The file holding an attribute creation not yet committed (SharedFile::defer_attr_create),
// or null; commit_deferred_attr_create commits it (every callback does first).
extern std::atomic<SharedFile*> g_deferred_attr_file;
void commit_deferred_attr_create();
inline void commit_deferred() {
  if (g_deferred_attr_file.load(std::memory_order_relaxed)) commit_deferred_attr_create();
}

// Runs f and converts VolError / engine errors / exceptions into an HDF5 error record.
// `what` names the operation for the message ("dataset write").  A deferred attribute
// creation is committed first (attr_write alone takes it: vol_call_keeping_deferred).
void report(const char* func, const char* what) noexcept;
template <class F>
herr_t vol_call_keeping_deferred(const char* func, const char* what, F&& f) noexcept {
  try {
    f();
    return 0;
  } catch (...) {
    report(func, what);
    return -1;
  }
}
template <class F>
herr_t vol_call(const char* func, const char* what, F&& f) noexcept {
  return vol_call_keeping_deferred(func, what, [&] {
    commit_deferred();
    f();
  });
}
// For iterate/visit: runs f (which returns the user callback's value — positive stops
// early, negative is the callback's failure) with the container locked, and reports
// exceptions and callback failures on the error stack.
template <class F>
herr_t vol_call_iterate(const char* func, const char* what, void* obj, F&& f) noexcept {
  try {
    commit_deferred();
    Obj* o = as_obj(obj);
    std::lock_guard<std::recursive_mutex> lk(o->file->mu());
    herr_t rc = f(o);
    if (rc < 0) push_error_at(__FILE__, __LINE__, func, ErrorKind::kBadArgument,
                              "%s: the callback failed (returned %d)", what, rc);
    return rc;
  } catch (...) {
    report(func, what);
    return -1;
  }
}
template <class F>
void* vol_call_ptr(const char* func, const char* what, F&& f) noexcept {
  try {
    commit_deferred();
    return f();
  } catch (...) {
    report(func, what);
    return nullptr;
  }
}

// The dataset HDF5 handed a callback; fails ("not a dataset") on anything else.
DatasetObj* as_dataset(void* p);
// Fails unless the file was opened with write intent.  SharedFile::require_writable
// names the operation; a dataset callback's report() adds that already.
void require_write_intent(const SharedFile& f);

}  // namespace tessera_vol
