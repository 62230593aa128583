// object.cc — H5O callbacks and the token class.
//
// Objects are groups, datasets and committed datatypes; their token is the object id
// (first 8 bytes, rest zero).  Opening a dataset or datatype needs dataset.cc's /
// datatype.cc's own setup (dataset_open_oid / datatype_open_oid); they are referenced
// weakly so that this file links while those parts are being built, and fail clearly
// when missing.
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <set>

#include "vol/features/elink.h"
#include "vol/features/object_copy.h"
#include "vol/model/objects.h"
#include "vol/model/swmr.h"
#include "vol/features/query.h"
#include "vol/model/region_store.h"
#include "vol/base/tessera_vol.h"
#include "vol/model/parallel.h"

namespace tessera_vol {

// Weak references: resolved when dataset.cc / datatype.cc define them.
extern void* dataset_open_oid(std::shared_ptr<SharedFile> f, uint64_t oid, const std::string& path)
    __attribute__((weak));
extern void* datatype_open_oid(std::shared_ptr<SharedFile> f, uint64_t oid, const std::string& path)
    __attribute__((weak));

void object_times(SharedFile& f, uint64_t oid, const ObjectRecord& r, H5O_info2_t* info) {
  // Set at creation when the creation plist tracks them (ObjectRecord::times), reported
  // as native's object headers hold them: version 2 (swmr.h object_header2) all four;
  // version 1 only a dataset's change time; the root group none.
  info->atime = info->mtime = info->ctime = info->btime = 0;
  if (oid == kRootOid || r.times == 0) return;
  if (object_header2(f)) info->atime = info->mtime = info->ctime = info->btime = static_cast<time_t>(r.times);
  else if (r.type == ObjType::kDataset) info->ctime = static_cast<time_t>(r.times);
}

namespace {

H5O_type_t otype(ObjType t) {
  switch (t) {
    case ObjType::kGroup: return H5O_TYPE_GROUP;
    case ObjType::kDataset: return H5O_TYPE_DATASET;
    case ObjType::kDatatype: return H5O_TYPE_NAMED_DATATYPE;
  }
  return H5O_TYPE_UNKNOWN;
}

H5I_type_t itype(ObjType t) {
  switch (t) {
    case ObjType::kGroup: return H5I_GROUP;
    case ObjType::kDataset: return H5I_DATASET;
    case ObjType::kDatatype: return H5I_DATATYPE;
  }
  return H5I_BADID;
}

// A location resolved to an object; BY_IDX checks the group's index like native HDF5.
uint64_t locate_checked(Obj* o, const H5VL_loc_params_t* lp, std::string* path) {
  require_loc_lapl(lp);
  if (lp->type == H5VL_OBJECT_BY_IDX) {
    const auto& bi = lp->loc_data.loc_by_idx;
    require_index(*o->file, o->file->resolve(o->oid, bi.name), bi.idx_type);
  }
  return locate(o, lp, path);
}

void fill_info(SharedFile& f, uint64_t oid, unsigned fields, H5O_info2_t* info) {
  const auto rp = f.object_ref(oid);
  const ObjectRecord& r = *rp;
  std::memset(info, 0, sizeof *info);
  info->fileno = static_cast<unsigned long>(f.fileno());
  oid_to_token(oid, &info->token);
  info->type = otype(r.type);
  info->rc = static_cast<unsigned>(r.rc);
  object_times(f, oid, r, info);
  if (fields & H5O_INFO_NUM_ATTRS) info->num_attrs = f.attr_count(oid);  // H5Oget_info's count: no record decoded
}

// Some absolute path to an object (breadth-first over hard links), or "" if unlinked.
std::string find_path(SharedFile& f, uint64_t oid) {
  if (oid == kRootOid) return "/";
  std::vector<std::pair<uint64_t, std::string>> level{{kRootOid, ""}};
  std::set<uint64_t> seen{kRootOid};
  while (!level.empty()) {
    std::vector<std::pair<uint64_t, std::string>> next;
    for (auto& [g, p] : level)
      for (auto& [name, l] : f.links(g)) {
        if (l.type != H5L_TYPE_HARD) continue;
        std::string path = p + "/" + name;
        if (l.target == oid) return path;
        if (seen.insert(l.target).second) {
          auto r = f.find_object(l.target);
          if (r && r->type == ObjType::kGroup) next.emplace_back(l.target, path);
        }
      }
    level.swap(next);
  }
  return "";
}

}  // namespace

void* open_object_oid(const std::shared_ptr<SharedFile>& f, uint64_t oid, const std::string& path,
                      H5I_type_t* opened_type) {
  ObjectRecord r = f->object(oid);
  void* out = nullptr;
  switch (r.type) {
    case ObjType::kGroup: out = new GroupObj(H5I_GROUP, f, oid, path); break;
    case ObjType::kDataset:
      if (!dataset_open_oid) fail_unsupported("opening datasets by object is not available in this build");
      out = dataset_open_oid(f, oid, path);
      break;
    case ObjType::kDatatype:
      if (!datatype_open_oid) fail_unsupported("opening committed datatypes by object is not available in this build");
      out = datatype_open_oid(f, oid, path);
      break;
  }
  if (!out) fail_arg("cannot open object '" + path + "'");
  if (opened_type) *opened_type = itype(r.type);
  return out;
}

void* object_open(void* obj, const H5VL_loc_params_t* lp, H5I_type_t* opened_type, hid_t, void**) {
  return vol_call_ptr(__func__, "object open", [&]() -> void* {
    Obj* o = as_obj(obj);
    require_loc_lapl(lp);
    ExternalHop hop(o, lp, nullptr, true);
    o = hop.obj, lp = hop.lp;
    std::lock_guard<std::recursive_mutex> lk(o->file->mu());
    std::string path;
    uint64_t oid = locate_checked(o, lp, &path);
    // Opened by token: the path is found lazily (GET_NAME searches the file), since a
    // search here would cost a walk of the whole file per open (attribute iteration
    // opens its owner by token).
    void* out = open_object_oid(o->file, oid, path, opened_type);
    static_cast<Obj*>(out)->handle = o->handle;
    return out;
  });
}

herr_t object_copy(void* src_obj, const H5VL_loc_params_t* lp1, const char* src_name, void* dst_obj,
                   const H5VL_loc_params_t* lp2, const char* dst_name, hid_t ocpypl_id, hid_t lcpl_id, hid_t,
                   void**) {
  return vol_call(__func__, "object copy", [&] {
    Obj* src = as_obj(src_obj);
    Obj* dst = as_obj(dst_obj);
    if (!src_name || !dst_name) fail_arg("NULL object name");
    require_plist(ocpypl_id, H5P_OBJECT_COPY, "object copy");
    require_plist(lcpl_id, H5P_LINK_CREATE, "link creation");
    ExternalHop shop(src, lp1, src_name, true), dhop(dst, lp2, dst_name, false);
    src = shop.obj, lp1 = shop.lp, src_name = shop.name;
    dst = dhop.obj, lp2 = dhop.lp, dst_name = dhop.name;
    SharedFile& sf = *src->file;
    SharedFile& df = *dst->file;
    std::lock_guard<std::recursive_mutex> lk(sf.mu());
    std::lock_guard<std::recursive_mutex> lk2(df.mu());
    df.require_writable("object copy");
    unsigned flags = 0;
    if (ocpypl_id != H5P_DEFAULT && H5Pget_copy_object(ocpypl_id, &flags) < 0) fail_arg("cannot read the ocpypl");
    uint64_t from = sf.resolve(locate(src, lp1), src_name);
    tessera::CatalogBatch b;
    auto [parent, last] = df.resolve_parent(locate(dst, lp2), dst_name, lcpl_intermediate(lcpl_id), &b);
    if (df.find_link(parent, last)) fail_arg(std::string("destination '") + dst_name + "' already exists");
    std::vector<uint64_t> new_arrays;
    try {
      uint64_t to = copy_object(sf, from, df, b, flags, &new_arrays);
      df.add_link(b, parent, last, LinkRecord::hard(to, lcpl_id));
      df.commit(b);
    } catch (...) {
      for (uint64_t id : new_arrays) (void)df.container().remove_array(id);
      throw;
    }
  });
}

herr_t object_get(void* obj, const H5VL_loc_params_t* lp, H5VL_object_get_args_t* args, hid_t, void**) {
  return vol_call(__func__, "object get", [&] {
    if (!args) fail_arg("NULL arguments");
    ExternalHop hop(as_obj(obj), lp, nullptr, true);
    Obj* o = hop.obj;
    lp = hop.lp;
    SharedFile& f = *o->file;
    std::lock_guard<std::recursive_mutex> lk(f.mu());
    switch (args->op_type) {
      case H5VL_OBJECT_GET_FILE:
        *args->args.get_file.file = file_object_for(o->file);
        return;
      case H5VL_OBJECT_GET_NAME: {
        std::string path;
        uint64_t oid = locate_checked(o, lp, &path);
        // The path an object was opened by may be stale (moved, deleted): check it.
        if (path.empty() || f.try_resolve(kRootOid, path) != std::optional<uint64_t>(oid)) path = find_path(f, oid);
        auto& a = args->args.get_name;
        if (a.buf && a.buf_size > 0) {
          size_t k = std::min(path.size(), a.buf_size - 1);
          std::memcpy(a.buf, path.data(), k);
          a.buf[k] = '\0';
        }
        if (a.name_len) *a.name_len = path.size();
        return;
      }
      case H5VL_OBJECT_GET_TYPE:
        *args->args.get_type.obj_type = otype(f.object(locate_checked(o, lp, nullptr)).type);
        return;
      case H5VL_OBJECT_GET_INFO:
        fill_info(f, locate_checked(o, lp, nullptr), args->args.get_info.fields, args->args.get_info.oinfo);
        return;
    }
    fail_unsupported("operation " + std::to_string(static_cast<int>(args->op_type)));
  });
}

namespace {

herr_t object_visit(Obj* o, const H5VL_loc_params_t* lp, H5VL_object_visit_args_t& a) {
  ExternalHop hop(o, lp, nullptr, true);
  o = hop.obj, lp = hop.lp;
  SharedFile& f = *o->file;
  std::string path;
  uint64_t start = locate_checked(o, lp, &path);
  if (a.idx_type != H5_INDEX_NAME && a.idx_type != H5_INDEX_CRT_ORDER) fail_arg("unknown index type");
  H5I_type_t t;
  void* so = open_object_oid(o->file, start, path, &t);
  hid_t id = H5VLwrap_register(so, t);
  if (id < 0) {
    delete static_cast<Obj*>(so);
    fail_arg("cannot register an ID for the visit callback");
  }
  struct Release {
    hid_t id;
    ~Release() { H5Idec_ref(id); }
  } release{id};
  // H5Ovisit3: the start object as ".", then every object reachable by hard links, once.
  H5O_info2_t info;
  fill_info(f, start, a.fields, &info);
  herr_t rc = a.op(id, ".", &info, a.op_data);
  if (rc != 0) return rc;
  if (f.object(start).type != ObjType::kGroup) return 0;
  std::set<uint64_t> reported{start}, descended{start};
  return walk_links(f, start, a.idx_type, a.order, descended,
                    [&](const std::string& p, const LinkRecord& l, bool) -> herr_t {
                      if (l.type != H5L_TYPE_HARD || !f.find_object(l.target) || !reported.insert(l.target).second)
                        return 0;
                      fill_info(f, l.target, a.fields, &info);
                      return a.op(id, p.c_str(), &info, a.op_data);
                    });
}

}  // namespace

herr_t object_specific(void* obj, const H5VL_loc_params_t* lp, H5VL_object_specific_args_t* args, hid_t, void**) {
  if (args && args->op_type == H5VL_OBJECT_VISIT)  // returns the callback's value
    return vol_call_iterate(__func__, "object visit", obj, [&](Obj* o) { return object_visit(o, lp, args->args.visit); });
  return vol_call(__func__, "object specific", [&] {
    if (!args) fail_arg("NULL arguments");
    require_loc_lapl(lp);
    if (args->op_type == H5VL_OBJECT_EXISTS && lp && lp->type == H5VL_OBJECT_BY_NAME) {
      if (!lp->loc_data.loc_by_name.name) fail_arg("NULL name");
      *args->args.exists.exists =
          object_exists_by_name(as_obj(obj), lp->loc_data.loc_by_name.name, lp->loc_data.loc_by_name.lapl_id);
      return;
    }
    ExternalHop hop(as_obj(obj), lp, nullptr, true);
    Obj* o = hop.obj;
    lp = hop.lp;
    SharedFile& f = *o->file;
    std::lock_guard<std::recursive_mutex> lk(f.mu());
    switch (args->op_type) {
      case H5VL_OBJECT_CHANGE_REF_COUNT: {
        f.require_writable("object reference count change");
        uint64_t oid = locate(o, lp);
        ObjectRecord r = f.object(oid);
        int64_t rc = static_cast<int64_t>(r.rc) + args->args.change_rc.delta;
        r.rc = rc < 0 ? 0 : static_cast<uint64_t>(rc);
        tessera::CatalogBatch b;
        f.put_object(b, oid, r);
        f.commit(b);
        return;
      }
      case H5VL_OBJECT_EXISTS:  // by name: handled above (object_exists_by_name)
        *args->args.exists.exists = f.find_object(locate(o, lp)).has_value();
        return;
      case H5VL_OBJECT_LOOKUP:
        oid_to_token(locate(o, lp), args->args.lookup.token_ptr);
        return;
      case H5VL_OBJECT_FLUSH:
        if (f.parallel()) fail_unsupported(kNoObjectFlushInParallel);
        if (f.writable()) f.flush_arrays();
        return;
      case H5VL_OBJECT_REFRESH:
        return;  // nothing cached: the catalog is read on every access
      case H5VL_OBJECT_VISIT: return;  // handled above
    }
    fail_unsupported("operation " + std::to_string(static_cast<int>(args->op_type)));
  });
}

herr_t object_optional(void* obj, const H5VL_loc_params_t* lp, H5VL_optional_args_t* args, hid_t, void**) {
  return vol_call(__func__, "object optional", [&] {
    if (!args) fail_arg("NULL arguments");
    ExternalHop hop(as_obj(obj), lp, nullptr, true);
    Obj* o = hop.obj;
    lp = hop.lp;
    SharedFile& f = *o->file;
    std::lock_guard<std::recursive_mutex> lk(f.mu());
    if (region_op(f, args->op_type, args->args)) return;  // region_ops.h
    if (query_op(o, lp, args->op_type, args->args)) return;  // query_ops.h
    auto* na = static_cast<H5VL_native_object_optional_args_t*>(args->args);
    switch (args->op_type) {
      case H5VL_NATIVE_OBJECT_GET_COMMENT: {
        ObjectRecord r = f.object(locate(o, lp));
        auto& a = na->get_comment;
        if (a.buf && a.buf_size > 0) {
          size_t k = std::min(r.comment.size(), a.buf_size - 1);
          std::memcpy(a.buf, r.comment.data(), k);
          static_cast<char*>(a.buf)[k] = '\0';
        }
        if (a.comment_len) *a.comment_len = r.comment.size();
        return;
      }
      case H5VL_NATIVE_OBJECT_SET_COMMENT: {
        f.require_writable("object set comment");
        uint64_t oid = locate(o, lp);
        ObjectRecord r = f.object(oid);
        r.comment = na->set_comment.comment ? na->set_comment.comment : "";
        tessera::CatalogBatch b;
        f.put_object(b, oid, r);
        f.commit(b);
        return;
      }
      case H5VL_NATIVE_OBJECT_GET_NATIVE_INFO:
        fail_unsupported("H5Oget_native_info: tessera objects have no native object header");
      default:
        fail_unsupported("native-only object operation " + std::to_string(args->op_type) +
                         " (tessera has no HDF5 metadata cache)");
    }
  });
}

// ---------------------------------------------------------------- tokens

herr_t token_cmp(void*, const H5O_token_t* t1, const H5O_token_t* t2, int* cmp_value) {
  if (!t1 || !t2 || !cmp_value) {
    TESSERA_VOL_ERROR(kBadArgument, "token compare: NULL argument");
    return -1;
  }
  uint64_t a = token_to_oid(t1), b = token_to_oid(t2);
  *cmp_value = a < b ? -1 : a > b ? 1 : 0;
  return 0;
}

herr_t token_to_str(void*, H5I_type_t, const H5O_token_t* token, char** token_str) {
  if (!token || !token_str) {
    TESSERA_VOL_ERROR(kBadArgument, "token to string: NULL argument");
    return -1;
  }
  // The caller releases the string with H5free_memory.
  auto* s = static_cast<char*>(H5allocate_memory(17, false));
  if (!s) {
    TESSERA_VOL_ERROR(kEngine, "token to string: out of memory");
    return -1;
  }
  std::snprintf(s, 17, "%016" PRIx64, token_to_oid(token));
  *token_str = s;
  return 0;
}

herr_t token_from_str(void*, H5I_type_t, const char* token_str, H5O_token_t* token) {
  if (!token_str || !token) {
    TESSERA_VOL_ERROR(kBadArgument, "token from string: NULL argument");
    return -1;
  }
  size_t n = std::strlen(token_str);
  uint64_t v = 0;
  bool ok = n > 0 && n <= 16;
  for (size_t i = 0; ok && i < n; ++i) {
    char c = token_str[i];
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) ok = false;
    else v = v << 4 | static_cast<uint64_t>(d);
  }
  if (!ok) {
    TESSERA_VOL_ERROR(kBadArgument, "token from string: '%s' is not a tessera token (16 hex digits)", token_str);
    return -1;
  }
  oid_to_token(v, token);
  return 0;
}

}  // namespace tessera_vol
