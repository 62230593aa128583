// dataset.cc — H5D callbacks: one HDF5 dataset is one engine Array.
//
// Create maps the dcpl onto a Schema (dcpl.cc) and stores the user's dcpl as given, so
// H5Dget_create_plist reports the layout, chunk dims, filters and fill value the user
// set.  Read/write resolve the file selection (selection.cc), move the data through a
// packed buffer in HDF5's pairing order and convert types with H5Tconvert
// (type_conv.cc); when the memory side is one contiguous run and the types are equal the
// engine reads/writes the application's buffer directly.  Writes land in fragments or the
// array's write buffer; arrays are shared by all handles of the container, so a read
// through any handle sees every earlier write, and the container flushes at file close.
// Types holding variable-length data map to variable-length arrays: one serialized
// element (vlen.h) per cell.  Details and limits: docs/vol-datasets.md.
//
// This file creates, opens, queries and closes datasets; dataset_transfer.cc reads and
// writes them (H5Dread / H5Dwrite).
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "vol/io/allocation.h"
#include "vol/io/chunk_io.h"
#include "vol/types/dcpl.h"
#include "vol/features/elink.h"
#include "vol/model/mpio_cause.h"
#include "vol/types/external_storage.h"
#include "vol/model/objects.h"
#include "vol/model/reference.h"
#include "vol/types/selection.h"
#include "vol/types/stored_space.h"
#include "vol/features/query.h"
#include "vol/features/sparse.h"
#include "vol/base/tessera_vol.h"
#include "vol/types/transform.h"
#include "vol/types/type_conv.h"
#include "vol/model/value_filters.h"
#include "vol/types/vlen.h"
#include "vol/types/vlen_convert.h"
#include "vol/types/vlen_fill.h"
#include "vol/io/virtual_dataset.h"
#include "vol/io/dataset_io.h"
#include "vol/model/parallel.h"

namespace tessera_vol {

namespace {

// The engine array's extent is authoritative (H5Dset_extent through another handle, or
// a refresh, may have changed it): bring the handle's dataspace up to date.
void sync_space(DatasetObj& d) {
  if (d.space_class() != H5S_SIMPLE) return;
  if (d.vds) {  // the sources decide (virtual_dataset.h)
    d.vds->update_extent(d);
    return;
  }
  const tessera::Coords& ext = d.array->schema().extent;
  hsize_t cur[H5S_MAX_RANK], mx[H5S_MAX_RANK];
  int r = H5Sget_simple_extent_dims(d.space, cur, mx);
  if (r != static_cast<int>(ext.size())) fail_arg("dataspace rank differs from the stored array");
  if (std::equal(ext.begin(), ext.end(), cur)) return;
  std::copy(ext.begin(), ext.end(), cur);
  if (H5Sset_extent_simple(d.space, r, cur, mx) < 0) fail_arg("cannot update the dataspace extent");
}

// H5Dset_extent of a virtual dataset: within its max dims and holding every limited
// mapping (as native); the stored dataspace records it.
void set_virtual_extent(DatasetObj& d, const hsize_t* size) {
  std::lock_guard<std::recursive_mutex> g(d.file->mu());
  if (!size) fail_arg("NULL size");
  hsize_t cur[H5S_MAX_RANK], mx[H5S_MAX_RANK];
  int r = H5Sget_simple_extent_dims(d.space, cur, mx);
  for (int i = 0; i < r; ++i)
    if (mx[i] != H5S_UNLIMITED && size[i] > mx[i])
      fail_arg("new size " + std::to_string(size[i]) + " exceeds the maximum " + std::to_string(mx[i]) +
               " in dimension " + std::to_string(i));
  d.vds->check_dims(size, r);
  if (H5Sset_extent_simple(d.space, r, size, mx) < 0) fail_arg("cannot update the dataspace");
  ObjectRecord rec = d.file->object(d.oid);
  rec.space_enc = encode_space(d.space);
  tessera::CatalogBatch b;
  d.file->put_object(b, d.oid, rec);
  d.file->commit(b);
}

// A handle's dapl (objects.h KeptAccess): what native keeps from the dapl of the open,
// and the dapl itself only where it is read after the open (a virtual dataset's view,
// printf gap and prefix: its own copy).  Other handles hold no dapl: two or three H5Pget
// calls instead of an H5Pcopy + H5Pclose, which was ~10 % of reopening 10,000 datasets
// (issue 20).  dapl_id: the dapl of the open or create
// (H5P_DEFAULT: the default).  Needs the handle's dcpl; setup_external follows it.
void set_access(DatasetObj& d, hid_t dapl_id) {
  if (dapl_id == H5P_DEFAULT) dapl_id = H5P_DATASET_ACCESS_DEFAULT;
  auto k = std::make_shared<DatasetObj::KeptAccess>();
  // Only what access_plist reports (the rest comes from the default as it is then).
  bool ok = true;
  if (d.layout() == H5D_CHUNKED) ok = H5Pget_chunk_cache(dapl_id, &k->nslots, &k->nbytes, &k->w0) >= 0;
  if (ok && d.vds) ok = H5Pget_virtual_view(dapl_id, &k->view) >= 0 && H5Pget_virtual_printf_gap(dapl_id, &k->gap) >= 0;
  if (!ok) fail_arg("cannot read the dataset access property list");
  // The default list's prefixes are the library's (none), as native's (default_plists.h).
  k->vds_prefix = dapl_vds_prefix(dapl_id);
  k->efile_prefix = dapl_efile_prefix(dapl_id);
  // Other handles hold no dapl ID at all (an H5Iinc_ref and an H5Pclose per handle).
  hid_t keep = d.vds ? H5Pcopy(dapl_id) : H5I_INVALID_HID;
  if (d.vds && keep < 0) fail_arg("cannot copy the dataset access property list");
  if (d.dapl >= 0) H5Pclose(d.dapl);
  d.dapl = keep;
  d.kept_access = std::move(k);
}

// External storage (external_storage.h): the files and the prefix their names resolve
// against, from the dapl of the open; H5Dget_access_plist reports the expanded prefix,
// as native does.  After set_access, with the handle's current extent.
void setup_external(DatasetObj& d, hid_t dapl_id) {
  if (!d.uses_external()) return;
  if (dapl_id == H5P_DEFAULT) dapl_id = H5P_DATASET_ACCESS_DEFAULT;
  if (d.ftype.has_vlen() || d.ftype.has_std_ref())
    fail_unsupported("variable-length data or references in external files are not supported by tessera containers");
  d.external = std::make_shared<ExternalStorage>(d.dcpl, d.space, d.ftype.size());
  d.efile_prefix = ExternalStorage::prefix(dapl_id, d.file->name());
  auto k = std::make_shared<DatasetObj::KeptAccess>(*d.kept_access);
  if (!k->efile_prefix.empty() && !d.efile_prefix.empty()) k->efile_prefix = d.efile_prefix;
  d.kept_access = std::move(k);
}

// H5Dget_access_plist, as native builds it: the default dapl as it is now, with the
// chunk cache of a chunked dataset, the view and printf gap of a virtual one, and the
// VDS and external file prefixes from the dapl of the open.
hid_t access_plist(const DatasetObj& d) {
  hid_t p = H5Pcopy(H5P_DATASET_ACCESS_DEFAULT);
  if (p < 0) fail_arg("cannot copy the dapl");
  const DatasetObj::KeptAccess* k = d.kept_access.get();
  bool ok = k != nullptr;
  if (ok && d.layout() == H5D_CHUNKED) ok = H5Pset_chunk_cache(p, k->nslots, k->nbytes, k->w0) >= 0;
  if (ok && d.vds) ok = H5Pset_virtual_view(p, k->view) >= 0 && H5Pset_virtual_printf_gap(p, k->gap) >= 0;
  ok = ok && H5Pset_virtual_prefix(p, k->vds_prefix.c_str()) >= 0 &&
       H5Pset_efile_prefix(p, k->efile_prefix.c_str()) >= 0;
  if (!ok) {
    H5Pclose(p);
    fail_arg("cannot build the dataset access property list");
  }
  return p;
}

}  // namespace

void dataset_sync_space(DatasetObj& d) { sync_space(d); }

void* dataset_open_oid(std::shared_ptr<SharedFile> f, uint64_t oid, const std::string& path) {
  std::lock_guard<std::recursive_mutex> g(f->mu());
  const auto rp = f->object_ref(oid);
  const ObjectRecord& rec = *rp;
  if (rec.type != ObjType::kDataset) fail_arg("object '" + path + "' is not a dataset");
  auto d = std::make_unique<DatasetObj>(H5I_DATASET, f, oid, path);
  d->ftype = StoredType(rec.type_enc, "dataset", path);
  d->committed_type = rec.committed_type;
  d->space = decode_space(rec.space_enc);
  if (rec.cpl.empty()) {
    d->dcpl = H5Pcopy(H5P_DATASET_CREATE_DEFAULT);
  } else if (!rec.vlen_fill.empty()) {
    // A vlen fill value is stored beside the dcpl (vlen_fill.h): this handle's own copy.
    hid_t stored = f->decoded_plist(rec.cpl);
    if (stored < 0) fail_arg("cannot decode the stored dcpl of '" + path + "'");
    TypeId type(d->ftype);
    d->dcpl = restore_dcpl(stored, type, rec.vlen_fill);
    d->vlen_fill = rec.vlen_fill;
  } else {
    // Shared with every handle of a dataset with the same dcpl: handles only read it
    // (H5Dget_create_plist hands out a copy), and each holds one reference.
    hid_t cached = f->decoded_plist(rec.cpl);
    d->dcpl = cached >= 0 && H5Iinc_ref(cached) >= 0 ? cached : H5I_INVALID_HID;
    if (d->dcpl >= 0) {
      const std::shared_ptr<const DcplFacts> facts = f->dcpl_facts(rec.cpl);
      d->set_layout(facts->layout);
      d->set_uses_external(facts->external_count > 0);
    }
  }
  if (d->space < 0 || d->dcpl < 0)
    fail_arg("cannot decode the stored datatype, dataspace or dcpl of '" + path + "'");
  d->array = f->open_array(rec.array_id);  // parallel: sees what other ranks published
  d->array_id = rec.array_id;
  if (d->layout() == H5D_VIRTUAL) d->vds = std::make_shared<VirtualDataset>(d->dcpl);
  set_access(*d, H5P_DEFAULT);  // dataset_open sets the caller's
  sync_space(*d);
  setup_external(*d, H5P_DEFAULT);
  return d.release();
}

void* dataset_create(void* obj, const H5VL_loc_params_t* loc_params, const char* name, hid_t lcpl_id,
                     hid_t type_id, hid_t space_id, hid_t dcpl_id, hid_t dapl_id, hid_t, void**) {
  return vol_call_ptr(__func__, "dataset create", [&]() -> void* {
    auto* o = static_cast<Obj*>(obj);
    if (!o) fail_arg("NULL location");
    ExternalHop hop(o, loc_params, name, false);  // creating through an external link
    o = hop.obj, loc_params = hop.lp, name = hop.name;
    std::shared_ptr<SharedFile> f = o->file;
    std::lock_guard<std::recursive_mutex> g(f->mu());
    require_write_intent(*f);
    std::string base;
    uint64_t start = locate(o, loc_params, &base);
    const hid_t given = dcpl_id == H5P_DEFAULT ? H5P_DATASET_CREATE_DEFAULT : dcpl_id;
    // The dcpl as stored, and what it says, read once per distinct encoding
    // (plist_cache.h): one H5Pencode2 instead of a dozen H5Pget calls (issue 20).  The
    // library's default list changed since its encoding was kept (dcpl.h): the dataset is
    // made from the kept encoding, as native makes it from its copy, and only the handle
    // reports the list as it is now.
    bool default_changed = false;
    std::string cpl_enc = dcpl_encoding(given, &default_changed);  // dcpl.h
    hid_t dcpl = default_changed ? f->decoded_plist(cpl_enc) : given;
    if (dcpl < 0) fail_arg("cannot decode the default dataset creation property list");
    const std::shared_ptr<const DcplFacts> facts = f->dcpl_facts(cpl_enc, dcpl);
    const SpaceExtent extent = read_extent(space_id);  // for the schema and the stored encoding
    tessera::Schema schema = schema_from_dcpl(type_id, extent, dcpl, *facts);
    apply_layout(given, f->engine_options().layout, &schema);

    auto d = std::make_unique<DatasetObj>(H5I_DATASET, f, 0, name ? join(base, name) : std::string());
    d->ftype = StoredType::of(type_id);
    d->committed_type = committed_type_oid(type_id, *f);
    d->space = H5Scopy(space_id);
    // The dcpl is reported back as stored.  Most need no adjustment (below): those are
    // stored as given and the handle shares the file's decoded copy of that encoding (as
    // dataset_open does) instead of an H5Pcopy per dataset.
    // Native HDF5 allocates unfiltered datasets of a parallel file early (H5D__create)
    // and reports that in the dcpl.
    const int nfilters = facts->nfilters;
    const bool force_early = f->parallel() && nfilters == 0;
    // Not with a fill value of its own: a variable-length one is encoded as the
    // application's pointers, and a decoded copy would free them when closed (the fill
    // value is converted and stored apart below, vlen_fill.h).
    if (!schema.var && nfilters == 0 && facts->fill_defined != H5D_FILL_VALUE_USER_DEFINED && !force_early) {
      if (default_changed) {
        // Native's handle holds the default list itself (H5D__new), and its
        // H5Dget_create_plist reports the list as it is, layout included.
        d->dcpl = H5Pcopy(given);
        if (d->dcpl < 0) fail_arg("cannot copy the dataset creation property list");
      } else {
        hid_t shared = f->decoded_plist(cpl_enc);
        d->dcpl = shared >= 0 && H5Iinc_ref(shared) >= 0 ? shared : H5I_INVALID_HID;
        if (d->dcpl < 0) fail_arg("cannot copy the dataset creation property list");
      }
    } else {
      cpl_enc.clear();  // stored after the adjustments (store_dcpl below)
      d->dcpl = dataset_dcpl(dcpl, type_id);  // the fill value converted to the dataset's type
      if (force_early && H5Pset_alloc_time(d->dcpl, H5D_ALLOC_TIME_EARLY) < 0)
        fail_arg("cannot set the allocation time");
    }
    if (d->space < 0 || H5Sselect_all(d->space) < 0) fail_arg("cannot copy the datatype or dataspace");
    d->set_layout(facts->layout);  // d->dcpl's too: the adjustments keep the layout
    d->set_uses_external(facts->external_count > 0);  // and the external files
    if (facts->layout == H5D_VIRTUAL) {  // virtual_dataset.h
      if (f->parallel()) fail_unsupported("virtual datasets in parallel files");
      d->vds = std::make_shared<VirtualDataset>(d->dcpl);
      std::vector<hsize_t> dims(schema.extent.begin(), schema.extent.end());
      d->vds->check_dims(dims.data(), H5Sget_simple_extent_ndims(d->space));
    }
    // As native HDF5 (H5D__update_oh_info): variable-length types with the default fill
    // value always "write" it (fill time ALLOC); never writing it is refused.
    if (schema.var) {
      H5D_fill_time_t ft = H5D_FILL_TIME_IFSET;
      H5D_fill_value_t fv = H5D_FILL_VALUE_DEFAULT;
      H5Pget_fill_time(d->dcpl, &ft);
      H5Pfill_value_defined(d->dcpl, &fv);
      if (ft == H5D_FILL_TIME_NEVER) fail_arg("variable-length datasets need fill values written (fill time never)");
      if (ft == H5D_FILL_TIME_IFSET && fv == H5D_FILL_VALUE_DEFAULT) H5Pset_fill_time(d->dcpl, H5D_FILL_TIME_ALLOC);
    }
    // Native HDF5's shuffle "set local" callback records the element size in the
    // filter's parameters; report the same dcpl.  (d->dcpl has the caller's filters.)
    for (int i = 0, nf = nfilters > 0 ? H5Pget_nfilters(d->dcpl) : 0; i < nf; ++i) {
      unsigned flags = 0, cd[1] = {0}, config = 0;
      size_t ncd = 0;
      if (H5Pget_filter2(d->dcpl, static_cast<unsigned>(i), &flags, &ncd, cd, 0, nullptr, &config) ==
          H5Z_FILTER_SHUFFLE) {
        cd[0] = static_cast<unsigned>(H5Tget_size(type_id));
        H5Pmodify_filter(d->dcpl, H5Z_FILTER_SHUFFLE, flags, 1, cd);
      }
    }

    if (nfilters > 0 && ValueFilters::needed(d->dcpl)) {
      // Parallel files: every rank would re-filter chunks others may be writing.
      if (f->parallel()) fail_unsupported("value-changing filters (scale-offset, n-bit, ...) in parallel files");
      d->value_filters = std::make_shared<ValueFilters>(type_id, d->dcpl, schema.tile_extent);
    }
    d->value_filters_checked = true;
    set_access(*d, dapl_id);
    setup_external(*d, dapl_id);

    ObjectRecord rec;
    rec.type = ObjType::kDataset;
    rec.stamp_times_tracking(facts->track_times);
    rec.type_enc = d->ftype.encoding();
    rec.committed_type = d->committed_type;
    // The application's space when it selects everything (the same bytes as the handle's
    // copy): encoded once for all the datasets created with it (stored_space.h).
    rec.space_enc =
        H5Sget_select_type(space_id) == H5S_SEL_ALL ? encode_space(space_id, extent) : encode_space(d->space);
    if (cpl_enc.empty()) {
      StoredDcpl stored = store_dcpl(d->dcpl, type_id);  // a vlen fill value apart (vlen_fill.h)
      rec.cpl = std::move(stored.cpl);
      rec.vlen_fill = stored.vlen_fill;
      d->vlen_fill = std::move(stored.vlen_fill);
    } else {
      rec.cpl = std::move(cpl_enc);
    }

    tessera::CatalogBatch b;
    uint64_t parent = 0;
    std::string last;
    if (name) {
      std::tie(parent, last) = f->resolve_parent(start, name, lcpl_intermediate(lcpl_id), &b);
      if (f->find_link(parent, last)) fail_arg("name '" + std::string(name) + "' already exists");
    }
    // The array's records join the dataset's: one commit (a parallel file's array is
    // committed apart, collectively).
    const bool joined = f->create_array_into(schema, &b, &rec.array_id);
    try {
      d->oid = f->allocate_oid(b);
      if (name) rec.rc = 1;  // the link below (add_link's target_counted)
      f->put_object(b, d->oid, rec);
      if (rec.committed_type) f->ref_object(b, rec.committed_type);  // native: the type's refcount
      if (name) f->add_link(b, parent, last, LinkRecord::hard(d->oid, lcpl_id), /*target_counted=*/true);
      f->commit(b);
    } catch (...) {
      if (joined) f->abandon_array(rec.array_id);
      else f->drop_array(rec.array_id);
      throw;
    }
    f->note_new_object(d->oid, facts->attr_order_tracked);
    d->array = f->array(rec.array_id);
    d->array_id = rec.array_id;
    d->handle = o->handle;  // H5F_OBJ_LOCAL counts objects per file handle
    return d.release();
  });
}

void* dataset_open(void* obj, const H5VL_loc_params_t* loc_params, const char* name, hid_t dapl_id, hid_t,
                   void**) {
  return vol_call_ptr(__func__, "dataset open", [&]() -> void* {
    auto* o = static_cast<Obj*>(obj);
    if (!o) fail_arg("NULL location");
    ExternalHop hop(o, loc_params, name, true, dapl_id);
    o = hop.obj, loc_params = hop.lp, name = hop.name;
    std::lock_guard<std::recursive_mutex> g(o->file->mu());
    std::string base;
    uint64_t start = locate(o, loc_params, &base);
    std::string n = name ? name : ".";
    uint64_t oid = o->file->resolve(start, n);
    auto* d = static_cast<DatasetObj*>(dataset_open_oid(o->file, oid, join(base, n)));
    d->handle = o->handle;
    // dataset_open_oid kept the default's; the library's default dapl is what H5Dopen2
    // passes for H5P_DEFAULT.
    if (dapl_id != H5P_DEFAULT && dapl_id != H5P_DATASET_ACCESS_DEFAULT) {
      set_access(*d, dapl_id);
      setup_external(*d, dapl_id);  // the prefix comes from this dapl
    }
    return d;
  });
}

herr_t dataset_get(void* obj, H5VL_dataset_get_args_t* args, hid_t, void**) {
  return vol_call(__func__, "dataset get", [&] {
    DatasetObj& d = *as_dataset(obj);
    if (!args) fail_arg("NULL arguments");
    switch (args->op_type) {
      case H5VL_DATASET_GET_SPACE: {
        sync_space(d);
        hid_t s = H5Scopy(d.space);
        if (s < 0 || H5Sselect_all(s) < 0) fail_arg("cannot copy the dataspace");
        args->args.get_space.space_id = s;
        return;
      }
      case H5VL_DATASET_GET_SPACE_STATUS:  // as native reports it (allocation.h)
        *args->args.get_space_status.status = space_status(d);
        return;
      case H5VL_DATASET_GET_TYPE: {
        std::lock_guard<std::recursive_mutex> g(d.file->mu());
        args->args.get_type.type_id = type_id_for_caller(d.file, d.committed_type, d.ftype, d.handle);
        return;
      }
      case H5VL_DATASET_GET_DCPL:
        if ((args->args.get_dcpl.dcpl_id = H5Pcopy(d.dcpl)) < 0) fail_arg("cannot copy the dcpl");
        return;
      case H5VL_DATASET_GET_DAPL:
        args->args.get_dapl.dapl_id = access_plist(d);
        return;
      case H5VL_DATASET_GET_STORAGE_SIZE:  // as native reports it (allocation.h)
        *args->args.get_storage_size.storage_size = storage_size(d);
        return;
    }
    fail_unsupported("dataset get operation " + std::to_string(static_cast<int>(args->op_type)) +
                     " not supported yet");
  });
}

herr_t dataset_specific(void* obj, H5VL_dataset_specific_args_t* args, hid_t, void**) {
  return vol_call(__func__, "dataset specific", [&] {
    DatasetObj& d = *as_dataset(obj);
    if (!args) fail_arg("NULL arguments");
    switch (args->op_type) {
      case H5VL_DATASET_SET_EXTENT: {
        std::lock_guard<std::recursive_mutex> g(d.file->mu());
        require_write_intent(*d.file);
        H5D_layout_t layout = d.layout();
        if (layout == H5D_VIRTUAL) {
          set_virtual_extent(d, args->args.set_extent.size);
          return;
        }
        if (layout != H5D_CHUNKED && !d.external)  // external files may grow (external_storage.h)
          fail_arg(layout == H5D_COMPACT ? "dataset has compact storage" : "dataset has contiguous storage");
        sync_space(d);
        hsize_t cur[H5S_MAX_RANK], mx[H5S_MAX_RANK];
        int r = H5Sget_simple_extent_dims(d.space, cur, mx);
        const hsize_t* size = args->args.set_extent.size;
        if (!size) fail_arg("NULL size");
        tessera::Coords ext(size, size + r);
        for (int i = 0; i < r; ++i)
          if (mx[i] != H5S_UNLIMITED && size[i] > mx[i])
            fail_arg("new size " + std::to_string(size[i]) + " exceeds the maximum " + std::to_string(mx[i]) +
                     " in dimension " + std::to_string(i));
        d.file->set_extent(*d.array, ext);  // collective in a parallel file
        if (H5Sset_extent_simple(d.space, r, size, mx) < 0) fail_arg("cannot update the dataspace");
        ObjectRecord rec = d.file->object(d.oid);
        rec.space_enc = encode_space(d.space);
        tessera::CatalogBatch b;
        d.file->put_object(b, d.oid, rec);
        allocation_extent_changed(d, b);
        d.file->commit(b);
        return;
      }
      case H5VL_DATASET_FLUSH:
        // Native PHDF5 refuses every object flush in a parallel file (H5Oflush, H5Dflush,
        // H5Gflush, H5Tflush): programs use H5Fflush, the collective commit point.
        if (d.file->parallel()) fail_unsupported(kNoObjectFlushInParallel);
        if (d.value_filters) d.value_filters->flush(*d.array, d.space);  // value_filters.h
        check(d.array->flush());
        return;
      case H5VL_DATASET_REFRESH:
        if (d.vds) d.vds->refresh();  // the sources, as native refreshes them
        check(d.array->refresh());
        sync_space(d);
        return;
    }
    fail_unsupported("dataset specific operation " + std::to_string(static_cast<int>(args->op_type)) +
                     " not supported yet");
  });
}

herr_t dataset_optional(void* obj, H5VL_optional_args_t* args, hid_t, void**) {
  // The native connector's chunk operations and queries (chunk_io.h).
  herr_t rc = 0;
  herr_t st = vol_call(__func__, "dataset optional", [&] {
    if (args && sparse_op(*as_dataset(obj), args->op_type, args->args)) return;  // sparse.h
    if (args && index_op(*as_dataset(obj), args->op_type, args->args)) return;   // query.h
    rc = dataset_native_optional(*as_dataset(obj), args);
  });
  return st < 0 ? st : rc;
}

herr_t dataset_close(void* dset, hid_t, void**) {
  return vol_call(__func__, "dataset close", [&] {
    // Nothing to flush: the array is shared and flushed at file close (or H5Dflush).
    // A parallel file publishes this rank's writes to it on their own, so that ranks
    // opening it after a barrier see them, as in PHDF5 (docs/parallel.md, "Visibility").
    DatasetObj* d = as_dataset(dset);
    if (d->value_filters && d->array) {  // the chunks native's cache would filter now
      std::lock_guard<std::recursive_mutex> g(d->file->mu());
      d->value_filters->flush(*d->array, d->space);
    }
    if (d->array && d->file->parallel()) {
      std::lock_guard<std::recursive_mutex> g(d->file->mu());
      d->file->publish_own(*d->array);
    }
    if (d->array && d->array_id) {  // a small dataset's array goes with its last handle
      std::lock_guard<std::recursive_mutex> g(d->file->mu());
      d->file->release_array(d->array_id, d->array);
    }
    delete d;
  });
}

}  // namespace tessera_vol
