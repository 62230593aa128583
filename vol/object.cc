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
#include <functional>
#include <map>
#include <set>

#include <unistd.h>

#include "engine/file_io.h"
#include "vol/elink.h"
#include "vol/objects.h"
#include "vol/stored_type.h"
#include "vol/reference.h"
#include "vol/swmr.h"
#include "vol/region_store.h"
#include "vol/tessera_vol.h"

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
  ObjectRecord r = f.object(oid);
  std::memset(info, 0, sizeof *info);
  info->fileno = static_cast<unsigned long>(f.fileno());
  oid_to_token(oid, &info->token);
  info->type = otype(r.type);
  info->rc = static_cast<unsigned>(r.rc);
  object_times(f, oid, r, info);
  if (fields & H5O_INFO_NUM_ATTRS) info->num_attrs = f.attrs(oid).size();
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

// Deep copy of an object (H5Ocopy), within a file or between tessera files.  `copies`
// maps source to new object ids so that hard links inside the copied tree keep pointing
// at one shared copy.
struct Copier {
  SharedFile& src;
  SharedFile& dst;
  tessera::CatalogBatch& b;
  unsigned flags;
  std::map<uint64_t, uint64_t> copies;
  std::vector<uint64_t> new_arrays;  // removed again if the copy fails

  // A dataset's data: a new engine array with the same schema holding the same fragment
  // and heap files.  Those files are immutable once published, so they are hard-linked
  // (byte-copied where links are impossible); the source's buffered writes are flushed
  // into fragments first.
  uint64_t copy_array(uint64_t array_id) {
    // Every rank would link the same files at once: not in a parallel file (yet).
    if (src.parallel() || dst.parallel())
      fail_unsupported("copying a dataset in a parallel (MPI-IO) file");
    src.flush_arrays();
    auto a = src.array(array_id);
    uint64_t id = 0;
    check(dst.container().create_array(a->schema(), &id, /*durable=*/false));
    new_arrays.push_back(id);
    if (a->schema().compact) {
      // A compact array's cells are one record: copied through read and write, so the
      // copy is right whether or not the destination could make it compact too.  Never
      // written: nothing to copy (both read as the fill value).
      if (a->storage_bytes() == 0) return id;
      const tessera::Selection all = tessera::Selection::from_box(a->schema().domain());
      std::vector<uint8_t> cells(all.cells() * a->schema().elem_size);
      check(a->read(all, cells.data()));
      check(dst.array(id)->write(all, cells.data()));
      return id;
    }
    std::string from = src.container().array_dir(array_id), to = dst.container().array_dir(id);
    check(tessera::guard([&] {
      // Inline fragments (catalog records) are copied as records under the new array.
      const std::string sp = tessera::Container::array_prefix(array_id) + "frag/";
      const std::string tp = tessera::Container::array_prefix(id) + "frag/";
      tessera::CatalogBatch rb;
      for (auto& [key, value] : src.container().catalog().scan(sp)) rb.put(tp + key.substr(sp.size()), value);
      dst.container().catalog().commit(rb);
      for (const char* sub : {"frag", "heap"}) {
        std::string fd = tessera::join_path(from, sub), td = tessera::join_path(to, sub);
        if (!tessera::is_directory(fd)) continue;
        tessera::make_dir(to);
        tessera::make_dir(td);
        for (const std::string& name : tessera::list_dir(fd)) {
          if (name.empty() || name[0] == '.' || name.find(".tmp") != std::string::npos) continue;  // temp files
          std::string sp = tessera::join_path(fd, name), tp = tessera::join_path(td, name);
          if (::link(sp.c_str(), tp.c_str()) != 0) {
            auto bytes = tessera::read_file(sp);
            tessera::write_file_atomic(tp, bytes.data(), bytes.size());
          }
        }
        tessera::sync_dir(td);
      }
    }));
    return id;
  }

  // A copy made with a committed type references it too within one file.  Across files
  // it keeps the type's description only (native would copy the committed type along).
  void share_committed_type(uint64_t* type_oid) {
    if (!*type_oid) return;
    if (&src == &dst) dst.ref_object(b, *type_oid);
    else *type_oid = 0;
  }

  std::vector<std::function<void()>> pending;  // reference fixes (copy)

  // Runs the reference fixes; copying a referenced object may add more.
  void finish() {
    while (!pending.empty()) {
      auto todo = std::move(pending);
      pending.clear();
      for (auto& f : todo) f();
    }
  }

  // A referenced object's copy (H5O_COPY_EXPAND_REFERENCE_FLAG): the one this copy
  // already made, else a new one, linked in the destination's root group as native names
  // it ("~obj_pointed_by_<address>", tessera's address being the object id).  0 for a
  // target that no longer exists.
  uint64_t by_ref(uint64_t oid) {
    if (auto it = copies.find(oid); it != copies.end()) return it->second;
    if (!src.find_object(oid)) return 0;
    uint64_t to = copy(oid, 0);
    dst.add_link(b, kRootOid, "~obj_pointed_by_" + std::to_string(to), LinkRecord::hard(to));
    return to;
  }

  // References in copied values, as native: attributes always (null without the expand
  // flag), dataset values only across files (the same file keeps them).
  void fix_refs(const std::string& type_enc, uint8_t* data, size_t bytes) {
    StoredType st(type_enc, "copied value");
    TypeId t(st);
    const size_t es = H5Tget_size(t);
    if (es == 0 || bytes == 0) return;
    if (flags & H5O_COPY_EXPAND_REFERENCE_FLAG)
      copy_stored_refs(src, dst, b, t, data, bytes / es, [this](uint64_t oid) { return by_ref(oid); });
    else
      std::memset(data, 0, bytes);
  }

  static bool is_reference(const std::string& type_enc) {
    StoredType st(type_enc, "copied value");
    TypeId t(st);
    return H5Tget_class(t) == H5T_REFERENCE;
  }

  void fix_dataset_refs(const ObjectRecord& n) {
    auto a = dst.array(n.array_id);
    if (a->storage_bytes() == 0 && a->buffered_cells() == 0) return;  // never written: nothing to fix
    const tessera::Selection all = tessera::Selection::from_box(a->schema().domain());
    std::vector<uint8_t> cells(all.cells() * a->schema().elem_size);
    check(a->read(all, cells.data()));
    fix_refs(n.type_enc, cells.data(), cells.size());
    check(a->write(all, cells.data()));
  }

  uint64_t copy(uint64_t from, int depth) {
    if (depth > 1000) fail_arg("group hierarchy too deep to copy");
    if (auto it = copies.find(from); it != copies.end()) return it->second;
    ObjectRecord r = src.object(from);
    uint64_t to = dst.allocate_oid(b);
    copies[from] = to;
    ObjectRecord n = r;
    if (r.type == ObjType::kDataset) n.array_id = copy_array(r.array_id);
    n.rc = 0;  // add_link counts the links to the copy
    n.next_link_corder = 0;
    share_committed_type(&n.committed_type);
    dst.put_object(b, to, n);
    // References are fixed once the whole tree is copied (finish()), so that a reference
    // to an object of the tree points at its copy there, as native's post-copy does.
    if (r.type == ObjType::kDataset && &src != &dst && is_reference(r.type_enc))
      pending.push_back([this, n] { fix_dataset_refs(n); });
    if (!(flags & H5O_COPY_WITHOUT_ATTR_FLAG))
      for (auto& [name, a] : src.attrs(from)) {
        AttrRecord na = a;
        share_committed_type(&na.committed_type);
        dst.put_attr(b, to, name, na);
        if (is_reference(na.type_enc))
          pending.push_back([this, to, name = name, na]() mutable {
            fix_refs(na.type_enc, reinterpret_cast<uint8_t*>(na.data.data()), na.data.size());
            dst.put_attr(b, to, name, na);
          });
      }
    if (r.type != ObjType::kGroup) return to;
    if ((flags & H5O_COPY_SHALLOW_HIERARCHY_FLAG) && depth > 0) return to;
    for (auto& [name, l] : ordered_links(src, from, H5_INDEX_CRT_ORDER, H5_ITER_INC)) {  // keep creation order
      LinkRecord nl = l;
      if (l.type == H5L_TYPE_SOFT && (flags & H5O_COPY_EXPAND_SOFT_LINK_FLAG)) {
        if (auto t = src.try_resolve(from, l.soft_path)) {  // dangling soft links stay soft
          nl.type = H5L_TYPE_HARD;
          nl.soft_path.clear();
          nl.target = *t;
        }
      }
      if (nl.type == H5L_TYPE_HARD) nl.target = copy(nl.target, depth + 1);
      dst.add_link(b, to, name, nl);
    }
    return to;
  }
};

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
    Copier c{sf, df, b, flags, {}, {}, {}};
    try {
      uint64_t to = c.copy(from, 0);
      c.finish();
      df.add_link(b, parent, last, LinkRecord::hard(to, lcpl_id));
      df.commit(b);
    } catch (...) {
      for (uint64_t id : c.new_arrays) (void)df.container().remove_array(id);
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
