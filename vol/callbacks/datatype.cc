// datatype.cc — H5T callbacks for committed (named) datatypes.
//
// A committed datatype is an ObjectRecord of type kDatatype holding H5Tencode of the type
// and the encoded tcpl (so creation-order tracking of its attributes survives reopen).
// HDF5 builds the H5T_t for an opened committed type itself, from GET_BINARY_SIZE /
// GET_BINARY (H5T_construct_datatype), so those return exactly the stored encoding.
//
// H5Tcommit_anon makes an object with no link (refcount 0).  If it is still unlinked when
// its last handle closes (H5Olink was never called), nothing can reach it any more, so
// datatype_close removes it — native HDF5 frees such objects the same way.
#include <cstring>

#include "vol/base/error.h"
#include "vol/features/elink.h"
#include "vol/model/objects.h"
#include "vol/base/tessera_vol.h"
#include "vol/model/parallel.h"

namespace tessera_vol {

namespace {

std::string encode_plist(hid_t pl) {
  size_t sz = 0;
  if (H5Pencode2(pl, nullptr, &sz, H5P_DEFAULT) < 0 || sz == 0) fail_arg("cannot encode the property list");
  std::string enc(sz, '\0');
  if (H5Pencode2(pl, enc.data(), &sz, H5P_DEFAULT) < 0) fail_arg("cannot encode the property list");
  return enc;
}

DatatypeObj* check_dt(void* obj) {
  auto* o = static_cast<Obj*>(obj);
  if (!o || o->type != H5I_DATATYPE) fail_arg("not a committed datatype");
  return static_cast<DatatypeObj*>(o);
}

}  // namespace

void* datatype_open_oid(std::shared_ptr<SharedFile> f, uint64_t oid, const std::string& path) {
  ObjectRecord rec = f->object(oid);
  if (rec.type != ObjType::kDatatype) fail_arg("object '" + path + "' is not a committed datatype");
  auto d = std::make_unique<DatatypeObj>(H5I_DATATYPE, f, oid, path);
  d->ftype = StoredType(rec.type_enc, "committed datatype", path);
  d->tcpl = rec.cpl.empty() ? H5Pcreate(H5P_DATATYPE_CREATE) : H5Pdecode(rec.cpl.data());
  if (d->tcpl < 0) fail_arg("committed datatype '" + path + "' has an unreadable creation property list");
  return d.release();
}

uint64_t committed_type_oid(hid_t type_id, SharedFile& f) {
  // A predefined type is never committed: answered from stored_type.h's table, not by
  // H5Tcommitted (one API call fewer per dataset or attribute of such a type; issue 20).
  if (library_type(type_id) || H5Tcommitted(type_id) <= 0) return 0;
  char conn[32] = "";
  if (H5VLget_connector_name(type_id, conn, sizeof conn) < 0 || std::strcmp(conn, kConnectorName) != 0) {
    H5Eclear2(H5E_DEFAULT);
    return 0;
  }
  auto* d = static_cast<Obj*>(H5VLobject(type_id));
  if (!d || d->type != H5I_DATATYPE || d->file.get() != &f) return 0;
  return d->oid;
}

hid_t type_id_for_caller(const std::shared_ptr<SharedFile>& f, uint64_t committed, const StoredType& enc,
                         uint64_t handle) {
  if (committed) {
    auto rec = f->find_object(committed);
    if (rec && rec->type == ObjType::kDatatype) {
      void* obj = datatype_open_oid(f, committed, "");
      static_cast<Obj*>(obj)->handle = handle;
      hid_t t = H5VLwrap_register(obj, H5I_DATATYPE);
      if (t >= 0) return t;
      H5Eclear2(H5E_DEFAULT);
      delete static_cast<Obj*>(obj);
    }
  }
  return TypeId(enc).release();
}

void* datatype_commit(void* obj, const H5VL_loc_params_t* loc_params, const char* name, hid_t type_id,
                      hid_t lcpl_id, hid_t tcpl_id, hid_t tapl_id, hid_t /*dxpl_id*/, void** /*req*/) {
  return vol_call_ptr(__func__, "datatype commit", [&]() -> void* {
    auto* o = static_cast<Obj*>(obj);
    if (!o || !loc_params) fail_arg("NULL location");
    ExternalHop hop(o, loc_params, name, false);  // committing through an external link
    o = hop.obj, loc_params = hop.lp, name = hop.name;
    require_plist(lcpl_id, H5P_LINK_CREATE, "link creation");
    require_plist(tcpl_id, H5P_DATATYPE_CREATE, "datatype creation");
    require_plist(tapl_id, H5P_DATATYPE_ACCESS, "datatype access");
    SharedFile& f = *o->file;
    std::lock_guard<std::recursive_mutex> g(f.mu());
    f.require_writable("datatype commit");
    std::string base;
    uint64_t start = locate(o, loc_params, &base);
    ObjectRecord rec;
    rec.type = ObjType::kDatatype;
    rec.rc = 0;  // add_link counts the link
    rec.stamp_times(tcpl_id);
    rec.type_enc = StoredType::of(type_id).encoding();
    if (tcpl_id != H5P_DEFAULT && tcpl_id >= 0) rec.cpl = encode_plist(tcpl_id);
    tessera::CatalogBatch b;
    uint64_t oid = f.allocate_oid(b);
    f.put_object(b, oid, rec);
    std::string path;
    if (name) {  // NULL: H5Tcommit_anon
      auto [parent, last] = f.resolve_parent(start, name, lcpl_intermediate(lcpl_id), &b);
      f.add_link(b, parent, last, LinkRecord::hard(oid, lcpl_id));
      path = join(base, name);
    }
    f.commit(b);
    auto* t = static_cast<Obj*>(datatype_open_oid(o->file, oid, path));
    t->handle = o->handle;  // H5F_OBJ_LOCAL counts objects per file handle
    return t;
  });
}

void* datatype_open(void* obj, const H5VL_loc_params_t* loc_params, const char* name, hid_t tapl_id,
                    hid_t /*dxpl_id*/, void** /*req*/) {
  return vol_call_ptr(__func__, "datatype open", [&]() -> void* {
    auto* o = static_cast<Obj*>(obj);
    if (!o || !loc_params || !name) fail_arg("NULL location or name");
    ExternalHop hop(o, loc_params, name, true, tapl_id);
    o = hop.obj, loc_params = hop.lp, name = hop.name;
    SharedFile& f = *o->file;
    std::lock_guard<std::recursive_mutex> g(f.mu());
    std::string base;
    uint64_t start = locate(o, loc_params, &base);
    uint64_t oid = f.resolve(start, name);
    auto* t = static_cast<Obj*>(datatype_open_oid(o->file, oid, join(base, name)));
    t->handle = o->handle;  // H5F_OBJ_LOCAL counts objects per file handle
    return t;
  });
}

herr_t datatype_get(void* obj, H5VL_datatype_get_args_t* args, hid_t /*dxpl_id*/, void** /*req*/) {
  return vol_call(__func__, "datatype get", [&] {
    if (!args) fail_arg("NULL arguments");
    DatatypeObj* d = check_dt(obj);
    switch (args->op_type) {
      case H5VL_DATATYPE_GET_BINARY_SIZE:
      case H5VL_DATATYPE_GET_BINARY: {
        const std::string& enc = d->ftype.encoding();
        if (args->op_type == H5VL_DATATYPE_GET_BINARY_SIZE) {
          *args->args.get_binary_size.size = enc.size();
          return;
        }
        auto& gb = args->args.get_binary;
        if (!gb.buf) return;
        if (gb.buf_size < enc.size()) fail_arg("buffer too small for the datatype encoding");
        std::memcpy(gb.buf, enc.data(), enc.size());
        return;
      }
      case H5VL_DATATYPE_GET_TCPL: {
        hid_t p = H5Pcopy(d->tcpl);
        if (p < 0) fail_arg("cannot copy the tcpl");
        args->args.get_tcpl.tcpl_id = p;
        return;
      }
    }
    fail_unsupported("datatype get operation " + std::to_string(static_cast<int>(args->op_type)));
  });
}

herr_t datatype_specific(void* obj, H5VL_datatype_specific_args_t* args, hid_t /*dxpl_id*/, void** /*req*/) {
  return vol_call(__func__, "datatype operation", [&] {
    if (!args) fail_arg("NULL arguments");
    DatatypeObj* d = check_dt(obj);
    switch (args->op_type) {
      case H5VL_DATATYPE_FLUSH:  // every catalog commit is already durable
        if (d->file->parallel()) fail_unsupported(kNoObjectFlushInParallel);
        return;
      case H5VL_DATATYPE_REFRESH:  // a committed type never changes: nothing to reload
        d->file->object(d->oid);
        return;
    }
    fail_unsupported("datatype specific operation " + std::to_string(static_cast<int>(args->op_type)));
  });
}

herr_t datatype_optional(void*, H5VL_optional_args_t* args, hid_t, void**) {
  // HDF5 defines no optional operations on named datatypes.
  TESSERA_VOL_ERROR(kUnsupported, "datatype optional operation %d not supported", args ? args->op_type : -1);
  return -1;
}

herr_t datatype_close(void* dt, hid_t /*dxpl_id*/, void** /*req*/) {
  return vol_call(__func__, "datatype close", [&] {
    std::unique_ptr<DatatypeObj> d(check_dt(dt));
    SharedFile& f = *d->file;
    std::lock_guard<std::recursive_mutex> g(f.mu());
    if (!f.writable()) return;
    // An anonymous type that was never linked is unreachable once its last handle closes.
    for (auto& [p, t] : f.open_objects())
      if (p != static_cast<Obj*>(d.get()) && t == H5I_DATATYPE && static_cast<Obj*>(p)->oid == d->oid) return;
    auto rec = f.find_object(d->oid);
    if (!rec || rec->rc != 0 || rec->type != ObjType::kDatatype) return;
    tessera::CatalogBatch b;
    b.del(id_key("o/", d->oid));
    for (auto& [name, a] : f.attrs(d->oid)) {
      f.del_attr(b, d->oid, name);
      if (a.committed_type && a.committed_type != d->oid) f.unref_object(b, a.committed_type);
    }
    f.commit(b);
  });
}

}  // namespace tessera_vol
